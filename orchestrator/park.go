package orchestrator

import (
	"context"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// A node that waits holds no goroutine (#39). Its drive ends the round
// that waits with a parking (what it waits for), its goroutine ends, and
// the first of the wait's wake-ups (the batched poll seeing its machine
// change, its timer, a report of the node, the task's context ending)
// runs its next rounds in a new goroutine. So at 10,000 nodes, the
// thousands that wait on MAAS or on a timer hold a few hundred bytes of
// state each instead of a goroutine's stack (16 KiB or more: the deep
// driver calls of the rounds before grow the stacks, and the garbage
// collector paces the heap on them).

// parkKind is what a waiting node waits for.
type parkKind uint8

const (
	parkNone  parkKind = iota
	parkPoll           // the batched poll: its machine's state changes, or MaxWait passes
	parkTimer          // a timer of d, or a report of the node (Engine.wake)
	parkSleep          // d, until the record's NextAt (a retry's backoff)
	parkGate           // a place at the round gate (gate.go)
)

// parking is the wait a round ended with.
type parking struct {
	kind parkKind
	d    time.Duration
}

// loop runs the node's rounds until its drive is over or it waits: a
// waiting node's goroutine ends here, and its wake-up calls loop again.
//
// A node keeps its place at the round gate from round to round until it
// waits: the rounds of a stage follow each other (the stage's reads are
// still fresh in the driver's cache at its next step) instead of each
// going to the back of the gate's queue behind thousands of nodes, and a
// node started is finished before more are let in.
func (r *nodeRun) loop() {
	ctx := r.run.ctx
	for r.round(ctx) {
		if r.pend.kind != parkNone {
			r.leaveGate()
			r.park(ctx)
			return
		}
	}
	r.leaveGate()
	r.over()
}

// enterGate takes the node's place at the round gate for its stage's
// handler; false when it must wait for one (the round then parks).
func (r *nodeRun) enterGate() bool {
	if r.gated {
		return true // handed one while it waited
	}
	if !r.e.gate.enter() {
		r.wait.end() // the gate is Slipway's own wait
		r.pend = parking{kind: parkGate}
		return false
	}
	r.gated = true
	return true
}

// leaveGate gives the round's place back.
func (r *nodeRun) leaveGate() {
	if r.gated {
		r.gated = false
		r.e.gate.leave()
	}
}

// over tells the task that the node's drive ended.
func (r *nodeRun) over() {
	if r.exit != nil {
		r.exit()
	}
}

// park arms the wake-ups of the pending wait.
func (r *nodeRun) park(ctx context.Context) {
	p := r.pend
	r.pend = parking{}
	w := &wakeup{}
	w.mu.Lock() // a wake-up that fires while the others are armed waits for them
	defer w.mu.Unlock()
	switch p.kind {
	case parkPoll:
		r.parkPoll(ctx, w)
		return
	case parkGate: // a round from the top, with the place taken
		w.next = r.loop
		r.e.gate.wait(ctx, r, w)
		return
	case parkSleep: // a round from the top
		w.next = r.loop
	case parkTimer:
		w.next = r.loop                       // the next call's answer ends the wait (stagewait.go)
		if r.e.parkWake(r.rec.Name, w.fire) { // a report came before the wait began
			w.firedLocked()
			return
		}
		w.stops = append(w.stops, func() bool { r.e.unparkWake(r.rec.Name); return true })
	}
	w.stops = append(w.stops, time.AfterFunc(p.d, w.fire).Stop, context.AfterFunc(ctx, w.fire))
}

// parkPoll waits on the batched poll.
func (r *nodeRun) parkPoll(ctx context.Context, w *wakeup) {
	var seen drivers.Machine
	w.next = func() {
		if seen.State != "" {
			r.rec.Observed = seen.State
			r.rec.ObservedPower = orDefault(string(seen.Power), r.rec.ObservedPower)
		}
		r.loop()
	}
	pw := r.e.poll.addFunc(siteOfNode(r.d, r.n), r.ref(), r.rec.Observed, r.e.cfg.MaxWait, r.stageDeadline(), func(m drivers.Machine) {
		seen = m // only one of the poll and the context gets the waiter
		w.fire()
	})
	w.stops = append(w.stops, context.AfterFunc(ctx, func() {
		if r.e.poll.remove(pw) {
			w.fire()
		}
	}))
}

// wakeup is a parked node's way back: the first of its wake-ups to fire
// stops the others and runs next in a goroutine of its own.
type wakeup struct {
	mu    sync.Mutex
	fired bool
	stops []func() bool
	next  func()
}

func (w *wakeup) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.fired {
		w.firedLocked()
	}
}

func (w *wakeup) firedLocked() {
	w.fired = true
	for _, stop := range w.stops {
		stop()
	}
	w.stops = nil
	go w.next()
}

// parkWake makes a report of the node (wake) call fn, once; true instead
// when a wake-up is already pending (the node then does not wait).
func (e *Engine) parkWake(node string, fn func()) (pending bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ch := e.wakes[node]; ch != nil {
		select {
		case <-ch:
			return true
		default:
		}
	}
	if e.parked == nil {
		e.parked = map[string]func(){}
	}
	e.parked[node] = fn
	return false
}

func (e *Engine) unparkWake(node string) {
	e.mu.Lock()
	delete(e.parked, node)
	e.mu.Unlock()
}
