package orchestrator_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// portCall is one ConfigurePorts call as the switch saw it, with the
// lab's MAAS state of the node's machine at that moment (the lab's own
// view, found by the machine's system ID, or before there is one by the
// node's boot MAC: "" when MAAS has no such machine).
type portCall struct {
	node  string
	phase drivers.Phase
	maas  string
}

// labSwitch is the fake network driver (the switches: it keeps every
// port as configured and reads them back) that also records each call
// with the lab's MAAS state, and can be told to fail a phase (a switch
// that does not answer) or to put a port back after configuring it (a
// switch that does not keep what it is told).
type labSwitch struct {
	*fake.Network
	env func() *labrun.Env

	mu       sync.Mutex
	calls    []portCall
	down     map[drivers.Phase]bool
	revert   map[drivers.SwitchPort]drivers.PortConfig
	revertIn drivers.Phase
	// holdIn: a call of this phase, once done, says so on held and
	// returns when release is closed.
	holdIn        drivers.Phase
	held, release chan struct{}
	// gone are switches the driver does not know (no longer in the
	// design it was built from): a call naming one fails Permanent.
	gone map[string]bool
}

func newLabSwitch() *labSwitch {
	return &labSwitch{Network: fake.NewNetwork(fake.Script{}), down: map[drivers.Phase]bool{}, revert: map[drivers.SwitchPort]drivers.PortConfig{}}
}

func (s *labSwitch) ConfigurePorts(ctx context.Context, n drivers.Node, p drivers.Phase) (drivers.Result, error) {
	s.mu.Lock()
	s.calls = append(s.calls, portCall{node: n.Name, phase: p, maas: s.maasState(n.MachineID, n.BootMAC)})
	down := s.down[p]
	var unknown string
	for _, in := range n.Interfaces {
		for _, d := range in.Devices {
			if s.gone[d.Switch] {
				unknown = d.Switch
			}
		}
	}
	s.mu.Unlock()
	if down {
		return drivers.Result{}, drivers.Errorf(drivers.Transient, "switch leaf-r01 does not answer at tcp:127.0.0.1:1: connection refused")
	}
	if unknown != "" {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "no switch %s in the driver's settings", unknown)
	}
	res, err := s.Network.ConfigurePorts(ctx, n, p)
	s.mu.Lock()
	hold, held, release := p == s.holdIn && s.held != nil, s.held, s.release
	s.mu.Unlock()
	if hold {
		held <- struct{}{}
		<-release
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p != s.revertIn {
		return res, err
	}
	for _, in := range n.Interfaces {
		for _, d := range in.Devices {
			if old, ok := s.revert[drivers.SwitchPort{Switch: d.Switch, Port: d.Port}]; ok {
				s.SetPort(old)
			}
		}
	}
	return res, err
}

func (s *labSwitch) maasState(id, mac string) string {
	if s.env == nil || s.env() == nil || id == "" && mac == "" {
		return ""
	}
	for _, r := range s.env().Lab.Regions() {
		for _, ms := range r.MAAS.Machines() {
			if id != "" && ms.SystemID == id || id == "" && slices.ContainsFunc(ms.MACs, func(m string) bool { return strings.EqualFold(m, mac) }) {
				return ms.Status
			}
		}
	}
	return ""
}

func (s *labSwitch) phases(node string) []drivers.Phase {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []drivers.Phase
	for _, c := range s.calls {
		if c.node == node {
			out = append(out, c.phase)
		}
	}
	return out
}

