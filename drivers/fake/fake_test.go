package fake_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
)

var bmc = drivers.BMC{Node: "n1", Address: "10.0.0.1", Username: "admin", Password: drivers.NewSecret("s3cret-pw")}

func node(name string) drivers.Node {
	return drivers.Node{NodeRef: drivers.NodeRef{Name: name}, Hostname: name,
		Interfaces: []drivers.Interface{{Name: "pxe"}}, Platform: drivers.Platform{Image: "ubuntu/jammy"}}
}

func mustDone(t *testing.T, what string, r drivers.Result, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if r.Status != drivers.StatusDone || !r.Valid() {
		t.Fatalf("%s: got %+v, want a valid Done", what, r)
	}
}

func mustClass(t *testing.T, what string, err error, c drivers.Class, contains string) {
	t.Helper()
	var de *drivers.Error
	if !errors.As(err, &de) || de.Class != c {
		t.Fatalf("%s: got error %v, want a %s drivers.Error", what, err, c)
	}
	if !strings.Contains(err.Error(), contains) {
		t.Fatalf("%s: error %q does not contain %q", what, err, contains)
	}
}

// pollDone calls step until Done, requiring exactly want InProgress answers.
func pollDone(t *testing.T, what string, want int, step func() (drivers.Result, error)) {
	t.Helper()
	for i := 0; ; i++ {
		r, err := step()
		if err != nil {
			t.Fatalf("%s call %d: %v", what, i+1, err)
		}
		if !r.Valid() {
			t.Fatalf("%s call %d: invalid %+v", what, i+1, r)
		}
		if r.Status == drivers.StatusDone {
			if i != want {
				t.Fatalf("%s: Done after %d InProgress answers, want %d", what, i, want)
			}
			return
		}
		if r.Status != drivers.StatusInProgress || r.RetryAfter != fake.RetryAfter {
			t.Fatalf("%s call %d: got %+v, want InProgress after %v", what, i+1, r, fake.RetryAfter)
		}
		if i > want {
			t.Fatalf("%s: still InProgress after %d calls", what, i+1)
		}
	}
}

func TestOOBState(t *testing.T) {
	ctx := context.Background()
	f := fake.NewOOB(fake.Script{})
	info, err := f.Probe(ctx, bmc)
	if err != nil || !info.Reachable || !info.Authorized {
		t.Fatalf("Probe: %+v, %v", info, err)
	}
	if p, err := f.PowerStatus(ctx, bmc); err != nil || p != drivers.PowerOff {
		t.Fatalf("initial PowerStatus: %v, %v", p, err)
	}
	r, err := f.PowerOn(ctx, bmc)
	mustDone(t, "PowerOn", r, err)
	r, err = f.PowerOn(ctx, bmc)
	mustDone(t, "PowerOn again", r, err)
	if !strings.Contains(r.Message, "already on") {
		t.Errorf("second PowerOn: %q, want \"already on\"", r.Message)
	}
	if f.Power(bmc.Address) != drivers.PowerOn || f.Power("10.9.9.9") != drivers.PowerOff {
		t.Errorf("Power: %v / %v", f.Power(bmc.Address), f.Power("10.9.9.9"))
	}
	r, err = f.PowerOff(ctx, bmc)
	mustDone(t, "PowerOff", r, err)
	r, err = f.PowerOff(ctx, bmc)
	mustDone(t, "PowerOff again", r, err)
	if !strings.Contains(r.Message, "already off") {
		t.Errorf("second PowerOff: %q", r.Message)
	}
	r, err = f.PowerCycle(ctx, bmc)
	mustDone(t, "PowerCycle", r, err)
	if p, _ := f.PowerStatus(ctx, bmc); p != drivers.PowerOn {
		t.Errorf("after PowerCycle: %v, want on", p)
	}
	dev := drivers.BootDevice{Device: "pxe", EFI: true}
	r, err = f.SetBootDevice(ctx, bmc, dev)
	mustDone(t, "SetBootDevice", r, err)
	if f.BootDevice(bmc.Address) != dev {
		t.Errorf("BootDevice: %+v", f.BootDevice(bmc.Address))
	}
	_, err = f.SetBootDevice(ctx, bmc, drivers.BootDevice{Device: "cdrom"})
	mustClass(t, "SetBootDevice cdrom", err, drivers.Permanent, "cdrom")
	_, err = f.PowerOn(ctx, drivers.BMC{Node: "n2"})
	mustClass(t, "PowerOn without address", err, drivers.Permanent, "no address")

	// Other addresses have their own state.
	other := bmc
	other.Address = "10.0.0.2"
	if p, _ := f.PowerStatus(ctx, other); p != drivers.PowerOff {
		t.Errorf("other BMC: %v, want off", p)
	}
}

