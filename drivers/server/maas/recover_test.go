package maas

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
)

// commissioned enlists, identifies and commissions the lab's i-th machine.
func commissioned(t *testing.T, d *Driver, m *lab.Machine) drivers.Node {
	t.Helper()
	n := enlistAndIdentify(t, d, m)
	mustDone(t, "Commission", func(ctx context.Context) (drivers.Result, error) { return d.Commission(ctx, n.NodeRef) })
	return n
}

func recoverStep(d *Driver, n *drivers.Node, a drivers.Recovery) func(context.Context) (drivers.Result, error) {
	return func(ctx context.Context) (drivers.Result, error) { return d.Recover(ctx, n.NodeRef, a) }
}

// nextSecond sleeps into the next wall-clock second: MAAS stamps events
// to the second, so a budget opened now is after every earlier event.
func nextSecond() { time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second))) }

// TestRecoverRescueDeployed: a deployed node goes into rescue mode and
// back to its OS; each action is Done when asked again.
func TestRecoverRescueDeployed(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{Machines: 1})
	d := newTestDriver(t, l, nil)
	n := commissioned(t, d, l.Machines()[0])
	// Not in rescue mode: exit-rescue has nothing to do.
	if r, err := d.Recover(testCtx(t), n.NodeRef, drivers.RecoveryExitRescue); err != nil || r.Status != drivers.StatusDone {
		t.Errorf("exit-rescue of a Ready machine: %+v %v, want Done", r, err)
	}
	mustDone(t, "Deploy", func(ctx context.Context) (drivers.Result, error) { return d.Deploy(ctx, n, drivers.Deployment{}) })

	r, err := d.Recover(testCtx(t), n.NodeRef, drivers.RecoveryRescue)
	if err != nil || r.Status != drivers.StatusInProgress || !strings.Contains(r.Message, "Entering rescue mode") {
		t.Fatalf("rescue: %+v %v, want InProgress naming Entering rescue mode", r, err)
	}
	mustDone(t, "rescue", recoverStep(d, &n, drivers.RecoveryRescue))
	if s := stateOf(t, d, n.MachineID); s != "Rescue mode" {
		t.Fatalf("after rescue: %s", s)
	}
	ms, err := d.Status(testCtx(t), []drivers.NodeRef{n.NodeRef})
	if err != nil || len(ms) != 1 || ms[0].State != "Rescue mode" {
		t.Errorf("Status in rescue mode: %+v %v, want State Rescue mode", ms, err)
	}
	before := count(l, "POST /machines/{machine}/?op=rescue_mode")
	if r, err := d.Recover(testCtx(t), n.NodeRef, drivers.RecoveryRescue); err != nil || r.Status != drivers.StatusDone {
		t.Errorf("rescue in Rescue mode: %+v %v, want Done", r, err)
	}
	if got := count(l, "POST /machines/{machine}/?op=rescue_mode") - before; got != 0 {
		t.Errorf("rescue in Rescue mode asked MAAS %d more times", got)
	}
	mustDone(t, "exit-rescue", recoverStep(d, &n, drivers.RecoveryExitRescue))
	if s := stateOf(t, d, n.MachineID); s != "Deployed" {
		t.Errorf("after exit-rescue: %s, want Deployed", s)
	}
	// The deployment is still the node's.
	mustDone(t, "Deploy again", func(ctx context.Context) (drivers.Result, error) { return d.Deploy(ctx, n, drivers.Deployment{}) })
}

// TestRecoverRescueFails: a failed rescue mode entry is Failed with
// MAAS's reason, and stays so; exit-rescue returns the machine to Ready,
// and a fresh budget (BudgetFrom) tries the rescue again.
func TestRecoverRescueFails(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{Machines: 1, Faults: &maas.Faults{Machines: map[string]maas.MachineFaults{"lab-0001": {FailRescue: 1}}}})
	d := newTestDriver(t, l, nil)
	n := commissioned(t, d, l.Machines()[0])
	r, _ := poll(t, "rescue", recoverStep(d, &n, drivers.RecoveryRescue))
	if r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "failed to enter rescue mode") {
		t.Fatalf("rescue with a failing rescue environment: %+v, want Failed", r)
	}
	if r, err := d.Recover(testCtx(t), n.NodeRef, drivers.RecoveryRescue); err != nil || r.Status != drivers.StatusFailed {
		t.Errorf("rescue again, same budget: %+v %v, want Failed", r, err)
	}
	nextSecond()
	n.BudgetFrom = time.Now()
	mustDone(t, "rescue with a fresh budget", recoverStep(d, &n, drivers.RecoveryRescue))
	mustDone(t, "exit-rescue", recoverStep(d, &n, drivers.RecoveryExitRescue))
	if s := stateOf(t, d, n.MachineID); s != "Ready" {
		t.Errorf("after exit-rescue: %s, want Ready", s)
	}
}

