// Package backoff paces tries: a sleep that ends with its context, and a
// delay that doubles between a floor and a ceiling while tries fail in a
// row.
package backoff

import (
	"context"
	"time"
)

// Sleep waits d; ctx's error when ctx ends first (at once when it has).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Doubling waits Min first, then twice the last wait, up to Max; Reset
// starts again from Min. The zero value waits nothing: set Min and Max.
type Doubling struct {
	Min, Max time.Duration
	last     time.Duration
}

// Next is the wait Wait would sleep now, and makes it the last.
func (b *Doubling) Next() time.Duration {
	b.last = min(max(2*b.last, b.Min), b.Max)
	return b.last
}

// Wait sleeps the next wait; ctx's error when ctx ends first.
func (b *Doubling) Wait(ctx context.Context) error { return Sleep(ctx, b.Next()) }

// Reset makes the next wait Min again (a try worked).
func (b *Doubling) Reset() { b.last = 0 }
