package orchestrator_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// callsOf is every ConfigurePorts call the switch saw for node, each as
// phase:MAAS state of the machine at that moment.
func callsOf(sw *labSwitch, node string) []string {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	var out []string
	for _, c := range sw.calls {
		if c.node == node {
			out = append(out, string(c.phase)+":"+orNone(c.maas))
		}
	}
	return out
}

// maasOps is how many requests of kind ("POST rescue_mode") every
// region of the lab's MAAS answered (the lab's own count).
func maasOps(env *labrun.Env, kind string) int {
	n := 0
	for _, r := range env.Lab.Regions() {
		n += r.MAAS.Stats().ByKind()[kind]
	}
	return n
}

// labSwitchLab is a fabric lab's engine, switch and design.
type labSwitchLab struct {
	e  *orchestrator.Engine
	sw *labSwitch
	d  *design.Design
}

// deployedOne deploys the first cabled node of a fabric lab; the switch
// saw provisioning then production.
func deployedOne(t *testing.T) (*labrun.Env, *labSwitchLab, string) {
	t.Helper()
	env, e, sw, d, cabled := fabricEnv(t)
	node := cabled[0]
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	checkPorts(t, sw, d, node, drivers.PhaseProduction)
	return env, &labSwitchLab{e: e, sw: sw, d: d}, node
}

var (
	deployedState = maas.StatusName(maas.StatusDeployed)
	prodCalls     = []string{"provisioning:(none)", "production:" + maas.StatusName(maas.StatusDeployed)}
)

// wantCalls checks the switch's calls for node after its deploy
// (provisioning before MAAS knew the machine, or while it was New, then
// production) are followed by more.
func wantCalls(t *testing.T, sw *labSwitch, node string, more ...string) {
	t.Helper()
	got := callsOf(sw, node)
	alt := append([]string{"provisioning:New"}, prodCalls[1:]...)
	if !slices.Equal(got, append(slices.Clone(prodCalls), more...)) && !slices.Equal(got, append(alt, more...)) {
		t.Errorf("%s: switch calls (phase:MAAS state at the call) %v, want %v then %v", node, got, prodCalls, more)
	}
}

