package orchestrator

import (
	"context"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// statusBatch is the most machines asked about in one Status call (a
// MAAS machines read with one id= per machine: 500 keeps the URL near
// 5 KB, under the 8 KB request line proxies commonly allow).
const statusBatch = 500

// poller watches the machines of waiting nodes with one batched Status
// call per interval for all of them, and wakes a node when its machine's
// state changes (or its wait runs out), so N waiting nodes cost one
// request per interval, not N.
type poller struct {
	e        *Engine
	interval time.Duration

	mu      sync.Mutex
	waiters map[*waiter]struct{}
	kick    chan struct{}
}

type waiter struct {
	ref   drivers.NodeRef
	last  string // state the node last saw
	until time.Time
	done  chan drivers.Machine // receives the machine as last seen (State "" when unseen)
}

func newPoller(e *Engine, interval time.Duration) *poller {
	return &poller{e: e, interval: interval, waiters: map[*waiter]struct{}{}, kick: make(chan struct{}, 1)}
}

// wait blocks until the machine's state differs from last, maxWait
// passes, or ctx ends. It returns the machine as the last poll saw it
// (State "" when none did).
func (p *poller) wait(ctx context.Context, ref drivers.NodeRef, last string, maxWait time.Duration) (drivers.Machine, error) {
	w := &waiter{ref: ref, last: last, until: time.Now().Add(maxWait), done: make(chan drivers.Machine, 1)}
	p.mu.Lock()
	p.waiters[w] = struct{}{}
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
	select {
	case m := <-w.done:
		return m, nil
	case <-ctx.Done():
		p.mu.Lock()
		delete(p.waiters, w)
		p.mu.Unlock()
		return drivers.Machine{}, ctx.Err()
	}
}

// run polls until ctx ends. A poll of many machines is a heavy read for
// the provisioner: the pause between polls is at least the last poll's
// duration, so polling never takes more than half of the provisioner's
// time, however many nodes wait. (Three times was measured: detection
// came so late that 1,000 nodes took 1.26x the ideal instead of 1.09x.)
func (p *poller) run(ctx context.Context) {
	pause := p.interval
	for {
		p.mu.Lock()
		idle := len(p.waiters) == 0
		p.mu.Unlock()
		if idle { // nothing to watch: sleep until a node waits
			select {
			case <-ctx.Done():
				return
			case <-p.kick:
			}
		}
		// Let the nodes that start waiting now gather for one pause.
		if !sleep(ctx, pause) {
			return
		}
		start := time.Now()
		p.pollOnce(ctx)
		pause = max(p.interval, time.Since(start))
	}
}

func (p *poller) pollOnce(ctx context.Context) {
	p.mu.Lock()
	ws := make([]*waiter, 0, len(p.waiters))
	for w := range p.waiters {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	if len(ws) == 0 {
		return
	}
	now := time.Now()
	for start := 0; start < len(ws); start += statusBatch {
		chunk := ws[start:min(start+statusBatch, len(ws))]
		refs := make([]drivers.NodeRef, len(chunk))
		for i, w := range chunk {
			refs[i] = w.ref
		}
		ms, err := p.e.pollStatus(ctx, refs)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.e.log.Warn().Err(err).Int("machines", len(refs)).Msg("batched status poll failed; waiting nodes fall back to their own timers")
		}
		for i, w := range chunk {
			var m drivers.Machine
			if err == nil && i < len(ms) {
				m = ms[i]
			}
			switch {
			case m.State != "" && m.State != w.last:
				p.finish(w, m)
			case now.After(w.until):
				p.finish(w, m)
			}
		}
	}
}

func (p *poller) finish(w *waiter, m drivers.Machine) {
	p.mu.Lock()
	_, ok := p.waiters[w]
	delete(p.waiters, w)
	p.mu.Unlock()
	if ok {
		w.done <- m
	}
}
