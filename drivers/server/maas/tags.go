package maas

import (
	"context"
	"net/http"
	"net/url"
	"sync"
)

// tagNodes adds the machine to the tag, or removes it (op "add" or
// "remove"), in one update_nodes request with every other machine being
// added to (removed from) the same tag at the time: while one request of
// a tag is in flight, the callers that come gather for the next, which
// the same caller sends when its own is answered (group commit). MAAS
// ignores IDs it does not know, so one machine cannot fail another's
// request; a failed request fails every caller in it (each retries).
func (d *Driver) tagNodes(ctx context.Context, tag, op, id string) error {
	return d.tagBatches.do(ctx, tag+"\x00"+op, id, func(ctx context.Context, ids []string) error {
		return d.c.call(ctx, http.MethodPost, "tags/"+url.PathEscape(tag)+"/", "update_nodes", url.Values{op: ids}, nil)
	})
}

// batcher gathers the items given for one key while a request of the
// key is in flight, and sends them together.
type batcher struct {
	mu      sync.Mutex
	waiting map[string]*batch // key → the batch being gathered
	sending map[string]bool   // key → a caller is sending its batches
}

type batch struct {
	items []string
	done  chan struct{}
	err   error
}

func (b *batcher) do(ctx context.Context, key, item string, send func(context.Context, []string) error) error {
	b.mu.Lock()
	if b.waiting == nil {
		b.waiting, b.sending = map[string]*batch{}, map[string]bool{}
	}
	bt := b.waiting[key]
	if bt == nil {
		bt = &batch{done: make(chan struct{})}
		b.waiting[key] = bt
	}
	bt.items = append(bt.items, item)
	lead := !b.sending[key]
	b.sending[key] = true
	b.mu.Unlock()
	if lead {
		b.sendAll(ctx, key, send)
	}
	select {
	case <-bt.done:
		return bt.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sendAll sends the key's batches until none is waiting.
func (b *batcher) sendAll(ctx context.Context, key string, send func(context.Context, []string) error) {
	for {
		b.mu.Lock()
		bt := b.waiting[key]
		delete(b.waiting, key)
		if bt == nil {
			delete(b.sending, key)
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		bt.err = send(ctx, bt.items)
		close(bt.done)
	}
}