func (s *labSwitch) set(f func(s *labSwitch)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// fabricEnv is the example with a fabric (designtest.Fabric) in the lab,
// sw its switches; cabled are the nodes whose NICs are cabled, sorted.
func fabricEnv(t *testing.T) (*labrun.Env, *orchestrator.Engine, *labSwitch, *design.Design, []string) {
	t.Helper()
	d := designtest.Example(t)
	designtest.Fabric(d, "fake", nil)
	var cabled []string
	for _, name := range slices.Sorted(maps.Keys(d.Nodes)) {
		if len(d.Nodes[name].Spec.Cabling) > 0 {
			cabled = append(cabled, name)
		}
	}
	if len(cabled) < 2 {
		t.Fatalf("the example has %d cabled nodes, want 2 or more", len(cabled))
	}
	sw := newLabSwitch()
	sw.AddPorts("leaf-r01", "p9") // a port no node is cabled to
	env, err := labrun.Start(t.Context(), labrun.Options{Design: d, Store: memory.New(), TimeScale: 0.001, Seed: 7, Network: sw})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	sw.env = func() *labrun.Env { return env }
	return env, engine(t, env), sw, d, cabled
}

// maasOf is the lab's MAAS view of every machine by system ID: its
// state and how many releases it accepted.
func maasOf(env *labrun.Env) (map[string]string, map[string]int) {
	states, releases := map[string]string{}, map[string]int{}
	for _, r := range env.Lab.Regions() {
		for _, ms := range r.MAAS.Machines() {
			states[ms.SystemID] = ms.Status
		}
		for id, lc := range r.MAAS.Lifecycle() {
			releases[id] = lc.Releases
		}
	}
	return states, releases
}

// readPorts is what the switch says of node n's ports in phase's plan.
func checkPorts(t *testing.T, sw *labSwitch, d *design.Design, node string, phase drivers.Phase) {
	t.Helper()
	plan, err := driverspec.Ports(d, d.Nodes[node], phase)
	if err != nil || len(plan) == 0 {
		t.Fatalf("%s: %d ports planned for %s (%v)", node, len(plan), phase, err)
	}
	for _, p := range plan {
		st, err := sw.ReadPorts(t.Context(), []drivers.SwitchPort{p.SwitchPort})
		if err != nil || !st[0].Found || !p.Equal(st[0].PortConfig) {
			t.Errorf("%s: switch port %s after %s: %+v (%v), want %+v", node, p.SwitchPort, phase, st, err, p)
		}
	}
}

// The phases in order, each when the lab's MAAS says the machine is where
// the phase belongs: provisioning before MAAS commissions it (it does not
// know the machine yet, or has it New), production once MAAS has it
// Deployed and before the engine reports it deployed (the bootstrap
// stage), provisioning again before destroy releases it (MAAS still has
// it Deployed: the release erases its disks, a PXE boot), quarantine
// after destroy released it (Ready). The ports read back as planned; the
// unowned port p9 is never touched.
func TestPortPhasesInOrder(t *testing.T) {
	t.Parallel()
	_, e, sw, d, cabled := fabricEnv(t)
	node := cabled[0]
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	checkPorts(t, sw, d, node, drivers.PhaseProduction)
	run(t, e, record.Request{Action: record.ActionDestroyNodes, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	checkPorts(t, sw, d, node, drivers.PhaseQuarantine)
	want := []drivers.Phase{drivers.PhaseProvisioning, drivers.PhaseProduction, drivers.PhaseProvisioning, drivers.PhaseQuarantine}
	if got := sw.phases(node); !slices.Equal(got, want) {
		t.Fatalf("%s: phases %v, want %v", node, got, want)
	}
	sw.mu.Lock()
	var states []string
	for _, c := range sw.calls {
		states = append(states, string(c.phase)+":"+orNone(c.maas))
	}
	sw.mu.Unlock()
	wantStates := []string{"provisioning:(none)", "production:" + maas.StatusName(maas.StatusDeployed), "provisioning:" + maas.StatusName(maas.StatusDeployed), "quarantine:" + maas.StatusName(maas.StatusReady)}
	if !slices.Equal(states, wantStates) && !slices.Equal(states, append([]string{"provisioning:New"}, wantStates[1:]...)) {
		t.Errorf("MAAS states at each phase %v, want %v", states, wantStates)
	}
	st, err := sw.ReadPorts(t.Context(), []drivers.SwitchPort{{Switch: "leaf-r01", Port: "p9"}})
	if err != nil || st[0].VLAN != 1 || st[0].Enabled {
		t.Errorf("the unowned port p9 was touched: %+v %v", st, err)
	}
	evs, err := e.Events(t.Context(), 0, 0, "", node)
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, ev := range evs {
		if strings.Contains(ev.Message, "ports read back as planned") {
			read++
		}
	}
	if read != 4 {
		t.Errorf("%d events say the ports were read back, want 4 (one per phase, provisioning twice)", read)
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// A switch that does not keep a port as configured fails the stage,
// naming the node, the switch, the port, what differs and the next step;
// the machine stays deployed (not released); once the switch keeps it,
// retry deploys the node.
func TestPortReadBackMismatchFailsTheStage(t *testing.T) {
	t.Parallel()
	env, e, sw, d, cabled := fabricEnv(t)
	node := cabled[0]
	c := d.Nodes[node].Spec.Cabling["data0"]
	port := drivers.SwitchPort{Switch: c.Switch, Port: c.Port}
	sw.set(func(s *labSwitch) {
		s.revert[port] = drivers.PortConfig{SwitchPort: port, Mode: drivers.ModeAccess, VLAN: 1, Enabled: true}
		s.revertIn = drivers.PhaseProduction
	})
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	task, res := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(node)}, record.TaskFailed)
	r := res[0]
	states, releases := maasOf(env)
	id := nodeRecord(t, e, node).MachineID
	if states[id] != maas.StatusName(maas.StatusDeployed) || releases[id] != 0 {
		t.Errorf("machine %s of %s: MAAS has it %q after %d releases, want Deployed, never released", id, node, states[id], releases[id])
	}
	if r.Stage != record.StageBootstrap {
		t.Errorf("%s failed at %s, want bootstrap", node, r.Stage)
	}
	for _, want := range []string{"node " + node, "stage bootstrap", fmt.Sprintf("switch %s port %s", c.Switch, c.Port), "mode access, want trunk", "orchestrator retry " + task.ID} {
		if !strings.Contains(r.Reason, want) {
			t.Errorf("reason lacks %q: %s", want, r.Reason)
		}
	}
	sw.set(func(s *labSwitch) { delete(s.revert, port) })
	after := applyVerb(t, e, task.ID, record.VerbRetry, record.TaskSucceeded)
	if after[node].Stage != record.StageDeployed {
		t.Errorf("after retry: %s at %s", after[node].Outcome, after[node].Stage)
	}
	checkPorts(t, sw, d, node, drivers.PhaseProduction)
}

// A switch that does not answer fails the stage naming the switch and
// the next step, and the node's machine is not released for it: after
// deploy (production ports) MAAS keeps every machine Deployed, never
// released; in quarantine (destroy) the release stands and the node
// fails there, and retry, the switch back, puts the ports in quarantine
// without releasing again.
func TestSwitchDownFailsWithoutRelease(t *testing.T) {
	t.Parallel()
	env, e, sw, d, cabled := fabricEnv(t)
	nodes := cabled[:2]
	sw.set(func(s *labSwitch) { s.down[drivers.PhaseProduction] = true })
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	task, res := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(nodes...)}, record.TaskFailed)
	states, releases := maasOf(env)
	deployed := 0
	for _, r := range res {
		id := nodeRecord(t, e, r.Node).MachineID
		if states[id] == maas.StatusName(maas.StatusDeployed) && releases[id] == 0 {
			deployed++
		}
		for _, want := range []string{"node " + r.Node, "stage bootstrap", "switch leaf-r01 does not answer", "not released", "orchestrator retry " + task.ID} {
			if r.Stage != record.StageBootstrap || !strings.Contains(r.Reason, want) {
				t.Errorf("%s at %s: reason lacks %q: %s", r.Node, r.Stage, want, r.Reason)
			}
		}
	}
	if deployed != len(nodes) {
		t.Fatalf("MAAS has %d of the %d machines Deployed and never released, want all", deployed, len(nodes))
	}
	sw.set(func(s *labSwitch) { s.down[drivers.PhaseProduction] = false })
	applyVerb(t, e, task.ID, record.VerbRetry, record.TaskSucceeded)

	node := nodes[0]
	sw.set(func(s *labSwitch) { s.down[drivers.PhaseQuarantine] = true })
	destroy, res := run(t, e, record.Request{Action: record.ActionDestroyNodes, Requester: "test", Filter: only(node)}, record.TaskFailed)
	id := nodeRecord(t, e, node).MachineID
	states, releases = maasOf(env)
	if states[id] != maas.StatusName(maas.StatusReady) || releases[id] != 1 {
		t.Errorf("machine %s: MAAS has it %q after %d releases, want Ready after 1", id, states[id], releases[id])
	}
	if r := res[0]; r.Stage != record.StageReleasing || !strings.Contains(r.Reason, "the release stands") || !strings.Contains(r.Reason, "orchestrator retry "+destroy.ID) {
		t.Errorf("quarantine failure: %s at %s: %s", r.Outcome, r.Stage, r.Reason)
	}
	sw.set(func(s *labSwitch) { s.down[drivers.PhaseQuarantine] = false })
	if after := applyVerb(t, e, destroy.ID, record.VerbRetry, record.TaskSucceeded); after[node].Stage != record.StageReleased {
		t.Errorf("after retry: %s at %s", after[node].Outcome, after[node].Stage)
	}
	checkPorts(t, sw, d, node, drivers.PhaseQuarantine)
	if _, releases = maasOf(env); releases[id] != 1 {
		t.Errorf("machine %s released %d times, want once (retry put the ports in quarantine only)", id, releases[id])
	}
}

// Decommission puts the ports in quarantine after the release too, and
// deleting the machine from MAAS after it does not need the switch.
func TestDecommissionQuarantinesPorts(t *testing.T) {
	t.Parallel()
	env, e, sw, d, cabled := fabricEnv(t)
	node := cabled[1]
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	id := nodeRecord(t, e, node).MachineID
	run(t, e, record.Request{Action: record.ActionDecommissionNodes, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	if got := sw.phases(node); len(got) == 0 || got[len(got)-1] != drivers.PhaseQuarantine {
		t.Fatalf("%s: phases %v, want quarantine last", node, got)
	}
	sw.mu.Lock()
	last := sw.calls[len(sw.calls)-1]
	sw.mu.Unlock()
	if last.maas != maas.StatusName(maas.StatusReady) {
		t.Errorf("quarantine with machine %s %q in MAAS, want Ready (released first)", id, last.maas)
	}
	checkPorts(t, sw, d, node, drivers.PhaseQuarantine)
	if _, releases := maasOf(env); releases[id] != 1 {
		t.Errorf("machine %s released %d times, want 1", id, releases[id])
	}
}
