package orchestrator

// The poller against the lab's MAAS: it reads the event log first and
// then only the machines that changed (or were never read, or whose wait
// ran out); the periodic full read still reads every one. Reads are
// counted from the lab's own request stats, states from its machines.

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/drivers/server/maas"
	"github.com/slipway-dev/slipway/sim/lab"
)

// pollLab is a lab MAAS with machines enlisted (New) and identified.
type pollLab struct {
	l    *lab.Lab
	d    *maas.Driver
	refs []drivers.NodeRef
}

func startPollLab(t *testing.T, machines int) *pollLab {
	t.Helper()
	return startPollLabScaled(t, machines, 0.0005)
}

// startPollLabScaled is startPollLab with the lab's phases at scale.
func startPollLabScaled(t *testing.T, machines int, scale float64) *pollLab {
	t.Helper()
	l, err := lab.Start(t.Context(), lab.Config{Machines: machines, TimeScale: scale})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	info := l.Info()
	d, err := maas.NewDriver(drivers.Config{Settings: map[string]string{maas.SettingURL: info.MAASURL,
		maas.SettingInstance: "slipway-test", maas.SettingTimeout: "5s"},
		Secrets: map[string]drivers.Secret{maas.SecretAPIKey: drivers.NewSecret(info.APIKey)}})
	if err != nil {
		t.Fatal(err)
	}
	pl := &pollLab{l: l, d: d}
	for _, m := range l.Machines() {
		m.SetBootDevice("pxe", false, true)
		m.PowerOn()
		n := drivers.Node{NodeRef: drivers.NodeRef{Name: m.Name}, Hostname: m.Name,
			BMCAddress: m.BMC.Address + ":" + strconv.Itoa(m.BMC.Port), Platform: drivers.Platform{Image: "ubuntu/jammy"}}
		pl.refs = append(pl.refs, drivers.NodeRef{Name: m.Name, MachineID: untilDone(t, func(ctx context.Context) (string, drivers.Result, error) {
			got, r, err := d.IdentifyNode(ctx, n)
			return got.MachineID, r, err
		})})
	}
	return pl
}

