package orchestrator

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
)

// TestPollerAdmitsWhatTheGateTakes: a poll reads the machines of parked
// nodes only while the round gate has room for the nodes it wakes (a
// batch at a time); those it leaves are due and read first once there is
// room, though no change names them again. A node waiting in its handler
// is read whatever the gate's room.
func TestPollerAdmitsWhatTheGateTakes(t *testing.T) {
	const parked = statusBatch + 100
	f := fake.NewServer(fake.Script{})
	p := testPoller(f)
	p.e.gate = newRoundGate(1)
	if !p.e.gate.enter() { // the gate full: no room
		t.Fatal("the gate refused its first node")
	}
	var woke atomic.Int64
	var ids []string
	for i := range parked {
		m := f.AddMachine(drivers.Machine{State: "Commissioning"})
		ids = append(ids, m.MachineID)
		p.addFunc("", drivers.NodeRef{Name: "n" + strconv.Itoa(i), MachineID: m.MachineID}, m.State, time.Hour, time.Time{},
			func(drivers.Machine) { woke.Add(1); p.e.gate.enter() }) // a woken node takes a place if one is free
	}
	held := f.AddMachine(drivers.Machine{State: "Commissioning"})
	wh := p.add("", drivers.NodeRef{Name: "held", MachineID: held.MachineID}, held.State, time.Hour)
	p.pollOnce(t.Context()) // Reset: every machine, but the gate has no room
	for _, id := range append(ids, held.MachineID) {
		if err := f.SetState(id, "Ready"); err != nil {
			t.Fatal(err)
		}
	}
	p.pollOnce(t.Context())
	if n := woke.Load(); n != 0 {
		t.Fatalf("%d parked nodes woken with the gate full, want none", n)
	}
	if m, ok := woken(wh); !ok || m.State != "Ready" {
		t.Fatalf("the node waiting in its handler: woken %t with %+v, want woken Ready", ok, m)
	}
	p.e.gate.leave() // room for one: one batch is read
	p.pollOnce(t.Context())
	if n := woke.Load(); n != statusBatch {
		t.Fatalf("%d parked nodes woken with room for one, want one batch (%d)", n, statusBatch)
	}
	p.pollOnce(t.Context()) // the one woken first took the place: none now
	if n := woke.Load(); n != statusBatch {
		t.Fatalf("%d parked nodes woken with the gate over-full, want %d", n, statusBatch)
	}
	for range parked { // nodes leave: room again
		p.e.gate.leave()
	}
	p.pollOnce(t.Context()) // the due ones, though no change names them now
	if n := woke.Load(); n != parked {
		t.Fatalf("%d parked nodes woken in all, want %d", n, parked)
	}
}

// TestGateRoomHalfWidth: the gate's room for woken nodes is its free
// places less its queue plus half its width (so places that free up
// between polls find a node queued).
func TestGateRoomHalfWidth(t *testing.T) {
	g := newRoundGate(8)
	for range 8 {
		if !g.enter() {
			t.Fatal("a free place refused")
		}
	}
	if r := g.room(); r != 4 {
		t.Errorf("a full gate of 8: room %d, want 4", r)
	}
	g.leave()
	if r := g.room(); r != 5 {
		t.Errorf("one left: room %d, want 5", r)
	}
	if r := (*roundGate)(nil).room(); r <= 1<<30 {
		t.Errorf("no gate: room %d, want unbounded", r)
	}
}
