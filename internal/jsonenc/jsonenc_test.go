package jsonenc

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func wantMarshal(t *testing.T, s string) {
	t.Helper()
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
		t.Fatalf("AppendString(%q) = %s, want %s (as json.Marshal)", s, got[1:], want)
	}
}

// TestAppendString checks AppendString against json.Marshal: every escape
// on its own, then random strings made of them and of random bytes.
func TestAppendString(t *testing.T) {
	pieces := []string{"a", "é", "\u2028", "\u2029", "<", ">", "&", "\"", "\\", "\x00", "\x1f", "\x7f", "\b", "\f", "\n", "\r", "\t",
		"\xff", "\xe2\x80", "\xed\xa0\x80", "😀", "\U0010ffff", " ", "/", ""}
	for _, p := range pieces {
		wantMarshal(t, p)
		wantMarshal(t, "ab"+p+"cd")
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	for i := range 20000 {
		var b strings.Builder
		for range rnd.IntN(10) {
			if i%2 == 0 {
				b.WriteString(pieces[rnd.IntN(len(pieces))])
			} else {
				b.WriteByte(byte(rnd.IntN(256)))
			}
		}
		wantMarshal(t, b.String())
	}
	if out := AppendString(nil, "\xff\xfe"); !utf8.Valid(out) {
		t.Errorf("invalid UTF-8 in %q", out)
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("a<b>\u2028\xff\"\\\n")
	f.Fuzz(func(t *testing.T, s string) { wantMarshal(t, s) })
}
