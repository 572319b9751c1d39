package orchestrator

import (
	"context"
	"math"
	"sync"
)

// roundGate bounds how many nodes run a stage's handler at once (#39).
// A node's handler goes deep (driver calls, the provisioner's and the
// BMCs' limits, JSON decoding), and a goroutine's stack keeps what it
// grew to; when thousands of nodes wait for the limits inside their
// handlers, their stacks are most of the engine's memory. A node that
// finds the gate full parks (park.go) in a FIFO queue, holding no
// goroutine; a node leaving hands its place to the first queued.
//
// The gate is wider than the driver limits (Limits.Rounds), so that the
// limits, not the gate, say how many calls run at once, and calls that
// gather the nodes asking at the same time (a batch of tag updates, a
// batched status read) still gather many.
type roundGate struct {
	mu    sync.Mutex
	free  int
	width int
	queue []*gateWaiter
}

type gateWaiter struct {
	r *nodeRun
	w *wakeup
}

func newRoundGate(width int) *roundGate { return &roundGate{free: width, width: width} }

// room is how many more nodes may come before half the gate's width
// queue: the free places less the nodes queued, plus half the width
// (negative when more queue). The poll wakes parked nodes while there is
// room (poller.go): half a width queued keeps the places that free up
// between two polls taken (the poll wakes nodes once a poll interval,
// the gate hands places on at once), and the last of them waits about
// a second. Unbounded without a gate.
func (g *roundGate) room() int {
	if g == nil {
		return math.MaxInt
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.free - len(g.queue) + g.width/2
}

// enter takes a place; false when the gate is full (the node then parks
// with parkGate).
func (g *roundGate) enter() bool {
	if g == nil { // an engine not built by New (tests of its parts)
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.free > 0 && len(g.queue) == 0 {
		g.free--
		return true
	}
	return false
}

// leave gives the place back: to the first queued node, whose wake-up
// runs it with the place taken, else to the gate.
func (g *roundGate) leave() {
	if g == nil {
		return
	}
	g.mu.Lock()
	if len(g.queue) == 0 {
		g.free++
		g.mu.Unlock()
		return
	}
	q := g.queue[0]
	g.queue[0] = nil
	g.queue = g.queue[1:]
	q.r.gated = true
	g.mu.Unlock()
	q.w.fire()
}

// wait queues a parked node for a place; when the gate has one free
// (the last holder left while the node decided to park), it takes it
// and fires the wake-up at once.
func (g *roundGate) wait(ctx context.Context, r *nodeRun, w *wakeup) {
	q := &gateWaiter{r: r, w: w}
	g.mu.Lock()
	if g.free > 0 && len(g.queue) == 0 {
		g.free--
		r.gated = true
		g.mu.Unlock()
		w.firedLocked()
		return
	}
	g.queue = append(g.queue, q)
	g.mu.Unlock()
	w.stops = append(w.stops, context.AfterFunc(ctx, func() {
		if g.remove(q) {
			w.fire()
		}
	}))
}

// remove takes a node out of the queue; false when it was handed a
// place already.
func (g *roundGate) remove(q *gateWaiter) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, x := range g.queue {
		if x == q {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			return true
		}
	}
	return false
}
