package orchestrator

import (
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// TestPollerRenewsUnchangedWait: a wait that runs out on a machine the
// poll knows unchanged (read in the node's state, then not named by
// MAAS's changes) is renewed, without a read, until the node's stage
// deadline; then its machine is read and the node woken (to time its
// stage out).
func TestPollerRenewsUnchangedWait(t *testing.T) {
	pl := startPollLabScaled(t, 1, 0.02) // commissioning takes the lab 6 s
	p := testPoller(pl.d)
	a := pl.refs[0]
	if _, err := pl.d.Commission(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if st := pl.status(a.MachineID); st != "Commissioning" {
		t.Fatalf("the machine is %s, want Commissioning", st)
	}
	w := p.add("", a, pl.status(a.MachineID), time.Millisecond)
	w.deadline = time.Now().Add(time.Hour)
	time.Sleep(2 * time.Millisecond)
	p.pollOnce(t.Context()) // its first read: unchanged, the wait ran out
	if _, ok := woken(w); ok {
		t.Fatal("woken at its first read, its machine unchanged")
	}
	for i := range 4 { // the changes asked every other poll: both kinds
		time.Sleep(2 * time.Millisecond)
		p.pollOnce(t.Context()) // commissioning's own events may name it: read, found unchanged
		if _, ok := woken(w); ok {
			t.Fatalf("poll %d: woken with its machine unchanged", i)
		}
	}
	w.deadline = time.Now() // the stage's deadline passes
	time.Sleep(2 * time.Millisecond)
	before := pl.machineReads()
	p.pollOnce(t.Context())
	m, ok := woken(w)
	if !ok || m.State != w.last {
		t.Fatalf("at the deadline: woken %t with %+v, want woken with %s", ok, m, w.last)
	}
	if got := pl.machineReads() - before; got != 1 {
		t.Fatalf("at the deadline: %d machine reads, want 1", got)
	}
}

// TestPollerExpireWakes: expire (a node frozen while it waits) ends the
// node's wait at the next poll, its machine unchanged.
func TestPollerExpireWakes(t *testing.T) {
	pl := startPollLab(t, 2)
	p := testPoller(pl.d)
	a, b := pl.refs[0], pl.refs[1]
	wa := p.add("", a, pl.status(a.MachineID), time.Hour)
	wb := p.add("", b, pl.status(b.MachineID), time.Hour)
	p.pollOnce(t.Context())
	p.expire(a.Name)
	p.pollOnce(t.Context())
	if m, ok := woken(wa); !ok || m.State != wa.last {
		t.Fatalf("expired: woken %t with %+v, want woken with %s", ok, m, wa.last)
	}
	if _, ok := woken(wb); ok {
		t.Fatal("the other node's wait ended too")
	}
}

// A driver that cannot tell what changed: a wait that runs out wakes its
// node, as before (its look may find what a state does not show).
func TestPollerWithoutChangesDoesNotRenew(t *testing.T) {
	pl := startPollLab(t, 1)
	p := testPoller(struct{ drivers.Server }{pl.d})
	w := p.add("", pl.refs[0], pl.status(pl.refs[0].MachineID), time.Millisecond)
	time.Sleep(2 * time.Millisecond)
	p.pollOnce(t.Context())
	if _, ok := woken(w); !ok {
		t.Fatal("not woken when its wait ran out")
	}
}

// TestPollerWakesOnSettledState: a wait on a machine in a settled state
// (not in a phase of its own) is not renewed: its wait runs out and its
// node is woken, so that its stage calls again. Renewed, a commission
// stage whose last call found a stale "Commissioning" waited on "Failed
// commissioning" until its deadline (TestCommissioningBudgetNewTask in a
// loaded CI run).
func TestPollerWakesOnSettledState(t *testing.T) {
	pl := startPollLab(t, 1)
	p := testPoller(pl.d)
	a := pl.refs[0]
	st := pl.status(a.MachineID)
	if slices.Contains(busyStates, st) {
		t.Fatalf("the machine is %s, want a settled state", st)
	}
	w := p.add("", a, st, time.Millisecond)
	w.deadline = time.Now().Add(time.Hour)
	time.Sleep(2 * time.Millisecond)
	p.pollOnce(t.Context())
	if m, ok := woken(w); !ok || m.State != st {
		t.Fatalf("wait run out on %s: woken %t with %+v, want woken", st, ok, m)
	}
}