// TestRecoverTest: hardware tests run once and report their outcome;
// asked again they are not run again; a failed run is Failed testing with
// MAAS's reason until a fresh budget runs them again.
func TestRecoverTest(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{Machines: 2, Faults: &maas.Faults{Machines: map[string]maas.MachineFaults{"lab-0002": {FailTesting: 1}}}})
	d := newTestDriver(t, l, nil)
	good, bad := commissioned(t, d, l.Machines()[0]), commissioned(t, d, l.Machines()[1])
	tests := func() int { return count(l, "POST /machines/{machine}/?op=test") }

	mustDone(t, "test", recoverStep(d, &good, drivers.RecoveryTest))
	if s := stateOf(t, d, good.MachineID); s != "Ready" {
		t.Errorf("after test: %s, want Ready", s)
	}
	before := tests()
	if r, err := d.Recover(testCtx(t), good.NodeRef, drivers.RecoveryTest); err != nil || r.Status != drivers.StatusDone {
		t.Errorf("test again: %+v %v, want Done", r, err)
	}
	if tests() != before {
		t.Errorf("test asked again started another run")
	}

	r, _ := poll(t, "test (failing)", recoverStep(d, &bad, drivers.RecoveryTest))
	if r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "Failed testing") || !strings.Contains(r.Message, "injected fault") {
		t.Fatalf("test of a machine that fails it: %+v, want Failed testing with MAAS's reason", r)
	}
	before = tests()
	if r, err := d.Recover(testCtx(t), bad.NodeRef, drivers.RecoveryTest); err != nil || r.Status != drivers.StatusFailed || tests() != before {
		t.Errorf("test again, same budget: %+v %v (%d runs more), want Failed and no run", r, err, tests()-before)
	}
	nextSecond()
	bad.BudgetFrom = time.Now()
	mustDone(t, "test with a fresh budget", recoverStep(d, &bad, drivers.RecoveryTest))
	if s := stateOf(t, d, bad.MachineID); s != "Ready" {
		t.Errorf("after a passed test from Failed testing: %s, want Ready", s)
	}
	// A test run that an operation followed no longer counts.
	mustDone(t, "Deploy", func(ctx context.Context) (drivers.Result, error) { return d.Deploy(ctx, good, drivers.Deployment{}) })
	before = tests()
	mustDone(t, "test a deployed machine", recoverStep(d, &good, drivers.RecoveryTest))
	if tests() != before+1 || stateOf(t, d, good.MachineID) != "Deployed" {
		t.Errorf("test after a deployment: %d runs, state %s; want one run, back to Deployed", tests()-before, stateOf(t, d, good.MachineID))
	}
}

// TestRecoverMarkBroken: MAAS lets only the owner mark a machine broken;
// ours is marked (and released on the way), and mark-fixed brings it back.
func TestRecoverMarkBroken(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{Machines: 1})
	d := newTestDriver(t, l, nil)
	n := commissioned(t, d, l.Machines()[0])
	r, err := d.Recover(testCtx(t), n.NodeRef, drivers.RecoveryMarkBroken)
	if err != nil || r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "owner") {
		t.Errorf("mark-broken of an unowned machine: %+v %v, want Failed naming the owner rule", r, err)
	}
	mustDone(t, "Deploy", func(ctx context.Context) (drivers.Result, error) { return d.Deploy(ctx, n, drivers.Deployment{}) })
	mustDone(t, "mark-broken", recoverStep(d, &n, drivers.RecoveryMarkBroken))
	if s := stateOf(t, d, n.MachineID); s != "Broken" {
		t.Fatalf("after mark-broken: %s", s)
	}
	mustDone(t, "mark-broken again", recoverStep(d, &n, drivers.RecoveryMarkBroken))
	if r, err := d.Recover(testCtx(t), n.NodeRef, drivers.RecoveryAbort); err != nil || r.Status != drivers.StatusDone || !strings.Contains(r.Message, "Broken") {
		t.Errorf("abort of a Broken machine: %+v %v, want Done (nothing runs) naming the state", r, err)
	}
	mustDone(t, "mark-fixed", recoverStep(d, &n, drivers.RecoveryMarkFixed))
	mustDone(t, "mark-fixed again", recoverStep(d, &n, drivers.RecoveryMarkFixed))
}