func TestOOBWrongPassword(t *testing.T) {
	ctx := context.Background()
	f := fake.NewOOB(fake.Script{})
	for _, pw := range []string{"wrong", "wrong-7f3c"} {
		bad := bmc
		bad.Password = drivers.NewSecret(pw)
		info, err := f.Probe(ctx, bad)
		if !info.Reachable || info.Authorized {
			t.Errorf("Probe %q: %+v, want reachable, unauthorized", pw, info)
		}
		mustClass(t, "Probe", err, drivers.Permanent, "refused the credentials")
		calls := map[string]func() error{
			"PowerStatus":   func() error { _, err := f.PowerStatus(ctx, bad); return err },
			"PowerOn":       func() error { _, err := f.PowerOn(ctx, bad); return err },
			"PowerOff":      func() error { _, err := f.PowerOff(ctx, bad); return err },
			"PowerCycle":    func() error { _, err := f.PowerCycle(ctx, bad); return err },
			"SetBootDevice": func() error { _, err := f.SetBootDevice(ctx, bad, drivers.BootDevice{Device: "pxe"}); return err },
		}
		for name, call := range calls {
			err := call()
			mustClass(t, name, err, drivers.Permanent, "refused")
			if strings.Contains(err.Error(), pw) || strings.Contains(fmt.Sprintf("%+v %#v", info, err), pw) {
				t.Errorf("%s: error %q reveals the password", name, err)
			}
		}
	}
	if f.Power(bmc.Address) != drivers.PowerOff {
		t.Error("a refused PowerOn changed the power state")
	}
}

func TestInjectedFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("error, default class", func(t *testing.T) {
		f := fake.NewOOB(fake.Script{FailAt: "PowerOn"})
		_, err := f.PowerOn(ctx, bmc)
		mustClass(t, "PowerOn", err, drivers.Transient, "injected failure of PowerOn of n1 (call 1)")
		_, err = f.PowerOn(ctx, bmc)
		mustClass(t, "PowerOn", err, drivers.Transient, "(call 2)")
		r, err := f.PowerOff(ctx, bmc)
		mustDone(t, "PowerOff", r, err)
		if f.Power(bmc.Address) != drivers.PowerOff {
			t.Error("a failed PowerOn changed the state")
		}
	})
	t.Run("class", func(t *testing.T) {
		f := fake.NewServer(fake.Script{FailAt: "Commission", FailClass: drivers.NeedsIntervention})
		m, r, err := f.IdentifyNode(ctx, node("a"))
		mustDone(t, "IdentifyNode", r, err)
		_, err = f.Commission(ctx, drivers.NodeRef{Name: m.Node, MachineID: m.MachineID})
		mustClass(t, "Commission", err, drivers.NeedsIntervention, "injected")
	})
	t.Run("Failed result", func(t *testing.T) {
		f := fake.NewNetwork(fake.Script{FailAt: "ConfigurePorts", FailResult: true})
		r, err := f.ConfigurePorts(ctx, node("a"), drivers.PhaseProduction)
		if err != nil || r.Status != drivers.StatusFailed || !r.Valid() || !strings.Contains(r.Message, "injected") {
			t.Fatalf("got %+v, %v; want a valid Failed result", r, err)
		}
		if f.Phase("a") != "" {
			t.Error("a failed ConfigurePorts recorded a phase")
		}
	})
	t.Run("Failed result on a method without one", func(t *testing.T) {
		f := fake.NewServer(fake.Script{FailAt: "Status", FailResult: true, FailClass: drivers.Permanent})
		_, err := f.Status(ctx, nil)
		mustClass(t, "Status", err, drivers.Permanent, "injected")
	})
	t.Run("IdentifyNode Failed result", func(t *testing.T) {
		f := fake.NewServer(fake.Script{FailAt: "IdentifyNode", FailResult: true})
		m, r, err := f.IdentifyNode(ctx, node("a"))
		if err != nil || r.Status != drivers.StatusFailed || m.MachineID != "" {
			t.Fatalf("got %+v %+v %v", m, r, err)
		}
	})
	t.Run("FailTimes", func(t *testing.T) {
		f := fake.NewOOB(fake.Script{FailAt: "PowerOn", FailTimes: 2, FailClass: drivers.Permanent})
		for i := range 2 {
			if _, err := f.PowerOn(ctx, bmc); drivers.Classify(err) != drivers.Permanent {
				t.Fatalf("call %d: %v, want a permanent error", i+1, err)
			}
		}
		for i := range 3 {
			r, err := f.PowerOn(ctx, bmc)
			mustDone(t, fmt.Sprintf("call %d", i+3), r, err)
		}
	})
	t.Run("FailTimes counts only the failing method", func(t *testing.T) {
		f := fake.NewOOB(fake.Script{FailAt: "PowerOff", FailTimes: 1})
		for range 3 {
			if _, err := f.PowerOn(ctx, bmc); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.PowerOff(ctx, bmc); err == nil {
			t.Fatal("first PowerOff did not fail")
		}
		r, err := f.PowerOff(ctx, bmc)
		mustDone(t, "second PowerOff", r, err)
	})
}

