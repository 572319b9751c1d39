// Package batch sends together the requests that callers make at the same
// time (group commit): while one call for a key is in flight, the items
// that come for that key gather, and when it ends, the first of them
// sends them all in one call (up to Max items per call).
package batch

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Batcher batches items of type I answered by results of type R. The zero
// value is ready (no limit on the items of a call).
type Batcher[I, R any] struct {
	// Max is the most items one call carries (0: no limit).
	Max int
	// Wait, when set, is called when a caller starts waiting for another
	// caller's call; the function it returns when the wait ends (before
	// the caller sends a call itself). The MAAS driver lends the engine's
	// provisioner slot with it (drivers.Waiting).
	Wait func(ctx context.Context) (resume func())
	// Linger, when set, is how long a call waits for company before it
	// is sent (or until it holds Max items), once its key's last call
	// carried more than one item: callers that come together then share
	// fewer, fuller calls. A call for a key whose callers come alone is
	// sent at once, so they pay no latency.
	Linger time.Duration

	mu      sync.Mutex
	waiting map[string][]*call[I, R] // key → the calls gathered
	sending map[string]bool          // key → a caller sends its key's calls
	crowded map[string]bool          // key → its last call carried more than one item (Linger)
	full    map[string]chan struct{} // key → closed when a lingering call holds Max items
}

type call[I, R any] struct {
	item I
	res  R
	err  error
	done chan struct{} // closed with the result
	lead chan struct{} // closed when this caller is to send the next call
}

// Send is one call for items; it answers one result per item, in order
// (or none, for calls without results).
type Send[I, R any] func(ctx context.Context, items []I) ([]R, error)

// Do adds item to the next call for key and answers its result. A failed
// call fails every item in it.
func (b *Batcher[I, R]) Do(ctx context.Context, key string, item I, send Send[I, R]) (R, error) {
	c := &call[I, R]{item: item, done: make(chan struct{}), lead: make(chan struct{})}
	b.mu.Lock()
	if b.waiting == nil {
		b.waiting, b.sending = map[string][]*call[I, R]{}, map[string]bool{}
		b.crowded, b.full = map[string]bool{}, map[string]chan struct{}{}
	}
	b.waiting[key] = append(b.waiting[key], c)
	if full := b.full[key]; full != nil && len(b.waiting[key]) >= b.Max {
		close(full) // a lingering call has all it can carry
		delete(b.full, key)
	}
	leading := !b.sending[key]
	if leading {
		b.sending[key] = true
		close(c.lead)
	}
	b.mu.Unlock()
	if !leading {
		resume := func() {}
		if b.Wait != nil {
			resume = b.Wait(ctx)
		}
		select {
		case <-c.done:
			resume()
			return c.res, c.err
		case <-c.lead:
			resume()
		}
	}
	b.sendNext(ctx, key, send)
	<-c.done // it was in the call
	return c.res, c.err
}

// sendNext sends the key's gathered calls (the sender's among them), then
// hands the sending on to the first caller gathered meanwhile.
func (b *Batcher[I, R]) sendNext(ctx context.Context, key string, send Send[I, R]) {
	b.linger(key)
	b.mu.Lock()
	cs := b.waiting[key]
	n := len(cs)
	if b.Max > 0 {
		n = min(n, b.Max)
	}
	b.waiting[key] = cs[n:]
	b.mu.Unlock()
	cs = cs[:n]
	items := make([]I, n)
	for i, c := range cs {
		items[i] = c.item
	}
	res, err := send(ctx, items)
	if err == nil && len(res) != 0 && len(res) != n {
		err = fmt.Errorf("batch: %d results for %d items", len(res), n)
	}
	for i, c := range cs {
		c.err = err
		if err == nil && len(res) > 0 {
			c.res = res[i]
		}
		close(c.done)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Linger > 0 {
		b.crowded[key] = n > 1
	}
	if rest := b.waiting[key]; len(rest) > 0 {
		close(rest[0].lead)
		return
	}
	delete(b.waiting, key)
	delete(b.sending, key)
}

// linger waits, before a call for key is sent, for up to Linger or until
// Max items gathered, when the key's last call carried more than one.
func (b *Batcher[I, R]) linger(key string) {
	b.mu.Lock()
	if b.Linger <= 0 || !b.crowded[key] || (b.Max > 0 && len(b.waiting[key]) >= b.Max) {
		b.mu.Unlock()
		return
	}
	var full chan struct{}
	if b.Max > 0 {
		full = make(chan struct{})
		b.full[key] = full
	}
	b.mu.Unlock()
	t := time.NewTimer(b.Linger)
	defer t.Stop()
	select {
	case <-t.C:
	case <-full: // nil without Max: only the timer ends the wait
	}
	b.mu.Lock()
	if b.full[key] == full {
		delete(b.full, key)
	}
	b.mu.Unlock()
}