// untilDone repeats step until Done (bounded: 2,000 tries, 20 s).
func untilDone(t *testing.T, step func(context.Context) (string, drivers.Result, error)) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for range 2000 {
		v, r, err := step(t.Context())
		if err == nil && r.Status == drivers.StatusDone {
			return v
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("step not Done in time")
	return ""
}

// status is the lab MAAS's own status of a machine.
func (pl *pollLab) status(id string) string {
	for _, m := range pl.l.MAAS.Machines() {
		if m.SystemID == id {
			return m.Status
		}
	}
	return ""
}

// machineReads counts the lab's reads of the machines list
// (GET machines/?id=...).
func (pl *pollLab) machineReads() int {
	n := 0
	for _, r := range pl.l.MAAS.Stats().Snapshot().Requests {
		if strings.HasPrefix(r.Request, "GET /machines/") && !strings.Contains(r.Request, "{") {
			n += r.Count
		}
	}
	return n
}

func testPoller(srv drivers.Server) *poller {
	e := &Engine{cfg: Config{Drivers: Drivers{Server: srv}, TimeScale: 1, FullPollInterval: time.Hour},
		log: zerolog.Nop(), pollLane: make(sem, 1)}
	return newPoller(e, time.Millisecond)
}

// woken is the machine a waiter was woken with, if it was.
func woken(w *waiter) (drivers.Machine, bool) {
	select {
	case m := <-w.done:
		w.done <- m
		return m, true
	default:
		return drivers.Machine{}, false
	}
}

func TestPollerReadsOnlyChangedMachines(t *testing.T) {
	pl := startPollLab(t, 2)
	p := testPoller(pl.d)
	a, b := pl.refs[0], pl.refs[1]
	wa := p.add("", a, pl.status(a.MachineID), time.Hour)
	wb := p.add("", b, pl.status(b.MachineID), time.Hour)
	poll := func(what string, wantReads int) {
		t.Helper()
		before := pl.machineReads()
		p.pollOnce(t.Context())
		if got := pl.machineReads() - before; got != wantReads {
			t.Fatalf("%s: the lab served %d machine reads, want %d", what, got, wantReads)
		}
	}
	poll("first poll (never read)", 1)
	poll("nothing changed", 0)
	if _, ok := woken(wa); ok {
		t.Fatal("a waiter woke with its machine unchanged")
	}
	// A changes between two polls: the next poll reads it and wakes it.
	if _, err := pl.d.Commission(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if st := pl.status(a.MachineID); st == wa.last {
		t.Fatalf("the lab's machine %s stayed %s after Commission", a.MachineID, st)
	}
	poll("A changed, the log not asked (the last ask found nothing)", 0)
	poll("A changed", 1)
	m, ok := woken(wa)
	if !ok || m.State == wa.last || m.State == "" {
		t.Fatalf("A's waiter: woken %v with %q, want woken with a state other than %q (the lab: %s)", ok, m.State, wa.last, pl.status(a.MachineID))
	}
	if _, ok := woken(wb); ok || pl.status(b.MachineID) != wb.last {
		t.Fatalf("B's waiter woke, or B changed (%s)", pl.status(b.MachineID))
	}
	// B alone waits and does not change: not read, until the safety net.
	poll("B unchanged", 0)
	p.lastFull = time.Time{}
	poll("the safety net's full read", 1)
	if _, ok := woken(wb); ok {
		t.Fatal("B's waiter woke with B unchanged")
	}
}

// A driver that cannot tell what changed is read every poll, as before.
func TestPollerWithoutChangesReadsEveryPoll(t *testing.T) {
	pl := startPollLab(t, 1)
	p := testPoller(struct{ drivers.Server }{pl.d})
	p.add("", pl.refs[0], pl.status(pl.refs[0].MachineID), time.Hour)
	for i := range 3 {
		before := pl.machineReads()
		p.pollOnce(t.Context())
		if got := pl.machineReads() - before; got != 1 {
			t.Fatalf("poll %d: %d machine reads, want 1", i, got)
		}
	}
}

// When reading the changes fails, the poll reads every waiting machine.
func TestPollerChangesErrorReadsAll(t *testing.T) {
	f := fake.NewServer(fake.Script{FailAt: "Changes", FailClass: drivers.Transient})
	m := f.AddMachine(drivers.Machine{})
	p := testPoller(f)
	p.add("", drivers.NodeRef{Name: "n1", MachineID: m.MachineID}, m.State, time.Hour)
	for range 3 {
		p.pollOnce(t.Context())
	}
	status := 0
	for _, c := range f.Calls() {
		if c.Method == "Status" {
			status++
		}
	}
	if status != 3 {
		t.Fatalf("%d Status calls in 3 polls whose changes failed, want 3", status)
	}
}

// TestPollerSkipsItsOwnChange: a node that deployed its machine waits
// for "Deploying" to end; the change feed then names the machine for the
// deploy's own status changes (Allocated, Deploying), and says the
// newest was to Deploying, so the poll does not read it. Its deploy's
// end is read and wakes the node.
func TestPollerSkipsItsOwnChange(t *testing.T) {
	pl := startPollLabScaled(t, 2, 0.01)
	p := testPoller(pl.d)
	a, b := pl.refs[0], pl.refs[1]
	p.add("", b, pl.status(b.MachineID), time.Hour) // keeps the poll going
	p.pollOnce(t.Context())                         // the feed's first answer: Reset, every machine read
	untilDone(t, func(ctx context.Context) (string, drivers.Result, error) {
		r, err := pl.d.Commission(ctx, a)
		return "", r, err
	})
	p.pollOnce(t.Context()) // past the commissioning's changes
	node := drivers.Node{NodeRef: a, Hostname: a.Name, Platform: drivers.Platform{Image: "ubuntu/jammy"}}
	if r, err := pl.d.Deploy(t.Context(), node, drivers.Deployment{}); err != nil || r.Status != drivers.StatusInProgress {
		t.Fatalf("Deploy: %+v %v", r, err)
	}
	if st := pl.status(a.MachineID); st != "Deploying" {
		t.Fatalf("the lab's machine is %s after Deploy, want Deploying", st)
	}
	wa := p.add("", a, "Deploying", time.Hour)
	before := pl.machineReads()
	p.quiet = map[string]bool{} // ask the log this poll
	p.pollOnce(t.Context())
	if got := pl.machineReads() - before; got != 0 {
		t.Fatalf("the poll after the deploy read %d machine lists, want none (its newest change was to Deploying)", got)
	}
	if _, ok := woken(wa); ok {
		t.Fatal("the waiter woke with its machine Deploying")
	}
	deadline := time.Now().Add(20 * time.Second)
	for pl.status(a.MachineID) == "Deploying" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for range 3 {
		p.quiet = map[string]bool{}
		p.pollOnce(t.Context())
		if _, ok := woken(wa); ok {
			break
		}
	}
	if m, ok := woken(wa); !ok || m.State != pl.status(a.MachineID) {
		t.Fatalf("after the deploy ended (%s): woken %t with %+v", pl.status(a.MachineID), ok, m)
	}
}
