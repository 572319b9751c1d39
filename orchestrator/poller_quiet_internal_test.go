package orchestrator

import (
	"strings"
	"testing"
	"time"
)

// eventQueries counts the lab's reads of its event log.
func (pl *pollLab) eventQueries() int {
	n := 0
	for _, r := range pl.l.MAAS.Stats().Snapshot().Requests {
		if strings.HasPrefix(r.Request, "GET /events/") {
			n += r.Count
		}
	}
	return n
}

// TestPollerAsksEveryOtherPollWhileQuiet: while the event log names no
// change, the poll asks it every other poll (the lab counts the
// queries: before, every poll asked), and a change that comes after a
// quiet ask still wakes its node by the second poll after it (the lab's
// own state changed).
func TestPollerAsksEveryOtherPollWhileQuiet(t *testing.T) {
	pl := startPollLab(t, 1)
	p := testPoller(pl.d)
	a := pl.refs[0]
	wa := p.add("", a, pl.status(a.MachineID), time.Hour)
	p.pollOnce(t.Context()) // the first: the log's newest event, every machine read
	before := pl.eventQueries()
	for range 6 {
		p.pollOnce(t.Context())
	}
	if got := pl.eventQueries() - before; got != 3 {
		t.Fatalf("6 polls with nothing changed asked the lab's event log %d times, want 3", got)
	}
	p.pollOnce(t.Context()) // asks, and finds nothing: the next poll does not ask
	if _, err := pl.d.Commission(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if st := pl.status(a.MachineID); st == wa.last {
		t.Fatalf("the lab's machine %s stayed %s after Commission", a.MachineID, st)
	}
	p.pollOnce(t.Context())
	if _, ok := woken(wa); ok {
		t.Fatal("the poll after a quiet ask read the machine: it should not ask the log")
	}
	p.pollOnce(t.Context())
	if m, ok := woken(wa); !ok || m.State == wa.last || m.State == "" {
		t.Fatalf("A's waiter two polls after its change: woken %v with %q, want another state than %q (the lab: %s)", ok, m.State, wa.last, pl.status(a.MachineID))
	}
}

// TestPollerAsksEveryPollWhileManyWait: with askEveryPollFrom machines
// waiting, every poll asks the event log, quiet or not (the lab counts
// the queries: before, every other poll), so that a change is seen
// within one interval.
func TestPollerAsksEveryPollWhileManyWait(t *testing.T) {
	defer func(n int) { askEveryPollFrom = n }(askEveryPollFrom)
	askEveryPollFrom = 2
	pl := startPollLab(t, 2)
	p := testPoller(pl.d)
	for _, r := range pl.refs {
		p.add("", r, pl.status(r.MachineID), time.Hour)
	}
	p.pollOnce(t.Context()) // the first: the log's newest event, every machine read
	before := pl.eventQueries()
	for range 6 {
		p.pollOnce(t.Context())
	}
	if got := pl.eventQueries() - before; got < 6 {
		t.Fatalf("6 polls with %d machines waiting asked the lab's event log %d times, want every poll", len(pl.refs), got)
	}
}
