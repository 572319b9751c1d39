package drivers

import (
	"context"
	"testing"
)

// TestSessionScope: a kept session is taken once; keeping another under
// the same key closes the first; the scope's end closes what is kept and
// keeps nothing after; a context without a scope keeps nothing.
func TestSessionScope(t *testing.T) {
	if KeepSession(context.Background(), "k", 1, func() { t.Error("closed a session it did not keep") }) {
		t.Fatal("kept a session without a scope")
	}
	if TakeSession(context.Background(), "k") != nil {
		t.Fatal("took a session without a scope")
	}
	ctx, end := WithSessionScope(context.Background())
	closed := map[string]int{}
	keep := func(key, v string) bool { return KeepSession(ctx, key, v, func() { closed[v]++ }) }
	if !keep("a", "a1") || !keep("b", "b1") {
		t.Fatal("a scope did not keep")
	}
	if v := TakeSession(ctx, "a"); v != "a1" {
		t.Fatalf("took %v, want a1", v)
	}
	if v := TakeSession(ctx, "a"); v != nil {
		t.Fatalf("took %v twice", v)
	}
	keep("a", "a2")
	keep("a", "a3") // replaces a2, which closes
	if closed["a2"] != 1 || closed["a1"] != 0 {
		t.Fatalf("closed %v; want a2 once (a1 was taken: its taker closes it)", closed)
	}
	end()
	if closed["a3"] != 1 || closed["b1"] != 1 {
		t.Fatalf("end closed %v; want a3 and b1", closed)
	}
	if keep("c", "c1") {
		t.Fatal("kept a session after the scope ended")
	}
	end() // a second end is harmless
	if closed["c1"] != 0 || closed["a3"] != 1 {
		t.Fatalf("closed %v after the second end", closed)
	}
}