func TestPolls(t *testing.T) {
	ctx := context.Background()
	const polls = 3
	t.Run("PowerCycle", func(t *testing.T) {
		f := fake.NewOOB(fake.Script{Polls: polls})
		pollDone(t, "PowerCycle", polls, func() (drivers.Result, error) { return f.PowerCycle(ctx, bmc) })
		if f.Power(bmc.Address) != drivers.PowerOn {
			t.Error("not on after the cycle")
		}
		// PowerOn and PowerOff are not long steps.
		r, err := f.PowerOff(ctx, bmc)
		mustDone(t, "PowerOff", r, err)
		// A new cycle polls again.
		pollDone(t, "second PowerCycle", polls, func() (drivers.Result, error) { return f.PowerCycle(ctx, bmc) })
	})
	t.Run("server lifecycle", func(t *testing.T) {
		f := fake.NewServer(fake.Script{Polls: polls})
		n := node("a")
		var m drivers.Machine
		pollDone(t, "IdentifyNode", polls, func() (drivers.Result, error) {
			var r drivers.Result
			var err error
			m, r, err = f.IdentifyNode(ctx, n)
			return r, err
		})
		if m.MachineID != "fake-0001" || !m.Owned || m.Node != "a" || m.State != fake.StateNew || m.Hostname != "a" {
			t.Fatalf("enlisted %+v", m)
		}
		// Once enlisted, IdentifyNode is Done at once with the same machine.
		m2, r, err := f.IdentifyNode(ctx, n)
		mustDone(t, "IdentifyNode again", r, err)
		if m2.MachineID != m.MachineID {
			t.Fatalf("IdentifyNode again: %s, want %s", m2.MachineID, m.MachineID)
		}
		n.MachineID = m.MachineID
		pollDone(t, "Commission", polls, func() (drivers.Result, error) { return f.Commission(ctx, n.NodeRef) })
		state(t, f, n, fake.StateReady)
		pollDone(t, "Deploy", polls, func() (drivers.Result, error) { return f.Deploy(ctx, n, drivers.Deployment{}) })
		state(t, f, n, fake.StateDeployed)
		pollDone(t, "Release", polls, func() (drivers.Result, error) { return f.Release(ctx, n.NodeRef, drivers.EraseDefault) })
		state(t, f, n, fake.StateReady)
		// Apply* are not long steps.
		r, err = f.ApplyStorage(ctx, n)
		mustDone(t, "ApplyStorage", r, err)
	})
	t.Run("no polls", func(t *testing.T) {
		f := fake.NewServer(fake.Script{})
		pollDone(t, "IdentifyNode", 0, func() (drivers.Result, error) { _, r, err := f.IdentifyNode(ctx, node("a")); return r, err })
		pollDone(t, "Commission", 0, func() (drivers.Result, error) { return f.Commission(ctx, drivers.NodeRef{Name: "a"}) })
	})
}

func state(t *testing.T, f *fake.Server, n drivers.Node, want string) {
	t.Helper()
	ms, err := f.Status(context.Background(), []drivers.NodeRef{n.NodeRef})
	if err != nil || len(ms) != 1 || ms[0].State != want {
		t.Fatalf("Status: %+v, %v; want state %s", ms, err, want)
	}
}

