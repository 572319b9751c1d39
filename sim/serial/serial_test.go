package serial

import (
	"bytes"
	"testing"
)

func TestAttachedConsolesSeeOutputFromNowOn(t *testing.T) {
	p := New()
	p.Printf("before anyone listens")
	a, detachA := p.Attach()
	b, detachB := p.Attach()
	p.Printf("POST %d", 1)
	for _, ch := range []<-chan []byte{a, b} {
		if got := <-ch; !bytes.Equal(got, []byte("POST 1\r\n")) {
			t.Fatalf("got %q, want the line written after attaching", got)
		}
	}
	detachA()
	detachA() // twice is harmless
	if _, ok := <-a; ok {
		t.Fatal("a detached console's channel stays open")
	}
	p.Printf("only b")
	if got := <-b; string(got) != "only b\r\n" {
		t.Fatalf("b got %q", got)
	}
	detachB()
	if w, d := p.Stats(); w != uint64(len("before anyone listens\r\nPOST 1\r\nonly b\r\n")) || d != 0 {
		t.Fatalf("stats written=%d dropped=%d", w, d)
	}
}

func TestSlowConsoleLosesOutputWithoutBlockingTheMachine(t *testing.T) {
	p := New()
	_, detach := p.Attach()
	defer detach()
	for range readerBuffer + 10 {
		p.Printf("x")
	}
	if _, d := p.Stats(); d != 10 {
		t.Fatalf("dropped %d chunks, want 10", d)
	}
}

func TestTypedCharactersReachTheMachine(t *testing.T) {
	p := New()
	p.Type([]byte("lost")) // no input handler: discarded
	var got []byte
	p.OnInput(func(b []byte) { got = append(got, b...) })
	in := []byte("root\r")
	p.Type(in)
	in[0] = 'X' // the port copied it
	if string(got) != "root\r" {
		t.Fatalf("machine got %q", got)
	}
}