// TestRecoverDelete: an unowned Ready machine is deleted (and asked again
// it is Done); one another agent allocated is refused; one of ours with
// an operation running is Failed until it ends.
func TestRecoverDelete(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{Machines: 3})
	d := newTestDriver(t, l, nil)
	ms := l.Machines()
	ready, theirs := commissioned(t, d, ms[0]), commissioned(t, d, ms[1])

	mustDone(t, "delete", recoverStep(d, &ready, drivers.RecoveryDelete))
	if _, err := d.fetchMachine(testCtx(t), ready.MachineID); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("deleted machine still read: %v", err)
	}
	if r, err := d.Recover(testCtx(t), ready.NodeRef, drivers.RecoveryDelete); err != nil || r.Status != drivers.StatusDone {
		t.Errorf("delete again: %+v %v, want Done", r, err)
	}

	other := newTestDriver(t, l, map[string]string{SettingInstance: "someone-else"})
	mustDone(t, "Deploy by another instance", func(ctx context.Context) (drivers.Result, error) {
		return other.Deploy(ctx, theirs, drivers.Deployment{})
	})
	if _, err := d.Recover(testCtx(t), theirs.NodeRef, drivers.RecoveryDelete); drivers.Classify(err) != drivers.Permanent {
		t.Errorf("delete of another instance's machine: %v, want a Permanent error", err)
	}
	if s := stateOf(t, d, theirs.MachineID); s != "Deployed" {
		t.Errorf("another instance's machine after a refused delete: %s", s)
	}

	mine := commissioned(t, d, ms[2])
	// The lab's MAAS with a deployment that never ends.
	l.MAAS.SetDurations(func(du *maas.Durations) { du.Deploy = 1000 * time.Hour })
	if r, err := d.Deploy(testCtx(t), mine, drivers.Deployment{}); err != nil || r.Status != drivers.StatusInProgress {
		t.Fatalf("Deploy: %+v %v", r, err)
	}
	r, err := d.Recover(testCtx(t), mine.NodeRef, drivers.RecoveryDelete)
	if err != nil || r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "Deploying") {
		t.Errorf("delete of a Deploying machine: %+v %v, want Failed naming Deploying", r, err)
	}
	mustDone(t, "abort", recoverStep(d, &mine, drivers.RecoveryAbort))
	mustDone(t, "release", func(ctx context.Context) (drivers.Result, error) {
		return d.Release(ctx, mine.NodeRef, drivers.EraseNone)
	})
	mustDone(t, "delete after release", recoverStep(d, &mine, drivers.RecoveryDelete))
	var gone map[string]any
	if err := d.c.call(testCtx(t), http.MethodGet, "machines/"+url.PathEscape(mine.MachineID)+"/", "", nil, &gone); !isNotFound(err) {
		t.Errorf("GET of the deleted machine: %v, want 404", err)
	}
}

