package orchestrator

import (
	"slices"
	"sync"
	"time"
)

// DefaultBaselineParallel is how many firmware updates run at once in a
// Site when its lifecycle.baseline.maxParallel says nothing.
const DefaultBaselineParallel = 32

// slotStale: a slot whose node has not looked at its update for this long
// is taken as given up (the node failed, was cancelled or its engine
// stopped) and counts no more.
const slotStale = 5 * time.Minute

// updateSlots bounds the firmware updates running at once: one per BMC,
// always, and the Site's maxParallel. A node holds its slot from the
// start of an update to its end, across the stage's waits; a restarted
// engine's nodes that follow an update they started take theirs back
// without asking.
//
// A node that finds no slot free waits in line (waiting, in the order
// they first asked); a slot given back wakes the first in line that can
// take it (wake: the engine's e.wake), so that a waiter starts at once
// instead of at its next look, which is only the fallback (MaxWait).
type updateSlots struct {
	mu      sync.Mutex
	held    map[string]slot // by node
	peak    map[string]int  // by site: the most held at once (tests, metrics)
	waiting []slot          // nodes waiting for a slot, first come first
	clock   func() time.Time
	wake    func(node string)
}

type slot struct {
	node      string // waiting only
	site, bmc string
	seen      time.Time
}

// take gives node a slot for an update on bmc in site, limited to max in
// the site; force takes it whatever the counts (an update running
// already). ok is false when none is free: why says what it waits for.
func (u *updateSlots) take(node, site, bmc string, max int, force bool) (ok bool, why string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.now()
	if u.held == nil {
		u.held, u.peak = map[string]slot{}, map[string]int{}
	}
	inSite := 0
	for n, s := range u.held {
		switch {
		case n == node:
		case now.Sub(s.seen) > slotStale:
			delete(u.held, n)
		case s.bmc == bmc && !force:
			u.wait(node, site, bmc, now)
			return false, "BMC " + bmc + " runs an update for node " + n
		case s.site == site:
			inSite++
		}
	}
	if _, mine := u.held[node]; !mine && inSite >= max && !force {
		u.wait(node, site, bmc, now)
		return false, "the Site's lifecycle.baseline.maxParallel updates are running"
	}
	u.unwait(node)
	u.held[node] = slot{site: site, bmc: bmc, seen: now}
	if inSite+1 > u.peak[site] {
		u.peak[site] = inSite + 1
	}
	return true, ""
}

// give frees node's slot and wakes the first node waiting in line that
// may take it (same Site, its BMC running nothing); it leaves the line
// and joins it again if it still finds none.
func (u *updateSlots) give(node string) {
	u.mu.Lock()
	s, had := u.held[node]
	delete(u.held, node)
	u.unwait(node)
	next := ""
	if had {
		next = u.nextWaiter(s.site)
	}
	u.mu.Unlock()
	if next != "" && u.wake != nil {
		u.wake(next)
	}
}

// wait puts node in line (once; its place is kept). The caller holds u.mu.
func (u *updateSlots) wait(node, site, bmc string, now time.Time) {
	for i := range u.waiting {
		if u.waiting[i].node == node {
			u.waiting[i].seen = now
			return
		}
	}
	u.waiting = append(u.waiting, slot{node: node, site: site, bmc: bmc, seen: now})
}

// unwait takes node out of line. The caller holds u.mu.
func (u *updateSlots) unwait(node string) {
	u.waiting = slices.DeleteFunc(u.waiting, func(w slot) bool { return w.node == node })
}

// nextWaiter takes out of line the first node of site whose BMC runs no
// update; a waiter that stopped looking long ago (its node ended without
// a give) leaves the line. The caller holds u.mu.
func (u *updateSlots) nextWaiter(site string) string {
	now := u.now()
	u.waiting = slices.DeleteFunc(u.waiting, func(w slot) bool { return now.Sub(w.seen) > slotStale })
	busy := map[string]bool{}
	for _, s := range u.held {
		busy[s.bmc] = true
	}
	for i, w := range u.waiting {
		if w.site == site && !busy[w.bmc] {
			u.waiting = slices.Delete(u.waiting, i, i+1)
			return w.node
		}
	}
	return ""
}

// Peak is the most firmware updates the engine ran at once in site.
func (e *Engine) BaselinePeak(site string) int {
	e.updates.mu.Lock()
	defer e.updates.mu.Unlock()
	return e.updates.peak[site]
}

func (u *updateSlots) now() time.Time {
	if u.clock != nil {
		return u.clock()
	}
	return time.Now()
}

// waitingForSlot keeps the time a node waits for an update slot out of
// its baseline stage's timeout: the stage's start moves on by the wait
// since the node last looked. The wait is the Site's queue, not the
// machine's doing: at 1,000 nodes and maxParallel 32 the last nodes wait
// for hours, longer than the stage's timeout, before their BMC is asked
// anything. (A restart forgets the wait since the last save: then it
// counts.)
func (r *nodeRun) waitingForSlot() {
	t := now()
	if !r.slotWaitAt.IsZero() && !r.rec.StageStart.IsZero() {
		r.rec.StageStart = r.rec.StageStart.Add(t.Sub(r.slotWaitAt))
	}
	r.slotWaitAt = t
}
