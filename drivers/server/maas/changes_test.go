package maas

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	"github.com/slipway-dev/slipway/sim/lab"
	simmaas "github.com/slipway-dev/slipway/sim/maas"
)

// labStatus is the lab MAAS's own status of a machine.
func labStatus(l *lab.Lab, id string) string {
	for _, m := range l.MAAS.Machines() {
		if m.SystemID == id {
			return m.Status
		}
	}
	return ""
}

// TestChangesConformance runs the changes suite against the lab's MAAS,
// each state read from the lab's own machines.
func TestChangesConformance(t *testing.T) {
	l := startLab(t, lab.Config{Machines: 1})
	m := l.Machines()[0]
	node := drivers.Node{NodeRef: drivers.NodeRef{Name: m.Name}, Hostname: m.Name,
		BootMAC: m.Hardware.NICs[0].MAC, Platform: drivers.Platform{Image: "jammy"}}
	d := newTestDriver(t, l, nil)
	driverstest.RunChanges(t, func(*testing.T) driverstest.ChangesLab {
		return driverstest.ChangesLab{Driver: d, Site: "lab", Node: node, State: func(id string) string { return labStatus(l, id) }}
	})
}

// TestChangesPages: with small pages, Changes pages until a short page
// and names each machine that changed once; past changesPages pages it
// is Reset, its cursor the newest read. Counted from the lab's requests.
func TestChangesPages(t *testing.T) {
	l := startLab(t, lab.Config{Machines: 2})
	d := newTestDriver(t, l, nil)
	ctx := t.Context()
	first, err := d.Changes(ctx, "")
	if err != nil || !first.Reset {
		t.Fatalf("first: %+v %v", first, err)
	}
	var ids []string
	for _, m := range l.Machines() {
		ids = append(ids, commissioned(t, d, m).MachineID)
	}
	limit, pages := changesLimit, changesPages
	t.Cleanup(func() { changesLimit, changesPages = limit, pages })
	changesLimit, changesPages = 2, 1000
	before := eventReads(l)
	got, err := d.Changes(ctx, first.Cursor)
	if err != nil || got.Reset {
		t.Fatalf("Changes: %+v %v", got, err)
	}
	slices.Sort(ids)
	if gs := slices.Sorted(slices.Values(got.Machines)); !slices.Equal(gs, ids) {
		t.Fatalf("changed machines %v, want each of %v once", got.Machines, ids)
	}
	reqs := eventReads(l) - before
	if reqs < 3 {
		t.Fatalf("%d event reads: the small pages were not paged", reqs)
	}
	changesPages = 1
	reset, err := d.Changes(ctx, first.Cursor)
	if err != nil || !reset.Reset || reset.Cursor == first.Cursor {
		t.Fatalf("one page of 2 for %d machines' changes: %+v %v, want Reset from a later cursor", len(ids), reset, err)
	}
}

// eventReads counts the lab's GET /events/ requests.
func eventReads(l *lab.Lab) int {
	n := 0
	for _, r := range l.MAAS.Stats().Snapshot().Requests {
		if strings.HasPrefix(r.Request, "GET /events/") {
			n += r.Count
		}
	}
	return n
}

// TestStatusChangedTo: MAAS's descriptions of a status change give the
// new status; anything else gives none (the machine is then read).
func TestStatusChangedTo(t *testing.T) {
	for desc, want := range map[string]string{
		"From 'Ready' to 'Allocated' (to admin)":  "Allocated",
		"From 'Deploying' to 'Failed deployment'": "Failed deployment",
		"From 'New' to 'Commissioning'":           "Commissioning",
		"from 'New' to 'Commissioning'":           "",
		"From 'New' to ''":                        "",
		"From 'New' to 'Commissioning":            "",
		"Powering on":                             "",
		"":                                        "",
	} {
		if got := statusChangedTo(desc); got != want {
			t.Errorf("%q: %q, want %q", desc, got, want)
		}
	}
}

