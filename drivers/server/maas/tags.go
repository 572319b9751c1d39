package maas

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// Tagging is batched by a coalescing window. MAAS tags machines per tag
// (POST tags/{tag}/?op=update_nodes add=ID...), so a fleet's nodes that
// reach the platform step one after another would each cost a request per
// tag. The first machine to be added to (removed from) a tag opens a batch
// for that tag and op; the machines that come within tagWindow join it,
// and then it is sent in one request (at most tagBatchMax machines each).
// The next machine opens the next batch, whether or not that request is
// still under way. A node waits at most tagWindow before its request
// starts (its engine slot serves others meanwhile: drivers.Waiting), and
// ApplyPlatform sends a node's tags at once, so it waits once.
//
// MAAS ignores IDs it does not know, so one machine cannot fail another's
// request; a failed request fails every caller in it (each retries).

// defaultTagWindow is how long a tag batch gathers machines
// (SettingTagWindow).
const defaultTagWindow = 200 * time.Millisecond

// tagBatchMax is the most machines in one update_nodes request.
const tagBatchMax = 1000

// tagBatches are the tag batches gathering, by tag and op.
type tagBatches struct {
	mu   sync.Mutex
	open map[string]*tagBatch
}

// tagBatch is one tag's batch: the machines in it and, once sent, the
// outcome.
type tagBatch struct {
	ids  []string
	done chan struct{} // closed when sent
	err  error
}

// join adds id to the open batch of key, or opens one (lead: the caller
// sends it).
func (t *tagBatches) join(key, id string) (b *tagBatch, lead bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b := t.open[key]; b != nil && len(b.ids) < tagBatchMax {
		b.ids = append(b.ids, id)
		return b, false
	}
	if t.open == nil {
		t.open = map[string]*tagBatch{}
	}
	b = &tagBatch{ids: []string{id}, done: make(chan struct{})}
	t.open[key] = b
	return b, true
}

// close takes the batch out of gathering: later machines open another.
func (t *tagBatches) close(key string, b *tagBatch) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.open[key] == b {
		delete(t.open, key)
	}
	return b.ids
}

// tagNodes adds the machine to the tag, or removes it (op "add" or
// "remove"), in the update_nodes request of the tag's batch.
func (d *Driver) tagNodes(ctx context.Context, tag, op, id string) error {
	key := tag + "\x00" + op
	b, lead := d.tagging.join(key, id)
	resume := drivers.Waiting(ctx)
	if !lead {
		select {
		case <-b.done:
			resume()
			return b.err
		case <-ctx.Done():
			resume()
			return ctx.Err()
		}
	}
	timer := time.NewTimer(d.tagWindow)
	select {
	case <-timer.C:
	case <-ctx.Done(): // sent now: the others in it wait for it
		timer.Stop()
	}
	resume()
	ids := d.tagging.close(key, b)
	b.err = d.c.call(ctx, http.MethodPost, "tags/"+url.PathEscape(tag)+"/", "update_nodes", url.Values{op: ids}, nil)
	close(b.done)
	return b.err
}