func TestServerState(t *testing.T) {
	ctx := context.Background()
	f := fake.NewServer(fake.Script{})
	si, err := f.ProbeSite(ctx)
	if err != nil || !si.Reachable || !si.Authenticated {
		t.Fatalf("ProbeSite: %+v %v", si, err)
	}
	r, err := f.PrepareSite(ctx, drivers.SiteSpec{Subnets: []drivers.Subnet{{Name: "pxe"}}})
	mustDone(t, "PrepareSite", r, err)
	if s, ok := f.Site(); !ok || len(s.Subnets) != 1 {
		t.Errorf("Site: %+v %v", s, ok)
	}

	// Steps before IdentifyNode.
	_, err = f.Commission(ctx, drivers.NodeRef{Name: "b"})
	mustClass(t, "Commission before identify", err, drivers.Permanent, "identify it first")
	_, err = f.Commission(ctx, drivers.NodeRef{Name: "b", MachineID: "nope"})
	mustClass(t, "Commission unknown machine", err, drivers.Permanent, `unknown machine "nope"`)

	b, r, err := f.IdentifyNode(ctx, node("b"))
	mustDone(t, "IdentifyNode b", r, err)
	a, r, err := f.IdentifyNode(ctx, node("a"))
	mustDone(t, "IdentifyNode a", r, err)
	if a.MachineID != "fake-0002" || b.MachineID != "fake-0001" {
		t.Fatalf("IDs: a %s, b %s", a.MachineID, b.MachineID)
	}
	// A stale ID falls back to the name.
	stale := node("a")
	stale.MachineID = "fake-9999"
	if m, r, err := f.IdentifyNode(ctx, stale); err != nil || r.Status != drivers.StatusDone || m.MachineID != a.MachineID {
		t.Fatalf("IdentifyNode with a stale ID: %+v %+v %v", m, r, err)
	}

	na := node("a")
	_, err = f.ApplyNetworking(ctx, na)
	mustClass(t, "ApplyNetworking on New", err, drivers.Permanent, "machine fake-0002 is New, not Ready")
	_, err = f.Deploy(ctx, na, drivers.Deployment{})
	mustClass(t, "Deploy on New", err, drivers.Permanent, "is New, not Ready")
	_, err = f.Release(ctx, na.NodeRef, drivers.EraseNone)
	mustClass(t, "Release on New", err, drivers.Permanent, "cannot release")

	r, err = f.Commission(ctx, na.NodeRef)
	mustDone(t, "Commission", r, err)
	r, err = f.Commission(ctx, na.NodeRef)
	mustDone(t, "Commission again", r, err)
	for _, step := range []struct {
		name string
		fn   func(context.Context, drivers.Node) (drivers.Result, error)
	}{{"networking", f.ApplyNetworking}, {"storage", f.ApplyStorage}, {"platform", f.ApplyPlatform}} {
		r, err := step.fn(ctx, na)
		mustDone(t, step.name, r, err)
		if !f.Applied(a.MachineID, step.name) {
			t.Errorf("%s not recorded", step.name)
		}
	}
	r, err = f.Deploy(ctx, na, drivers.Deployment{})
	mustDone(t, "Deploy", r, err)
	r, err = f.Deploy(ctx, na, drivers.Deployment{})
	mustDone(t, "Deploy again", r, err)
	_, err = f.ApplyStorage(ctx, na)
	mustClass(t, "ApplyStorage on Deployed", err, drivers.Permanent, "is Deployed, not Ready")

	ms, err := f.Status(ctx, []drivers.NodeRef{{Name: "a"}, {Name: "zzz"}, {Name: "b", MachineID: b.MachineID}, {Name: "x", MachineID: "nope"}})
	if err != nil || len(ms) != 4 {
		t.Fatalf("Status: %+v %v", ms, err)
	}
	if ms[0].MachineID != a.MachineID || ms[0].State != fake.StateDeployed || ms[0].Power != drivers.PowerOn ||
		ms[1].MachineID != "" || ms[2].MachineID != b.MachineID || ms[2].Power != drivers.PowerOff || ms[3].MachineID != "" {
		t.Fatalf("Status: %+v", ms)
	}

	f.AddMachine(drivers.Machine{MachineID: "foreign-1", Hostname: "other"})
	owned, err := f.Owned(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(ms []drivers.Machine) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.MachineID)
		}
		return out
	}
	if got := ids(owned); !slices.Equal(got, []string{"fake-0001", "fake-0002"}) {
		t.Errorf("Owned: %v", got)
	}
	if got := ids(f.Machines()); !slices.Equal(got, []string{"fake-0001", "fake-0002", "foreign-1"}) {
		t.Errorf("Machines: %v", got)
	}
	// Adopting the foreign machine.
	adopt := node("c")
	adopt.MachineID = "foreign-1"
	if m, r, err := f.IdentifyNode(ctx, adopt); err != nil || r.Status != drivers.StatusDone || !m.Owned || m.Node != "c" {
		t.Fatalf("adopt: %+v %+v %v", m, r, err)
	}
	// A machine of another node is not taken.
	steal := node("d")
	steal.MachineID = a.MachineID
	_, _, err = f.IdentifyNode(ctx, steal)
	mustClass(t, "IdentifyNode of another node's machine", err, drivers.Permanent, "belongs to node")

	r, err = f.Release(ctx, na.NodeRef, drivers.EraseDefault)
	mustDone(t, "Release", r, err)
	if !strings.Contains(r.Message, "erasing") {
		t.Errorf("Release message %q", r.Message)
	}
	r, err = f.Release(ctx, na.NodeRef, drivers.EraseDefault)
	mustDone(t, "Release again", r, err)
	if f.Applied(a.MachineID, "storage") {
		t.Error("Release kept the applied configuration")
	}
}