// TestReleaseErasePolicy: each erase policy sends MAAS the parameters
// that make it erase that way, which the lab's phase lengths tell apart.
func TestReleaseErasePolicy(t *testing.T) {
	for _, tc := range []struct {
		erase    drivers.Erase
		settings map[string]string
		want     string // the erase the lab ran ("" none)
	}{
		{drivers.EraseNone, nil, ""},
		{drivers.EraseQuick, map[string]string{SettingErase: "false"}, "quick"}, // explicit beats the setting
		{drivers.EraseSecure, nil, "secure"},
		{drivers.EraseDefault, nil, "full"},
		{drivers.EraseDefault, map[string]string{SettingQuickErase: "true"}, "quick"},
		{drivers.EraseDefault, map[string]string{SettingSecureErase: "true", SettingQuickErase: "true"}, "secure"}, // a site's policy.erase secure
		{drivers.EraseDefault, map[string]string{SettingErase: "false"}, ""},
	} {
		t.Run(string(tc.erase)+"/"+tc.want, func(t *testing.T) {
			t.Parallel()
			l := startLab(t, lab.Config{Machines: 1})
			d := newTestDriver(t, l, tc.settings)
			n := commissioned(t, d, l.Machines()[0])
			mustDone(t, "Deploy", func(ctx context.Context) (drivers.Result, error) { return d.Deploy(ctx, n, drivers.Deployment{}) })
			mustDone(t, "Release", func(ctx context.Context) (drivers.Result, error) { return d.Release(ctx, n.NodeRef, tc.erase) })
			got := ""
			for _, e := range eventsOf(t, d, n.MachineID) {
				if e.Type == "Disks erased" {
					got = strings.TrimSuffix(strings.TrimPrefix(e.Description, "disks erased ("), ")")
				}
			}
			if got != tc.want {
				t.Errorf("Release(%q) with %v erased %q, want %q", tc.erase, tc.settings, got, tc.want)
			}
		})
	}
	if _, err := (&Driver{}).Release(testCtx(t), drivers.NodeRef{Name: "x", MachineID: "y"}, "wipe"); drivers.Classify(err) != drivers.Permanent {
		t.Errorf("unknown erase policy: %v, want a Permanent error", err)
	}
}

func eventsOf(t *testing.T, d *Driver, id string) []mEvent {
	t.Helper()
	evs, err := d.events(testCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestRecoverRescueAllocated: an Allocated machine's rescue mode cannot
// be left the way MAAS leaves it (no power action for that earlier
// state): exit-rescue is Failed naming what to do, and so it stays
// without a fresh budget. Rescue is refused while an operation runs.
func TestRecoverRescueAllocated(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{Machines: 2})
	d := newTestDriver(t, l, nil)
	n := commissioned(t, d, l.Machines()[0])
	if err := d.c.call(testCtx(t), http.MethodPost, "machines/", "allocate", url.Values{"system_id": {n.MachineID}, "agent_name": {d.instance}}, nil); err != nil {
		t.Fatal(err)
	}
	mustDone(t, "rescue", recoverStep(d, &n, drivers.RecoveryRescue))
	r, _ := poll(t, "exit-rescue", recoverStep(d, &n, drivers.RecoveryExitRescue))
	if r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "failed to exit rescue mode") || !strings.Contains(r.Message, "power") {
		t.Fatalf("exit-rescue of a machine that was Allocated: %+v, want Failed saying what to power", r)
	}
	before := count(l, "POST /machines/{machine}/?op=exit_rescue_mode")
	if r, err := d.Recover(testCtx(t), n.NodeRef, drivers.RecoveryExitRescue); err != nil || r.Status != drivers.StatusFailed {
		t.Errorf("exit-rescue again, same budget: %+v %v, want Failed", r, err)
	}
	if got := count(l, "POST /machines/{machine}/?op=exit_rescue_mode") - before; got != 0 {
		t.Errorf("exit-rescue with its budget spent asked MAAS %d times", got)
	}
	if r, err := d.Recover(testCtx(t), n.NodeRef, drivers.RecoveryRescue); err != nil || r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "exit-rescue first") {
		t.Errorf("rescue of a machine that failed to exit: %+v %v, want Failed naming exit-rescue", r, err)
	}

	other := enlistAndIdentify(t, d, l.Machines()[1])
	l.MAAS.SetDurations(func(du *maas.Durations) { du.Commission = 1000 * time.Hour })
	if r, err := d.Commission(testCtx(t), other.NodeRef); err != nil || r.Status != drivers.StatusInProgress {
		t.Fatalf("Commission: %+v %v", r, err)
	}
	for _, a := range []drivers.Recovery{drivers.RecoveryRescue, drivers.RecoveryTest} {
		if r, err := d.Recover(testCtx(t), other.NodeRef, a); err != nil || r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "Commissioning") {
			t.Errorf("%s while commissioning: %+v %v, want Failed naming Commissioning", a, r, err)
		}
	}
	mustDone(t, "abort", recoverStep(d, &other, drivers.RecoveryAbort))
	if s := stateOf(t, d, other.MachineID); s != "New" {
		t.Errorf("after abort of a first commissioning: %s, want New", s)
	}
}
