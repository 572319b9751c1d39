package orchestrator

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
)

// statusBatch is the most machines asked about in one Status call (a
// MAAS machines read with one id= per machine: 500 keeps the URL near
// 5 KB, under the 8 KB request line proxies commonly allow).
const statusBatch = 500

// askEveryPollFrom is how many waiting machines of a Site make every poll
// ask its changes, quiet or not (toRead); a variable for the tests.
var askEveryPollFrom = statusBatch

// defaultFullPoll is how often (scaled by the time scale) every waiting
// machine is read whatever the changes said: the safety net for a change
// the provisioner's log did not show (Config.FullPollInterval). The MAAS
// driver reads its log again from 1,000 events behind its cursor, so a
// change is missed only when its event comes more than 1,000 events
// late; a full read of 10,000 waiting machines is 20 listings of 500
// whole machines, and once a minute it was most of what the poll read
// (22 machines read per node in a 10,000-node rollout at time scale
// 0.2, 16 of them by the full reads).
const defaultFullPoll = 5 * time.Minute

// poller watches the machines of waiting nodes and wakes a node when its
// machine's state changes (or its wait runs out). Each interval it first
// asks each Site's driver what changed since the last poll
// (drivers.ServerChanges: MAAS's event log), then reads with one batched
// Status call only the waiting machines that changed, that were never
// read since their node began to wait, or whose wait ran out; every
// waiting machine when the driver cannot tell (Reset, an error, a driver
// without changes) or when the periodic full read is due. A machine whose
// newest change was to the state its node last saw (the driver says so:
// Changes.States), as its own deploy's, is not read either. So N waiting
// nodes cost one request per interval, and machines that did not change
// are not read.
type poller struct {
	e        *Engine
	interval time.Duration
	fullPoll time.Duration // the safety net's period

	mu      sync.Mutex
	waiters map[*waiter]struct{}
	kick    chan struct{}

	// The poll loop's own (one poll at a time):
	cursors  map[string]string // by Site: where its changes were read to
	quiet    map[string]bool   // by Site: its last changes read found none (the next poll does not ask)
	lastFull time.Time         // the last full read
	polls    uint64            // polls so far
}

type waiter struct {
	site  string // the node's Site (its changes are read there)
	ref   drivers.NodeRef
	last  string // state the node last saw
	until time.Time
	// maxWait is how long the wait runs before the node looks again;
	// deadline (zero: none) is when its stage times out. While the
	// Site's changes are read, a wait that runs out on a machine they
	// do not name is renewed instead (renew), up to the deadline.
	maxWait  time.Duration
	deadline time.Time
	// expired: the wait ends at the next poll whatever the machine's
	// state (expire; set outside the poll loop).
	expired atomic.Bool
	// tracked: its Site's driver tells what changed (the poll loop's):
	// a wait that runs out on a machine read unchanged is renewed.
	tracked bool
	done    chan drivers.Machine  // receives the machine as last seen (State "" when unseen)
	fn      func(drivers.Machine) // instead of done: called with it (a parked node, park.go); must not block
	read    bool                  // a poll read it since it began to wait (the poll loop's)
	// due: the poll that first had it to read and did not (its machine
	// changed, or a full read), 0 when none: it is read in a later poll
	// before those due after it (the poll loop's; admission below).
	due uint64
}

func newPoller(e *Engine, interval time.Duration) *poller {
	full := e.cfg.FullPollInterval
	if full <= 0 {
		full = e.scaled(defaultFullPoll)
	}
	return &poller{e: e, interval: interval, fullPoll: max(full, interval), waiters: map[*waiter]struct{}{},
		kick: make(chan struct{}, 1), cursors: map[string]string{}, quiet: map[string]bool{}, lastFull: time.Now()}
}

// siteOfNode is the Site of a node of design d ("" without them).
func siteOfNode(d *design.Design, n *design.Node) string {
	if d == nil || n == nil {
		return ""
	}
	return d.SiteNameOf(n)
}

// add is addFunc with the machine sent on the waiter's done instead.
func (p *poller) add(site string, ref drivers.NodeRef, last string, maxWait time.Duration) *waiter {
	return p.addWaiter(&waiter{site: site, ref: ref, last: last, until: time.Now().Add(maxWait), maxWait: maxWait, done: make(chan drivers.Machine, 1)})
}

// addFunc adds a wait that ends when the machine's state differs from
// last or maxWait passes (see renew): the poll then calls fn with the
// machine as it saw it (State "" when it did not read it). remove ends
// the wait otherwise (the node's context ended). site is the node's Site
// ("": the driver's only Site, else the machine is read every poll);
// deadline is when the node's stage times out (zero: never).
func (p *poller) addFunc(site string, ref drivers.NodeRef, last string, maxWait time.Duration, deadline time.Time, fn func(drivers.Machine)) *waiter {
	return p.addWaiter(&waiter{site: site, ref: ref, last: last, until: time.Now().Add(maxWait), maxWait: maxWait, deadline: deadline, fn: fn})
}