func TestServerRecover(t *testing.T) {
	ctx := context.Background()
	f := fake.NewServer(fake.Script{Polls: 5})
	n := node("a")
	for {
		m, r, err := f.IdentifyNode(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		n.MachineID = m.MachineID
		if r.Status == drivers.StatusDone {
			break
		}
	}
	_, err := f.Recover(ctx, n.NodeRef, drivers.RecoveryAbort)
	mustClass(t, "abort on New", err, drivers.Permanent, "cannot abort machine fake-0001: it is New")

	if r, err := f.Commission(ctx, n.NodeRef); err != nil || r.Status != drivers.StatusInProgress {
		t.Fatalf("Commission: %+v %v", r, err)
	}
	r, err := f.Recover(ctx, n.NodeRef, drivers.RecoveryAbort)
	mustDone(t, "abort commissioning", r, err)
	state(t, f, n, fake.StateReady)

	if r, err := f.Deploy(ctx, n, drivers.Deployment{}); err != nil || r.Status != drivers.StatusInProgress {
		t.Fatalf("Deploy: %+v %v", r, err)
	}
	r, err = f.Recover(ctx, n.NodeRef, drivers.RecoveryAbort)
	mustDone(t, "abort deploying", r, err)
	state(t, f, n, fake.StateAllocated)
	r, err = f.ApplyNetworking(ctx, n)
	mustDone(t, "ApplyNetworking on Allocated", r, err)

	_, err = f.Recover(ctx, n.NodeRef, drivers.RecoveryMarkFixed)
	mustClass(t, "mark-fixed on Allocated", err, drivers.Permanent, "cannot mark-fixed")
	if err := f.SetState(n.MachineID, fake.StateBroken); err != nil {
		t.Fatal(err)
	}
	if err := f.SetState("nope", fake.StateBroken); err == nil {
		t.Error("SetState of an unknown machine worked")
	}
	r, err = f.Recover(ctx, n.NodeRef, drivers.RecoveryMarkFixed)
	mustDone(t, "mark-fixed", r, err)
	state(t, f, n, fake.StateReady)
	_, err = f.Recover(ctx, n.NodeRef, "reboot")
	mustClass(t, "unknown action", err, drivers.Permanent, `unknown recovery action "reboot"`)
	_, err = f.Recover(ctx, drivers.NodeRef{Name: "a", MachineID: "nope"}, drivers.RecoveryAbort)
	mustClass(t, "unknown machine", err, drivers.Permanent, "unknown machine")
}

// pollRecover calls Recover until it is no longer InProgress.
func pollRecover(t *testing.T, f *fake.Server, ref drivers.NodeRef, a drivers.Recovery) drivers.Result {
	t.Helper()
	for i := 0; i < 100; i++ {
		r, err := f.Recover(context.Background(), ref, a)
		if err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		if r.Status != drivers.StatusInProgress {
			return r
		}
	}
	t.Fatalf("%s: still in progress after 100 calls", a)
	return drivers.Result{}
}

func TestServerRecoverRescueTestDelete(t *testing.T) {
	ctx := context.Background()
	f := fake.NewServer(fake.Script{Polls: 2})
	n := node("a")
	for {
		m, r, err := f.IdentifyNode(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		n.MachineID = m.MachineID
		if r.Status == drivers.StatusDone {
			break
		}
	}
	if r := pollRecover(t, f, n.NodeRef, drivers.RecoveryTest); r.Status != drivers.StatusFailed {
		t.Errorf("test of a New machine: %+v, want Failed", r)
	}
	if r := pollRecover(t, f, n.NodeRef, drivers.RecoveryMarkBroken); r.Status != drivers.StatusFailed {
		t.Errorf("mark-broken of an unowned machine: %+v, want Failed", r)
	}
	for {
		r, err := f.Commission(ctx, n.NodeRef)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == drivers.StatusDone {
			break
		}
	}
	// Rescue and back.
	if r, _ := f.Recover(ctx, n.NodeRef, drivers.RecoveryRescue); r.Status != drivers.StatusInProgress {
		t.Errorf("rescue: %+v, want InProgress", r)
	}
	state(t, f, n, fake.StateEnteringRescue)
	mustDone(t, "rescue", pollRecover(t, f, n.NodeRef, drivers.RecoveryRescue), nil)
	state(t, f, n, fake.StateRescue)
	mustDone(t, "rescue again", pollRecover(t, f, n.NodeRef, drivers.RecoveryRescue), nil)
	mustDone(t, "exit-rescue", pollRecover(t, f, n.NodeRef, drivers.RecoveryExitRescue), nil)
	state(t, f, n, fake.StateReady)
	mustDone(t, "exit-rescue again", pollRecover(t, f, n.NodeRef, drivers.RecoveryExitRescue), nil)
	// Test once; asked again it does not run again, unless a fresh budget asks.
	mustDone(t, "test", pollRecover(t, f, n.NodeRef, drivers.RecoveryTest), nil)
	if r, _ := f.Recover(ctx, n.NodeRef, drivers.RecoveryTest); r.Status != drivers.StatusDone {
		t.Errorf("test again: %+v, want Done at once", r)
	}
	fresh := n.NodeRef
	fresh.BudgetFrom = time.Now().Add(time.Millisecond)
	time.Sleep(2 * time.Millisecond)
	if r, _ := f.Recover(ctx, fresh, drivers.RecoveryTest); r.Status != drivers.StatusInProgress {
		t.Errorf("test with a fresh budget: %+v, want a new run", r)
	}
	mustDone(t, "test (fresh)", pollRecover(t, f, fresh, drivers.RecoveryTest), nil)
	// Delete; gone is Done.
	mustDone(t, "delete", pollRecover(t, f, n.NodeRef, drivers.RecoveryDelete), nil)
	mustDone(t, "delete again", pollRecover(t, f, n.NodeRef, drivers.RecoveryDelete), nil)
}

func TestEnlistingMachineIsNotReadyForSteps(t *testing.T) {
	ctx := context.Background()
	f := fake.NewServer(fake.Script{Polls: 2})
	m, r, err := f.IdentifyNode(ctx, node("a"))
	if err != nil || r.Status != drivers.StatusInProgress || m.MachineID == "" {
		t.Fatalf("IdentifyNode: %+v %+v %v", m, r, err)
	}
	_, err = f.Commission(ctx, drivers.NodeRef{Name: "a"})
	mustClass(t, "Commission while enlisting", err, drivers.Transient, "still enlisting")
}

func TestNetwork(t *testing.T) {
	ctx := context.Background()
	f := fake.NewNetwork(fake.Script{})
	if info, err := f.Probe(ctx); err != nil || !info.Reachable {
		t.Fatalf("Probe: %+v %v", info, err)
	}
	n := node("a")
	for _, p := range []drivers.Phase{drivers.PhaseProvisioning, drivers.PhaseProvisioning, drivers.PhaseProduction} {
		r, err := f.ConfigurePorts(ctx, n, p)
		mustDone(t, string(p), r, err)
		if f.Phase("a") != p {
			t.Errorf("Phase: %q, want %q", f.Phase("a"), p)
		}
	}
	_, err := f.ConfigurePorts(ctx, n, "staging")
	mustClass(t, "unknown phase", err, drivers.Permanent, `unknown phase "staging"`)
	if f.Phase("b") != "" {
		t.Error("Phase of an unconfigured node")
	}
}

func TestCalls(t *testing.T) {
	ctx := context.Background()
	f := fake.NewNetwork(fake.Script{FailAt: "Probe"})
	_, _ = f.Probe(ctx)
	_, _ = f.ConfigurePorts(ctx, node("a"), drivers.PhaseProduction)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = f.ConfigurePorts(cctx, node("b"), drivers.PhaseProduction)
	want := []fake.Call{{"Probe", ""}, {"ConfigurePorts", "a"}, {"ConfigurePorts", "b"}}
	got := f.Calls()
	if !slices.Equal(got, want) {
		t.Fatalf("Calls: %v, want %v", got, want)
	}
	got[0].Method = "changed"
	if f.Calls()[0].Method != "Probe" {
		t.Error("Calls does not return a copy")
	}

	o := fake.NewOOB(fake.Script{})
	_, _ = o.PowerOn(ctx, bmc)
	_, _ = o.PowerStatus(ctx, bmc)
	if got, want := o.Calls(), []fake.Call{{"PowerOn", "n1"}, {"PowerStatus", "n1"}}; !slices.Equal(got, want) {
		t.Errorf("OOB Calls: %v, want %v", got, want)
	}
	s := fake.NewServer(fake.Script{})
	_, _ = s.ProbeSite(ctx)
	_, _, _ = s.IdentifyNode(ctx, node("a"))
	_, _ = s.Owned(ctx)
	if got, want := s.Calls(), []fake.Call{{"ProbeSite", ""}, {"IdentifyNode", "a"}, {"Owned", ""}}; !slices.Equal(got, want) {
		t.Errorf("Server Calls: %v, want %v", got, want)
	}
}

func TestContext(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	// The context is checked before the injected failure and the state.
	o := fake.NewOOB(fake.Script{FailAt: "PowerOn", FailClass: drivers.Permanent})
	if _, err := o.PowerOn(cancelled, bmc); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := o.PowerOn(expired, bmc); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("expired: %v", err)
	}
	bad := bmc
	bad.Password = drivers.NewSecret("wrong")
	if _, err := o.Probe(cancelled, bad); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Probe: %v", err)
	}
	s := fake.NewServer(fake.Script{})
	if _, _, err := s.IdentifyNode(cancelled, node("a")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled IdentifyNode: %v", err)
	}
	if len(s.Machines()) != 0 {
		t.Error("a cancelled IdentifyNode enlisted a machine")
	}
}

