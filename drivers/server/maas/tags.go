package maas

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"strings"
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
// ApplyPlatform puts a node's tags in their batches at once (tagAll), so
// it waits once.
//
// The window is adaptive: it waits only for nodes that can still join.
// A node is on its way from the start of its ApplyNetworking until its
// ApplyPlatform tags it (or ends); a batch is sent when its window ends
// or as soon as no node is on its way, and at once when none is (a lone
// node, or the last of a small fleet, does not wait). Entries older than
// onWayTTL (a node that stopped mid-configure) are dropped, so a
// stopped node holds windows to their full length for that long at most.
//
// MAAS ignores IDs it does not know, so one machine cannot fail another's
// request; a failed request fails every caller in it (each retries).

// defaultTagWindow is how long a tag batch gathers machines
// (SettingTagWindow).
const defaultTagWindow = 200 * time.Millisecond

// tagBatchMax is the most machines in one update_nodes request.
const tagBatchMax = 1000

// onWayTTL is how long a node counts as on its way to its tags.
const onWayTTL = 5 * time.Minute

// tagBatches are the tag batches gathering, by tag and op, and the
// machines on their way to them.
type tagBatches struct {
	mu    sync.Mutex
	open  map[string]*tagBatch
	onWay map[string]time.Time // by machine ID: since when (one per node: bounded by the fleet)
	quiet chan struct{}        // closed when onWay empties; nil while it is empty
	swept time.Time            // onWay's last sweep of expired entries
}

// coming notes that the machine is on its way to its tags (its
// configuration began).
func (t *tagBatches) coming(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.onWay == nil {
		t.onWay = map[string]time.Time{}
	}
	t.onWay[id] = time.Now()
	if t.quiet == nil {
		t.quiet = make(chan struct{})
	}
}

// arrived notes that the machine is no longer on its way (it is tagging,
// or its platform step ended).
func (t *tagBatches) arrived(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.onWay, id)
	t.quietIfEmpty()
}

func (t *tagBatches) quietIfEmpty() {
	if len(t.onWay) == 0 && t.quiet != nil {
		close(t.quiet)
		t.quiet = nil
	}
}

// company answers a channel closed when no machine is on its way any
// more; nil when none is now (a batch need not wait).
func (t *tagBatches) company() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now := time.Now(); now.Sub(t.swept) > onWayTTL/4 {
		t.swept = now
		for id, since := range t.onWay {
			if now.Sub(since) > onWayTTL {
				delete(t.onWay, id)
			}
		}
		t.quietIfEmpty()
	}
	if t.quiet == nil {
		return nil
	}
	return t.quiet
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

// tagOp is a machine's addition to a tag, or removal (op "add" or
// "remove").
type tagOp struct{ tag, op string }

// tagNodes adds the machine to the tag, or removes it, in the
// update_nodes request of the tag's batch.
func (d *Driver) tagNodes(ctx context.Context, tag, op, id string) error {
	return d.tagAll(ctx, id, []tagOp{{tag, op}})
}

// tagAll puts the machine in the batches of all of ops at once, so it
// waits for one window whatever their number. The batches it opened it
// sends when the window ends (gather); then it waits for those others
// opened. A wait lends the engine's slot (drivers.Waiting), once at a
// time.
func (d *Driver) tagAll(ctx context.Context, id string, ops []tagOp) error {
	d.tagging.arrived(id)
	var led, joined []*tagBatch
	var keys []string
	for _, o := range ops {
		key := o.tag + "\x00" + o.op
		if b, lead := d.tagging.join(key, id); lead {
			led, keys = append(led, b), append(keys, key)
		} else {
			joined = append(joined, b)
		}
	}
	if len(led) > 0 {
		d.gather(ctx)
	}
	var first error
	for i, b := range led {
		tag, op, _ := strings.Cut(keys[i], "\x00")
		ids := d.tagging.close(keys[i], b)
		b.err = d.c.call(ctx, http.MethodPost, "tags/"+url.PathEscape(tag)+"/", "update_nodes", url.Values{op: ids}, nil)
		close(b.done)
		first = cmp.Or(first, b.err)
	}
	if len(joined) == 0 {
		return first
	}
	resume := drivers.Waiting(ctx)
	defer resume()
	for _, b := range joined {
		select {
		case <-b.done:
			first = cmp.Or(first, b.err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return first
}

// gather is a batch's window: it ends after tagWindow, when no machine
// is on its way to its tags any more (at once when none is), or when
// ctx ends (the batch is sent then: the others in it wait for it).
func (d *Driver) gather(ctx context.Context) {
	others := d.tagging.company()
	if others == nil {
		return
	}
	resume := drivers.Waiting(ctx)
	defer resume()
	timer := time.NewTimer(d.tagWindow)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-others:
	case <-ctx.Done():
	}
}

// madeTags are the tags this driver created (or found created by another
// caller) lately, by name (a kernel tag's with its kernel_opts): the
// nodes that read the tag list before it was created (the list is cached
// for siteTTL) do not create it again.
type madeTags struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (m *madeTags) note(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.at == nil {
		m.at = map[string]time.Time{}
	}
	now := time.Now()
	for k, t := range m.at { // a site has a few dozen tags: bounded
		if now.Sub(t) > defaultSiteTTL {
			delete(m.at, k)
		}
	}
	m.at[key] = now
}

func (m *madeTags) recent(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.at[key]
	return ok && time.Since(t) <= defaultSiteTTL
}
