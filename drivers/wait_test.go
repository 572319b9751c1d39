package drivers

import (
	"context"
	"testing"
)

func TestWaiting(t *testing.T) {
	Waiting(context.Background())() // no-op without a lender
	lent, back := 0, 0
	ctx := WithWaiting(context.Background(), func() func() { lent++; return func() { back++ } })
	resume := Waiting(ctx)
	if lent != 1 || back != 0 {
		t.Fatalf("lent %d, back %d", lent, back)
	}
	resume()
	if back != 1 {
		t.Errorf("resume did not take the slot back")
	}
}