func TestBlock(t *testing.T) {
	o := fake.NewOOB(fake.Script{Block: true})
	s := fake.NewServer(fake.Script{Block: true})
	n := fake.NewNetwork(fake.Script{Block: true})
	calls := map[string]func(context.Context) error{
		"Probe":          func(ctx context.Context) error { _, err := o.Probe(ctx, bmc); return err },
		"PowerOn":        func(ctx context.Context) error { _, err := o.PowerOn(ctx, bmc); return err },
		"IdentifyNode":   func(ctx context.Context) error { _, _, err := s.IdentifyNode(ctx, node("a")); return err },
		"Status":         func(ctx context.Context) error { _, err := s.Status(ctx, nil); return err },
		"Recover":        func(ctx context.Context) error { _, err := s.Recover(ctx, drivers.NodeRef{}, ""); return err },
		"ConfigurePorts": func(ctx context.Context) error { _, err := n.ConfigurePorts(ctx, node("a"), "x"); return err },
	}
	var wg sync.WaitGroup
	for name, call := range calls {
		wg.Go(func() {
			const d = 30 * time.Millisecond
			start := time.Now() // before the deadline starts: the call can't return before d of it
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			err := call(ctx)
			el := time.Since(start)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s: %v, want DeadlineExceeded", name, err)
			}
			if el < d || el > d+time.Second {
				t.Errorf("%s returned after %v, want about %v", name, el, d)
			}
		})
	}
	// A blocked call does not hold the lock.
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		_, _ = o.PowerOff(ctx, bmc)
		_ = o.Calls()
		_ = o.Power(bmc.Address)
	})
	wg.Wait()
	if len(s.Machines()) != 0 {
		t.Error("a blocked IdentifyNode enlisted a machine")
	}
}