// TestChangesStatesNewest: Changes answers each machine's newest status
// change, by event ID, whatever order MAAS lists them in.
func TestChangesStatesNewest(t *testing.T) {
	page := mChangesPage{Events: []mChangeEvent{
		{ID: 12, Node: "a", Type: changesType, Description: "From 'Allocated' to 'Deploying'"},
		{ID: 13, Node: "b", Type: "Powering on", Description: "From 'X' to 'Y'"},
		{ID: 11, Node: "a", Type: changesType, Description: "From 'Ready' to 'Allocated' (to admin)"},
		{ID: 9, Node: "c", Type: changesType, Description: "From 'Ready' to 'Allocated'"},
		{ID: 10, Node: "d", Type: changesType, Description: "garbled"},
	}}
	last := map[string]changedTo{}
	page.lastStates(9, last)
	page2 := mChangesPage{Events: []mChangeEvent{{ID: 14, Node: "d", Type: changesType, Description: "From 'Ready' to 'Allocated'"}}}
	page2.lastStates(13, last)
	got := statesOf(last)
	want := map[string]string{"a": "Deploying", "d": "Allocated"}
	if !maps.Equal(got, want) {
		t.Errorf("states %v, want %v", got, want)
	}
}

// TestChangesLateEvent: an event whose transaction commits after a later
// one's (the lab holds it: HoldStatusEvents) is behind the cursor when it
// appears; the next read, which starts changesOverlap IDs behind the
// cursor, names its machine (without a state: it is read), and the read
// after that does not name it again.
func TestChangesLateEvent(t *testing.T) {
	l := startLab(t, lab.Config{Machines: 2})
	l.MAAS.SetDurations(func(d *simmaas.Durations) { d.Commission, d.NodeTimeout = time.Hour, 2*time.Hour }) // no commissioning ends during the test
	d := newTestDriver(t, l, nil)
	ctx := t.Context()
	first, err := d.Changes(ctx, "")
	if err != nil || !first.Reset {
		t.Fatalf("first: %+v %v", first, err)
	}
	a, b := enlistAndIdentify(t, d, l.Machines()[0]), enlistAndIdentify(t, d, l.Machines()[1])
	c0, err := d.Changes(ctx, first.Cursor)
	if err != nil || c0.Reset {
		t.Fatalf("after the creates: %+v %v", c0, err)
	}
	l.MAAS.HoldStatusEvents(a.MachineID)
	for _, n := range []drivers.Node{a, b} { // A's event is held, B's (later) answered at once
		if r, err := d.Commission(ctx, n.NodeRef); err != nil || labStatus(l, n.MachineID) != "Commissioning" {
			t.Fatalf("Commission %s: %+v %v; the lab says %s", n.Name, r, err, labStatus(l, n.MachineID))
		}
	}
	c1, err := d.Changes(ctx, c0.Cursor)
	if err != nil || c1.Reset || !slices.Contains(c1.Machines, b.MachineID) || slices.Contains(c1.Machines, a.MachineID) {
		t.Fatalf("with A's event held: %+v %v, want B named and not A", c1, err)
	}
	l.MAAS.ReleaseEvents()
	c2, err := d.Changes(ctx, c1.Cursor)
	if err != nil || c2.Reset || !slices.Contains(c2.Machines, a.MachineID) {
		t.Fatalf("A's event committed late: %+v %v, want A named", c2, err)
	}
	if st, ok := c2.States[a.MachineID]; ok {
		t.Errorf("A named by its late event with state %q, want none (read it)", st)
	}
	c3, err := d.Changes(ctx, c2.Cursor)
	if err != nil || c3.Reset || slices.Contains(c3.Machines, a.MachineID) || slices.Contains(c3.Machines, b.MachineID) {
		t.Fatalf("the read after: %+v %v, want neither named again", c3, err)
	}
}