// expire ends node's waits at the next poll, its machine read or not: a
// node frozen while it waits (MarkManual) stops then, not when its
// machine next changes.
func (p *poller) expire(node string) {
	p.mu.Lock()
	for w := range p.waiters {
		if w.ref.Name == node {
			w.expired.Store(true)
		}
	}
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// remove ends a wait the poll did not end; false when it did.
func (p *poller) remove(w *waiter) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.waiters[w]
	delete(p.waiters, w)
	return ok
}

func (p *poller) addWaiter(w *waiter) *waiter {
	p.mu.Lock()
	p.waiters[w] = struct{}{}
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
	return w
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

// pollOnce reads what each Site's waiting machines need and wakes the
// nodes whose machine changed or whose wait ran out.
func (p *poller) pollOnce(ctx context.Context) {
	p.mu.Lock()
	bySite := map[string][]*waiter{}
	for w := range p.waiters {
		bySite[w.site] = append(bySite[w.site], w)
	}
	p.mu.Unlock()
	if len(bySite) == 0 {
		return
	}
	now := time.Now()
	full := now.Sub(p.lastFull) >= p.fullPoll
	p.polls++
	room := p.e.gate.room()
	sites := slices.Sorted(maps.Keys(bySite))
	first := int(p.polls % uint64(len(sites))) // the Sites take turns at the gate's room
	for i := range sites {
		site := sites[(first+i)%len(sites)]
		read := p.toRead(ctx, site, bySite[site], full, now)
		if ctx.Err() != nil || !p.readAdmitted(ctx, read, &room, now) {
			return
		}
	}
	if full {
		p.lastFull = now
	}
}

// toRead is the waiters of a Site whose machines this poll reads. The
// Site's changes are read first, before any of its machines, so that a
// change after this read is in the next one.
func (p *poller) toRead(ctx context.Context, site string, ws []*waiter, full bool, now time.Time) []*waiter {
	ch, ok := drivers.ChangesAt(ctx, p.e.cfg.Drivers.Server, site)
	if !ok {
		return ws // the driver cannot tell: every machine, every poll
	}
	for _, w := range ws {
		w.tracked = true
	}
	changed, all := p.askChanges(ctx, site, len(ws), ch)
	if all || full {
		return ws
	}
	out := make([]*waiter, 0, len(changed))
	for _, w := range ws {
		to, c := changed[w.ref.MachineID]
		if c && to != "" && to == w.last && w.due == 0 {
			// Its newest change was to the state the node saw (its own
			// action's, as a deploy's Allocated and Deploying): no read.
			w.read, c = true, false
		}
		if !c && w.read && w.due == 0 && now.After(w.until) {
			w.renew(now)
		}
		if c || !w.read || w.due != 0 || w.over(now) {
			out = append(out, w)
		}
	}
	return out
}

// renew starts the wait of a node whose wait ran out afresh, up to its
// stage's deadline, when the poll knows its machine did not change: it
// was read since the wait began and the Site's changes since that read
// do not name it, or it was just read in the state the node saw. Woken,
// the node would only look again, its stage calling the driver to find
// the state the poll has (for a deploying node: its user data rendered,
// a Deploy call answered from the machine's read). The changes' own net
// (the periodic full read) still reads it. At the deadline the node is
// woken, read, to time its stage out.
//
// Only a machine in a phase of its own (busyStates: commissioning,
// testing, deploying, erasing) is renewed: there the stage waits for the
// provisioner, and a look finds what the poll found. A node waiting on a
// settled state (Failed commissioning, Ready, New) waits because its
// stage's last call did not act (a stale read, a conflict); woken, its
// stage calls again and acts, as it did before renewals.
func (w *waiter) renew(now time.Time) {
	if w.maxWait <= 0 || w.expired.Load() || (!w.deadline.IsZero() && !now.Before(w.deadline)) || !slices.Contains(busyStates, w.last) {
		return
	}
	w.until = now.Add(w.maxWait)
	if !w.deadline.IsZero() && w.deadline.Before(w.until) {
		w.until = w.deadline
	}
}

// Admission. A parked node that a poll wakes needs a place in the round
// gate (gate.go); when the gate is full it queues there, and in a large
// rollout thousands queue at once when their machines finish
// commissioning together. The state the poll read of each is then tens
// of seconds old when its node runs, and the read cache, which keeps a
// read for seconds, cannot spare the node's next read of its machine
// (the inventory's, which the status read answers when recent:
// drivers/server/maas/status_read.go). So a poll reads the parked nodes'
// machines only while the gate has room for the nodes it wakes (up to
// half its width queued: roundGate.room): those it cannot read now are
// due, and read first in later polls. A node
// waiting in its handler (it holds its place) is always read. Nodes
// wait for the gate as before, only in MAAS's state rather than in the
// gate's queue; their machines are read once either way.

// readAdmitted reads the waiters' machines: those in their handlers
// all; the parked ones due first, a batch at a time while room is left
// (each node woken takes one; a batch may wake up to statusBatch more
// than room: they queue for moments); the parked ones left unread
// become due. False when ctx ended.
func (p *poller) readAdmitted(ctx context.Context, ws []*waiter, room *int, now time.Time) bool {
	var held, parked []*waiter
	for _, w := range ws {
		if w.fn == nil {
			held = append(held, w)
		} else {
			parked = append(parked, w)
		}
	}
	if _, ok := p.readAndWake(ctx, held, now); !ok {
		return false
	}
	slices.SortStableFunc(parked, func(a, b *waiter) int { return cmp.Compare(dueRank(a), dueRank(b)) })
	for len(parked) > 0 && *room > 0 {
		n := min(len(parked), statusBatch)
		woke, ok := p.readAndWake(ctx, parked[:n], now)
		if !ok {
			return false
		}
		*room -= woke
		parked = parked[n:]
	}
	for _, w := range parked {
		if w.due == 0 {
			w.due = p.polls
		}
	}
	return true
}

// dueRank orders waiters by the poll they were due since (not due:
// last).
func dueRank(w *waiter) uint64 {
	if w.due == 0 {
		return math.MaxUint64
	}
	return w.due
}

// askChanges is changes, unless the Site's last changes read found none
// and fewer than askEveryPollFrom of its machines wait (waiting): then
// the log is not asked this poll (nothing changed, all false). So while
// nothing changes the log is asked every other poll: a change is seen at
// most one interval later, and a quiet rollout of a few nodes asks half
// as often (MAAS requests per node). Not while many wait: there the skip
// saves a request shared by hundreds, and costs each of them the
// interval (the first of thousands of commissioned machines was seen 2 s
// late at time scale 0.2, while both cores idled).
func (p *poller) askChanges(ctx context.Context, site string, waiting int, ch drivers.ServerChanges) (changed map[string]string, all bool) {
	if p.quiet[site] && waiting < askEveryPollFrom {
		delete(p.quiet, site)
		return nil, false
	}
	changed, all = p.changes(ctx, site, ch)
	p.quiet[site] = !all && len(changed) == 0
	return changed, all
}

// changes reads the Site's changes since its cursor, in the poll lane:
// the machines that changed, each with the state it changed to last
// ("" when the driver cannot tell); all is true when every machine must
// be read (Reset, or an error).
func (p *poller) changes(ctx context.Context, site string, ch drivers.ServerChanges) (changed map[string]string, all bool) {
	if err := p.e.pollLane.acquire(ctx); err != nil {
		return nil, true
	}
	c, err := ch.Changes(ctx, p.cursors[site])
	p.e.pollLane.release()
	if err != nil {
		if ctx.Err() == nil {
			p.e.log.Warn().Err(err).Str("site", site).
				Msg("reading what changed at the site failed; this poll reads every waiting machine, the next asks again")
		}
		return nil, true
	}
	p.cursors[site] = c.Cursor
	if c.Reset {
		return nil, true
	}
	changed = make(map[string]string, len(c.Machines))
	for _, id := range c.Machines {
		changed[id] = c.States[id]
	}
	return changed, false
}

// readAndWake reads the waiters' machines in batches and wakes those
// whose state changed or whose wait ran out, answering how many it
// woke; false when ctx ended.
func (p *poller) readAndWake(ctx context.Context, ws []*waiter, now time.Time) (woke int, ok bool) {
	for start := 0; start < len(ws); start += statusBatch {
		chunk := ws[start:min(start+statusBatch, len(ws))]
		refs := make([]drivers.NodeRef, len(chunk))
		for i, w := range chunk {
			refs[i] = w.ref
		}
		ms, err := p.e.pollStatus(ctx, refs)
		if err != nil {
			if ctx.Err() != nil {
				return woke, false
			}
			p.e.log.Warn().Err(err).Int("machines", len(refs)).Msg("batched status poll failed; waiting nodes fall back to their own timers")
		}
		for i, w := range chunk {
			var m drivers.Machine
			if err == nil && i < len(ms) {
				m = ms[i]
				w.read, w.due = true, 0
			}
			if w.tracked && m.State != "" && m.State == w.last && w.over(now) {
				w.renew(now) // read unchanged: its node would find what the poll found
			}
			if (m.State != "" && m.State != w.last) || w.over(now) {
				p.finish(w, m)
				woke++
			}
		}
	}
	return woke, true
}

// over: the wait ran out (or was ended: expire).
func (w *waiter) over(now time.Time) bool { return now.After(w.until) || w.expired.Load() }

func (p *poller) finish(w *waiter, m drivers.Machine) {
	p.mu.Lock()
	_, ok := p.waiters[w]
	delete(p.waiters, w)
	p.mu.Unlock()
	switch {
	case !ok:
	case w.fn != nil:
		w.fn(m)
	default:
		w.done <- m
	}
}
