package introspection

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/statestore"
)

// How many designs the cache keeps: a deployment wave uses one or two
// revisions; decoding a 10,000-node design takes a while and holds tens of
// megabytes.
const (
	maxDesigns  = 4
	maxPointers = 16
	loadTimeout = time.Minute
)

// designCache keeps decoded design revisions by ID, and the IDs of the
// designs the engine passes in (by pointer: the engine keeps one decoded
// design per revision, so the content address is computed once).
type designCache struct {
	revs Revisions

	mu    sync.Mutex
	tick  uint64
	byID  map[string]*designEntry
	byPtr map[*design.Design]*ptrEntry
	parts map[*design.Design]*selfParts

	// evicted is told of each design that leaves the cache, with c.mu
	// held (the Server drops the token sessions that hold it, so that at
	// most maxDesigns designs stay in memory, as before sessions held one).
	evicted func(*design.Design)

	// last is the design get returned last, with its answer parts: the
	// first request of every token of a deployment wave asks for the same
	// one, and takes it without the lock (a revision's design never
	// changes; it may outlive its place in byID by one entry).
	last atomic.Pointer[lastDesign]
}

type lastDesign struct {
	id    string
	d     *design.Design
	parts *selfParts
}

// getWithParts is get, with the design's answer parts.
func (c *designCache) getWithParts(ctx context.Context, id string) (*design.Design, *selfParts, error) {
	if l := c.last.Load(); l != nil && l.id == id {
		return l.d, l.parts, nil
	}
	d, err := c.get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	p := c.selfParts(d)
	c.last.Store(&lastDesign{id: id, d: d, parts: p})
	return d, p, nil
}

type designEntry struct {
	ready chan struct{} // closed when d or err is set
	d     *design.Design
	err   error
	used  uint64
}

func newDesignCache(r Revisions) *designCache {
	return &designCache{revs: r, byID: map[string]*designEntry{}, byPtr: map[*design.Design]*ptrEntry{},
		parts: map[*design.Design]*selfParts{}}
}

// idOf returns the revision ID of a design the engine passed in, and
// checks once that the revision is stored (the API must be able to load
// it after a restart). Concurrent first calls for one design compute it
// once.
func (c *designCache) idOf(ctx context.Context, d *design.Design) (string, error) {
	c.mu.Lock()
	p := c.byPtr[d]
	if p == nil {
		if len(c.byPtr) >= maxPointers {
			for k, v := range c.byPtr {
				if isDone(v.ready) {
					delete(c.byPtr, k)
				}
			}
		}
		p = &ptrEntry{ready: make(chan struct{})}
		c.byPtr[d] = p
		c.mu.Unlock()
		// One computation for every waiter: a caller that goes away does not cancel it.
		ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
		p.id, p.err = c.identify(ictx, d)
		cancel()
		close(p.ready)
		if p.err != nil {
			c.mu.Lock()
			if c.byPtr[d] == p {
				delete(c.byPtr, d)
			}
			c.mu.Unlock()
		}
		return p.id, p.err
	}
	c.mu.Unlock()
	select {
	case <-p.ready:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return p.id, p.err
}

// ptrEntry is the revision ID of a design passed in, once known.
type ptrEntry struct {
	ready chan struct{}
	id    string
	err   error
}

func isDone(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// identify computes a design's content address, checks the revision is
// stored and caches the design under it.
func (c *designCache) identify(ctx context.Context, d *design.Design) (string, error) {
	_, id, err := d.Canonical()
	if err != nil {
		return "", drivers.NewError(drivers.Permanent, err)
	}
	c.mu.Lock()
	e, known := c.byID[id]
	known = known && !isFailed(e)
	c.mu.Unlock()
	if !known {
		if _, err := c.revs.Revision(ctx, id); err != nil {
			if errors.Is(err, statestore.ErrNotFound) {
				return "", drivers.Errorf(drivers.Permanent, "the design given for user data (revision %s) is not stored: the introspection API serves nodes from stored revisions only", id)
			}
			return "", drivers.NewError(drivers.Transient, fmt.Errorf("look up design revision %s: %w", id, err))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byID[id]; e == nil || isFailed(e) {
		e = &designEntry{ready: make(chan struct{}), d: d}
		close(e.ready)
		c.put(id, e)
	}
	return id, nil
}

// get returns the design of revision id, loading it once.
func (c *designCache) get(ctx context.Context, id string) (*design.Design, error) {
	c.mu.Lock()
	e := c.byID[id]
	if e != nil && !isFailed(e) {
		c.tick++
		e.used = c.tick
		c.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err != nil {
			return nil, e.err
		}
		return e.d, nil
	}
	e = &designEntry{ready: make(chan struct{})}
	c.put(id, e)
	c.mu.Unlock()
	// One load for every waiter: a caller that goes away does not cancel it.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
	defer cancel()
	e.d, e.err = c.load(lctx, id)
	close(e.ready)
	if e.err != nil {
		c.mu.Lock()
		if c.byID[id] == e {
			delete(c.byID, id)
		}
		c.mu.Unlock()
		return nil, e.err
	}
	return e.d, nil
}

func isFailed(e *designEntry) bool { return isDone(e.ready) && e.err != nil }

func (c *designCache) load(ctx context.Context, id string) (*design.Design, error) {
	r, err := c.revs.Revision(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("load design revision %s: %w", id, err)
	}
	d, err := design.DecodeShared(r.Design) // read only: shared with the engine's and the control API's copy
	if err != nil {
		return nil, fmt.Errorf("decode design revision %s: %w", id, err)
	}
	return d, nil
}

// put adds an entry, evicting the least recently used beyond maxDesigns.
// c.mu is held.
func (c *designCache) put(id string, e *designEntry) {
	c.tick++
	e.used = c.tick
	c.byID[id] = e
	for len(c.byID) > maxDesigns {
		var oldest string
		for k, v := range c.byID {
			if oldest == "" || v.used < c.byID[oldest].used {
				oldest = k
			}
		}
		if d := c.byID[oldest].d; d != nil {
			c.forgetDesign(d)
		}
		delete(c.byID, oldest)
	}
}

// forgetDesign drops what is kept of a design leaving the cache: its
// answer parts, the last-used shortcut and, through evicted, the sessions
// that hold it. c.mu is held.
func (c *designCache) forgetDesign(d *design.Design) {
	delete(c.parts, d)
	if l := c.last.Load(); l != nil && l.d == d {
		c.last.Store(nil)
	}
	if c.evicted != nil {
		c.evicted(d)
	}
}

// selfParts returns the parts of /v1/self answers design d shares between
// its nodes, encoded once (designs are immutable once decoded or passed
// in). At most maxPointers designs' parts are kept.
func (c *designCache) selfParts(d *design.Design) *selfParts {
	c.mu.Lock()
	p := c.parts[d]
	c.mu.Unlock()
	if p != nil {
		return p
	}
	p = newSelfParts(d)
	c.mu.Lock()
	defer c.mu.Unlock()
	if q := c.parts[d]; q != nil {
		return q
	}
	if len(c.parts) >= maxPointers {
		clear(c.parts)
	}
	c.parts[d] = p
	return p
}