// TestRescuePortsAroundPXE: rescue_enter of a deployed node puts its
// switch ports in the provisioning phase while MAAS still has the
// machine Deployed (before MAAS is asked for rescue mode, which
// PXE-boots it), read back; rescue_exit puts them back in production
// once MAAS has the machine Deployed again, read back.
func TestRescuePortsAroundPXE(t *testing.T) {
	t.Parallel()
	env, l, node := deployedOne(t)
	run(t, l.e, record.Request{Action: record.ActionRescueEnter, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	if m, _ := dcMachine(env, node); m.Status != "Rescue mode" {
		t.Fatalf("%s: lab status %q after rescue_enter, want Rescue mode", node, m.Status)
	}
	wantCalls(t, l.sw, node, "provisioning:"+deployedState)
	checkPorts(t, l.sw, l.d, node, drivers.PhaseProvisioning)
	run(t, l.e, record.Request{Action: record.ActionRescueExit, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	if m, _ := dcMachine(env, node); m.Status != deployedState {
		t.Fatalf("%s: lab status %q after rescue_exit, want Deployed", node, m.Status)
	}
	wantCalls(t, l.sw, node, "provisioning:"+deployedState, "production:"+deployedState)
	checkPorts(t, l.sw, l.d, node, drivers.PhaseProduction)
	if got := maasOps(env, "POST rescue_mode"); got != 1 {
		t.Errorf("MAAS answered %d rescue_mode requests, want 1", got)
	}
}

// TestTestNodesPortsAroundPXE: test_nodes of a deployed node puts its
// ports in provisioning while MAAS still has the machine Deployed
// (before the tests, which PXE-boot it), and back in production once the
// tests passed and MAAS has it Deployed again.
func TestTestNodesPortsAroundPXE(t *testing.T) {
	t.Parallel()
	env, l, node := deployedOne(t)
	run(t, l.e, record.Request{Action: record.ActionTestNodes, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	if m, _ := dcMachine(env, node); m.Status != deployedState {
		t.Fatalf("%s: lab status %q after its tests, want Deployed", node, m.Status)
	}
	wantCalls(t, l.sw, node, "provisioning:"+deployedState, "production:"+deployedState)
	checkPorts(t, l.sw, l.d, node, drivers.PhaseProduction)
	if got := maasOps(env, "POST test"); got != 1 {
		t.Errorf("MAAS answered %d test requests, want 1", got)
	}
	if rec := nodeRecord(t, l.e, node); rec.LifecycleState() != record.LifecycleDeployed {
		t.Errorf("%s: lifecycle %q after its tests, want deployed", node, rec.LifecycleState())
	}
}

// TestRescueStopsWhenSwitchFails: a switch that does not answer the
// provisioning step fails rescue_enter (and test_nodes) at that step,
// naming the node, the stage, the switch and the next step, before
// anything reboots the machine: MAAS was never asked for rescue mode or
// tests, still has the machine Deployed, and the lab machine stayed on.
// Once the switch answers, retry enters rescue mode.
func TestRescueStopsWhenSwitchFails(t *testing.T) {
	t.Parallel()
	env, l, node := deployedOne(t)
	l.sw.set(func(s *labSwitch) { s.down[drivers.PhaseProvisioning] = true })
	var rescue string
	for _, a := range []record.Action{record.ActionTestNodes, record.ActionRescueEnter} {
		task, res := run(t, l.e, record.Request{Action: a, Requester: "test", Filter: only(node)}, record.TaskFailed)
		r := res[0]
		rescue = task.ID
		stage := map[record.Action]string{record.ActionTestNodes: "testing", record.ActionRescueEnter: "rescue"}[a]
		for _, want := range []string{"node " + node, "stage " + stage, "switch leaf-r01 does not answer", "not rebooted", "orchestrator retry " + task.ID} {
			if !strings.Contains(r.Reason, want) {
				t.Errorf("%s: reason lacks %q: %s", a, want, r.Reason)
			}
		}
	}
	if m, _ := dcMachine(env, node); m.Status != deployedState || m.Power != "on" {
		t.Errorf("%s: lab status %q power %q after the failed steps, want Deployed and on", node, m.Status, m.Power)
	}
	if rescues, tests := maasOps(env, "POST rescue_mode"), maasOps(env, "POST test"); rescues+tests != 0 {
		t.Errorf("MAAS was asked for rescue mode %d times and tests %d times, want neither", rescues, tests)
	}
	if m := env.Lab.Machine(node); m == nil || !m.IsPoweredOn() {
		t.Errorf("%s: the lab machine is off", node)
	}
	l.sw.set(func(s *labSwitch) { s.down[drivers.PhaseProvisioning] = false })
	if after := applyVerb(t, l.e, rescue, record.VerbRetry, record.TaskSucceeded); after[node].Stage != record.StageRescueMode {
		t.Errorf("after retry: %s at %s", after[node].Outcome, after[node].Stage)
	}
	checkPorts(t, l.sw, l.d, node, drivers.PhaseProvisioning)
}

// TestRescuePortsNotRepairedByReconcile: with the Site's switchport
// policy repair, reconciliation leaves the ports of a node in rescue as
// they are: neither repaired to production nor reported. First a rescue
// whose provisioning step failed (the switch did not keep one port: the
// machine still Deployed in MAAS, its other ports in provisioning), then
// the node in rescue mode after retry; rescue_exit puts the ports back in
// production, and a port changed on the switch after it is drift again,
// repaired.
func TestRescuePortsNotRepairedByReconcile(t *testing.T) {
	t.Parallel()
	e, sw, d, node := rescueLab(t, "repair")
	c := d.Nodes[node].Spec.Cabling["data0"]
	port := drivers.SwitchPort{Switch: c.Switch, Port: c.Port}
	prod, err := sw.ReadPorts(t.Context(), []drivers.SwitchPort{port})
	if err != nil {
		t.Fatal(err)
	}
	sw.set(func(s *labSwitch) { s.revert[port], s.revertIn = prod[0].PortConfig, drivers.PhaseProvisioning })
	task, res := run(t, e, record.Request{Action: record.ActionRescueEnter, Requester: "test", Filter: only(node)}, record.TaskFailed)
	if r := res[0]; r.Stage != record.StageRescue || !strings.Contains(r.Reason, "switch "+c.Switch+" port "+c.Port) {
		t.Fatalf("rescue with a port the switch did not keep: %s at %s: %s", r.Outcome, r.Stage, r.Reason)
	}
	noRepair := func(when string, calls int) {
		t.Helper()
		rep, open := reconcile(t, e)
		if _, ok := open[node+"/switchport"]; ok || slices.Contains(rep.Repaired, node+"/switchport") {
			t.Errorf("%s: switchport drift of %s open %v, repaired %v; want neither", when, node, keys(open), rep.Repaired)
		}
		if got := sw.phases(node); len(got) != calls || got[len(got)-1] != drivers.PhaseProvisioning {
			t.Errorf("%s: switch calls %v, want %d, the last provisioning (no repair)", when, got, calls)
		}
	}
	noRepair("a failed rescue", 3)
	sw.set(func(s *labSwitch) { delete(s.revert, port) })
	applyVerb(t, e, task.ID, record.VerbRetry, record.TaskSucceeded)
	checkPorts(t, sw, d, node, drivers.PhaseProvisioning)
	noRepair("in rescue mode", 4)
	checkPorts(t, sw, d, node, drivers.PhaseProvisioning)
	run(t, e, record.Request{Action: record.ActionRescueExit, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	checkPorts(t, sw, d, node, drivers.PhaseProduction)
	changeData0(t, sw, d, node)
	if rep, _ := reconcile(t, e); !slices.Contains(rep.Repaired, node+"/switchport") {
		t.Errorf("after rescue_exit, a changed port of %s was not repaired: %v", node, rep.Repaired)
	}
	checkPorts(t, sw, d, node, drivers.PhaseProduction)
}

// TestRescuePortsRepairRefused: a switchport drift of a deployed node
// found before its rescue (report policy) cannot be repaired while the
// node is in rescue mode: the repair is refused naming rescue and the
// ports stay in provisioning (read from the switch).
func TestRescuePortsRepairRefused(t *testing.T) {
	t.Parallel()
	e, sw, d, node := rescueLab(t, "")
	changeData0(t, sw, d, node)
	if _, open := reconcile(t, e); len(open) != 1 {
		t.Fatalf("a changed port: open drift %v, want %s's", keys(open), node)
	}
	run(t, e, record.Request{Action: record.ActionRescueEnter, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	if _, err := e.ResolveDrift(t.Context(), node, record.DriftSwitchport, record.ResolveRepair, "test", ""); err == nil || !strings.Contains(err.Error(), "rescue") {
		t.Errorf("repair of a node in rescue mode: %v, want refused naming rescue", err)
	}
	checkPorts(t, sw, d, node, drivers.PhaseProvisioning)
}

// rescueLab is a fabric lab with the Site's switchport policy ("" the
// default, report) and its first cabled node deployed.
func rescueLab(t *testing.T, policy string) (*orchestrator.Engine, *labSwitch, *design.Design, string) {
	t.Helper()
	d := designtest.Example(t)
	designtest.Fabric(d, "fake", nil)
	for _, s := range d.SiteNames() {
		if policy != "" {
			d.SiteNamed(s).Spec.Reconciliation.Policy = map[string]string{"switchport": policy}
		}
	}
	sw := newLabSwitch()
	env, err := labrun.Start(t.Context(), labrun.Options{Design: d, Store: memory.New(), TimeScale: 0.001, Seed: 7, Network: sw})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	sw.env = func() *labrun.Env { return env }
	e := engine(t, env)
	node := ""
	for _, name := range d.NodeNames() {
		if _, ok := d.Nodes[name].Spec.Cabling["data0"]; ok && node == "" {
			node = name
		}
	}
	if node == "" {
		t.Fatal("no node of the example has data0 cabled")
	}
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	return e, sw, d, node
}

// changeData0 puts node's data0 port on VLAN 3999 at the switch, behind
// Slipway's back.
func changeData0(t *testing.T, sw *labSwitch, d *design.Design, node string) {
	t.Helper()
	c := d.Nodes[node].Spec.Cabling["data0"]
	st, err := sw.ReadPorts(t.Context(), []drivers.SwitchPort{{Switch: c.Switch, Port: c.Port}})
	if err != nil || !st[0].Found {
		t.Fatalf("read %s:%s: %v", c.Switch, c.Port, err)
	}
	st[0].VLAN = 3999
	sw.SetPort(st[0].PortConfig)
}

// TestRescueExitAfterFailedPortsStep: a rescue that failed at its
// provisioning ports (the switch did not keep one; the others were moved)
// is given up with rescue_exit, which puts every port back in production
// (read from the switch); MAAS was never asked for rescue mode and keeps
// the machine Deployed.
func TestRescueExitAfterFailedPortsStep(t *testing.T) {
	t.Parallel()
	env, l, node := deployedOne(t)
	c := l.d.Nodes[node].Spec.Cabling["data0"]
	port := drivers.SwitchPort{Switch: c.Switch, Port: c.Port}
	prod, err := l.sw.ReadPorts(t.Context(), []drivers.SwitchPort{port})
	if err != nil {
		t.Fatal(err)
	}
	l.sw.set(func(s *labSwitch) { s.revert[port], s.revertIn = prod[0].PortConfig, drivers.PhaseProvisioning })
	run(t, l.e, record.Request{Action: record.ActionRescueEnter, Requester: "test", Filter: only(node)}, record.TaskFailed)
	run(t, l.e, record.Request{Action: record.ActionRescueExit, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	checkPorts(t, l.sw, l.d, node, drivers.PhaseProduction)
	wantCalls(t, l.sw, node, "provisioning:"+deployedState, "production:"+deployedState)
	if m, _ := dcMachine(env, node); m.Status != deployedState || maasOps(env, "POST rescue_mode") != 0 {
		t.Errorf("%s: lab status %q after %d rescue_mode requests, want Deployed after none", node, m.Status, maasOps(env, "POST rescue_mode"))
	}
}

// TestRedeployPortsThroughProvisioning: a redeploy of a deployed node
// releases its machine, then puts its ports in provisioning while MAAS
// has the machine Ready (after the release, before the deploy PXE-boots
// it), and in production once MAAS has it Deployed again.
func TestRedeployPortsThroughProvisioning(t *testing.T) {
	t.Parallel()
	env, l, node := deployedOne(t)
	run(t, l.e, record.Request{Action: record.ActionRedeployNodes, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	wantCalls(t, l.sw, node, "provisioning:"+maas.StatusName(maas.StatusReady), "production:"+deployedState)
	checkPorts(t, l.sw, l.d, node, drivers.PhaseProduction)
	if _, releases := maasOf(env); releases[nodeRecord(t, l.e, node).MachineID] != 1 {
		t.Errorf("%s: machine released %d times by the redeploy, want 1", node, releases[nodeRecord(t, l.e, node).MachineID])
	}
}

// TestDestroyEraseProvisioningFirst: destroying a deployed node with a
// disk erase (MAAS PXE-boots the machine into its ephemeral system to
// erase) puts its ports in provisioning while MAAS still has the machine
// Deployed, before the release, then in quarantine once it is Ready; a
// destroy without erase releases with the production ports (the machine
// only powers off) and quarantines them after. A switch failing the
// provisioning step fails the destroy before the release: MAAS keeps the
// machine Deployed, never released.
func TestDestroyEraseProvisioningFirst(t *testing.T) {
	t.Parallel()
	env, l, node := deployedOne(t)
	l.sw.set(func(s *labSwitch) { s.down[drivers.PhaseProvisioning] = true })
	destroy := func(erase string, want record.TaskStatus) (record.Task, []record.NodeResult) {
		return run(t, l.e, record.Request{Action: record.ActionDestroyNodes, Requester: "test", Filter: only(node),
			Options: &record.TaskOptions{Erase: erase}}, want)
	}
	task, res := destroy("quick", record.TaskFailed)
	id := nodeRecord(t, l.e, node).MachineID
	if r := res[0]; r.Stage != record.StageReleasing || !strings.Contains(r.Reason, "switch leaf-r01 does not answer") || !strings.Contains(r.Reason, "orchestrator retry "+task.ID) {
		t.Errorf("destroy with the switch down: %s at %s: %s", r.Outcome, r.Stage, r.Reason)
	}
	if states, releases := maasOf(env); states[id] != deployedState || releases[id] != 0 {
		t.Fatalf("machine %s: MAAS has it %q after %d releases, want Deployed, never released", id, states[id], releases[id])
	}
	l.sw.set(func(s *labSwitch) { s.down[drivers.PhaseProvisioning] = false })
	applyVerb(t, l.e, task.ID, record.VerbRetry, record.TaskSucceeded)
	calls := callsOf(l.sw, node)[len(prodCalls):] // after the deploy's: the failed attempts, the retry's
	want := append(slices.Repeat([]string{"provisioning:" + deployedState}, len(calls)-1), "quarantine:"+maas.StatusName(maas.StatusReady))
	if len(calls) < 3 || !slices.Equal(calls, want) {
		t.Errorf("%s: switch calls of the destroy %v, want provisioning (failed, then the retry's) while MAAS had it Deployed, then quarantine once Ready", node, calls)
	}
	checkPorts(t, l.sw, l.d, node, drivers.PhaseQuarantine)

	run(t, l.e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	before := len(callsOf(l.sw, node))
	destroy("none", record.TaskSucceeded)
	if got := callsOf(l.sw, node)[before:]; !slices.Equal(got, []string{"quarantine:" + maas.StatusName(maas.StatusReady)}) {
		t.Errorf("%s: destroy without erase: switch calls %v, want quarantine only, after the release", node, got)
	}
}

// TestTestNodesOfReleasedNodePorts: test_nodes of a destroyed node (its
// ports in quarantine, which its PXE boot cannot use) puts them in
// provisioning while MAAS has the machine Ready, before the tests, and
// back in quarantine after them (read from the switch).
func TestTestNodesOfReleasedNodePorts(t *testing.T) {
	t.Parallel()
	env, l, node := deployedOne(t)
	run(t, l.e, record.Request{Action: record.ActionDestroyNodes, Requester: "test", Filter: only(node),
		Options: &record.TaskOptions{Erase: "none"}}, record.TaskSucceeded)
	checkPorts(t, l.sw, l.d, node, drivers.PhaseQuarantine)
	ready := maas.StatusName(maas.StatusReady)
	run(t, l.e, record.Request{Action: record.ActionTestNodes, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	wantCalls(t, l.sw, node, "quarantine:"+ready, "provisioning:"+ready, "quarantine:"+ready)
	checkPorts(t, l.sw, l.d, node, drivers.PhaseQuarantine)
	if m, _ := dcMachine(env, node); m.Status != ready || maasOps(env, "POST test") != 1 {
		t.Errorf("%s: lab status %q after %d test requests, want Ready after 1", node, m.Status, maasOps(env, "POST test"))
	}
}

// TestFabricViewOfNodeInRescue: the fabric view shows a node in rescue
// mode in the provisioning phase, its ports ok as the switch holds them
// (rescue_enter put them there); after rescue_exit, production and ok.
func TestFabricViewOfNodeInRescue(t *testing.T) {
	t.Parallel()
	_, l, node := deployedOne(t)
	view := func(want drivers.Phase) {
		t.Helper()
		v, err := l.e.Fabric(t.Context(), l.d, node)
		if err != nil || len(v.Nodes) != 1 {
			t.Fatalf("fabric view of %s: %v, %d nodes", node, err, len(v.Nodes))
		}
		n := v.Nodes[0]
		for _, p := range n.Ports {
			if n.Phase != want || p.State != orchestrator.PortOK {
				t.Errorf("%s: view phase %s, port %s %s %v; want %s, ok", node, n.Phase, p.SwitchPort, p.State, p.Diff, want)
			}
		}
	}
	run(t, l.e, record.Request{Action: record.ActionRescueEnter, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	view(drivers.PhaseProvisioning)
	run(t, l.e, record.Request{Action: record.ActionRescueExit, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	view(drivers.PhaseProduction)
}