func TestScriptFromConfig(t *testing.T) {
	s, err := fake.ScriptFromConfig(drivers.Config{Settings: map[string]string{
		"failAt": "Deploy", "failClass": "needs-intervention", "failResult": "true",
		"failTimes": "2", "polls": "4", "block": "false",
	}, Secrets: map[string]drivers.Secret{"apiKey": drivers.NewSecret("k")}})
	want := fake.Script{FailAt: "Deploy", FailClass: drivers.NeedsIntervention, FailResult: true, FailTimes: 2, Polls: 4}
	if err != nil || !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v, %v; want %+v", s, err, want)
	}
	if s, err := fake.ScriptFromConfig(drivers.Config{}); err != nil || !reflect.DeepEqual(s, fake.Script{}) {
		t.Fatalf("empty config: %+v, %v", s, err)
	}
	if s, err := fake.ScriptFromConfig(drivers.Config{Settings: map[string]string{"block": "true"}}); err != nil || !s.Block {
		t.Fatalf("block: %+v, %v", s, err)
	}
	for _, tc := range []struct{ key, value, want string }{
		{"failat", "Deploy", `unknown setting "failat"`},
		{"failAt", "Deplyo", `setting failAt: unknown method "Deplyo"`},
		{"failClass", "fatal", `setting failClass: "fatal" is not one of`},
		{"failResult", "yes", `setting failResult: "yes" is not true or false`},
		{"block", "1", `setting block: "1"`},
		{"failTimes", "-1", `setting failTimes: "-1" is not a count`},
		{"polls", "many", `setting polls: "many" is not a count`},
	} {
		cfg := drivers.Config{Settings: map[string]string{tc.key: tc.value, "polls": "1"}}
		if tc.key == "polls" {
			cfg.Settings["polls"] = tc.value
		}
		_, err := fake.ScriptFromConfig(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: %v, want an error containing %q", tc.key, tc.value, err, tc.want)
		}
		if drivers.Classify(err) != drivers.Permanent {
			t.Errorf("%s=%s: class %q", tc.key, tc.value, drivers.Classify(err))
		}
	}
}

func TestFactories(t *testing.T) {
	ctx := context.Background()
	cfg := drivers.Config{Settings: map[string]string{"failAt": "Probe", "failClass": "permanent"}}
	o, err := fake.OOBFactory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Probe(ctx, bmc); drivers.Classify(err) != drivers.Permanent {
		t.Errorf("OOB Probe: %v", err)
	}
	n, err := fake.NetworkFactory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Probe(ctx); drivers.Classify(err) != drivers.Permanent {
		t.Errorf("Network Probe: %v", err)
	}
	s, err := fake.ServerFactory(drivers.Config{Settings: map[string]string{"polls": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, r, err := s.IdentifyNode(ctx, node("a")); err != nil || r.Status != drivers.StatusInProgress {
		t.Errorf("IdentifyNode: %+v %v", r, err)
	}
	bad := drivers.Config{Settings: map[string]string{"nope": "1"}}
	if _, err := fake.OOBFactory(bad); err == nil {
		t.Error("OOBFactory accepted a bad config")
	}
	if _, err := fake.ServerFactory(bad); err == nil {
		t.Error("ServerFactory accepted a bad config")
	}
	if _, err := fake.NetworkFactory(bad); err == nil {
		t.Error("NetworkFactory accepted a bad config")
	}
}

// TestConcurrency is meant for -race: many goroutines on every fake.
func TestConcurrency(t *testing.T) {
	ctx := context.Background()
	o := fake.NewOOB(fake.Script{Polls: 2})
	s := fake.NewServer(fake.Script{Polls: 2})
	nw := fake.NewNetwork(fake.Script{FailAt: "Probe", FailTimes: 5})
	var wg sync.WaitGroup
	ids := make([]string, 16)
	for g := range 16 {
		wg.Go(func() {
			b := bmc
			b.Address = fmt.Sprintf("10.0.0.%d", g%4)
			n := node(fmt.Sprintf("n%d", g%4))
			for range 20 {
				_, _ = o.PowerOn(ctx, b)
				_, _ = o.PowerCycle(ctx, b)
				_, _ = o.PowerStatus(ctx, b)
				_, _ = o.SetBootDevice(ctx, b, drivers.BootDevice{Device: "pxe"})
				_, _ = o.PowerOff(ctx, b)
				o.Calls()
				m, _, err := s.IdentifyNode(ctx, n)
				if err != nil {
					t.Errorf("IdentifyNode: %v", err)
					return
				}
				ids[g] = m.MachineID
				_, _ = s.Commission(ctx, n.NodeRef)
				_, _ = s.ApplyNetworking(ctx, n)
				_, _ = s.Deploy(ctx, n, drivers.Deployment{})
				_, _ = s.Status(ctx, []drivers.NodeRef{n.NodeRef})
				_, _ = s.Owned(ctx)
				_, _ = s.Release(ctx, n.NodeRef, drivers.EraseNone)
				s.Machines()
				_, _ = nw.Probe(ctx)
				_, _ = nw.ConfigurePorts(ctx, n, drivers.PhaseProduction)
				nw.Phase(n.Name)
			}
		})
	}
	wg.Wait()
	// Concurrent identification enlists each node once.
	if got := len(s.Machines()); got != 4 {
		t.Errorf("%d machines, want 4", got)
	}
	for g := range 16 {
		if ids[g] != ids[g%4] {
			t.Errorf("goroutines %d and %d got machines %s and %s for the same node", g, g%4, ids[g], ids[g%4])
		}
	}
	failed := 0
	for _, c := range nw.Calls() {
		if c.Method == "Probe" {
			failed++
		}
	}
	if failed != 16*20 {
		t.Errorf("%d Probe calls recorded, want %d", failed, 16*20)
	}
}

// TestServerInventory: a plausible server's facts, a NIC per device alias
// and a disk per storage device; SetHardware's facts for an odd machine,
// the NICs still the node's.
func TestServerInventory(t *testing.T) {
	ctx := t.Context()
	f := fake.NewServer(fake.Script{})
	n := node("a")
	n.Interfaces = []drivers.Interface{{Name: "bond0", Devices: []drivers.Device{{Alias: "nic0", Bus: "pci", Address: "0000:3b:00.0"}, {Alias: "nic1"}}}}
	n.Storage.Devices = []drivers.StorageDevice{{Device: drivers.Device{Alias: "boot", Bus: "scsi", Address: "2:0.0.0"}}, {Device: drivers.Device{Alias: "data"}}}
	m, r, err := f.IdentifyNode(ctx, n)
	mustDone(t, "IdentifyNode", r, err)
	n.MachineID = m.MachineID
	inv, err := f.Inventory(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if inv.CPU.Threads == 0 || inv.MemoryMiB == 0 || inv.System.Vendor == "" || len(inv.GPUs) != 0 {
		t.Errorf("facts %+v", inv)
	}
	if len(inv.NICs) != 2 || inv.NICs[0].PCIAddress != "0000:3b:00.0" || inv.NICs[0].Driver == "" || !inv.NICs[1].LinkUp {
		t.Errorf("nics %+v", inv.NICs)
	}
	if len(inv.Disks) != 2 || inv.Disks[0].Alias != "boot" || inv.Disks[0].BusAddress != "2:0.0.0" || inv.Disks[1].SizeBytes <= 0 {
		t.Errorf("disks %+v", inv.Disks)
	}
	odd := drivers.Inventory{CPU: drivers.CPU{Model: "X", Sockets: 1, Cores: 8, Threads: 16}, MemoryMiB: 1024,
		GPUs:  []drivers.PCIDevice{{Model: "H100", Address: "0000:ca:00.0"}},
		NICs:  []drivers.NIC{{Driver: "ice", SpeedMbps: 10000, Neighbor: &drivers.Neighbor{Switch: "leaf", Port: "Ethernet1"}}},
		Disks: []drivers.Disk{{Name: "sda", SizeBytes: 1 << 30}}}
	f.SetHardware("a", odd)
	inv, err = f.Inventory(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if inv.MachineID != m.MachineID || inv.CPU != odd.CPU || len(inv.GPUs) != 1 || len(inv.Disks) != 1 || len(inv.NICs) != 2 {
		t.Errorf("with SetHardware: %+v", inv)
	}
	if nic := inv.NICs[0]; nic.Alias != "nic0" || nic.Driver != "ice" || nic.SpeedMbps != 10000 || nic.LinkUp || nic.Neighbor == nil || nic.MAC == "" {
		t.Errorf("nic0 with SetHardware: %+v", nic)
	}
	if inv.NICs[1].Driver != "fakenic" {
		t.Errorf("nic1 has no SetHardware details, keeps the defaults: %+v", inv.NICs[1])
	}
}
