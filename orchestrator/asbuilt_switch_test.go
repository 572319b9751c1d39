package orchestrator_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	gnmidrv "github.com/slipway-dev/slipway/drivers/network/gnmi"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	simgnmi "github.com/slipway-dev/slipway/sim/gnmi"
	"github.com/slipway-dev/slipway/sim/lab"
)

// gnmiFabricLab is the example with a fabric in the lab, its switches
// the lab's gNMI target (seeded with each cabled machine NIC as its
// port's LLDP neighbour), driven by the real gnmi driver; the Site is
// prepared.
func gnmiFabricLab(t *testing.T) (*design.Design, *labrun.Env, *orchestrator.Engine, *simgnmi.Target) {
	t.Helper()
	d := designtest.Example(t)
	designtest.Fabric(d, "gnmi", nil)
	var drv *gnmidrv.Driver
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) { c.Drivers.Network = drv })
	tg, err := env.Lab.StartGNMI(lab.GNMIOptions{Username: "admin", Password: "lab-switch-Password"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	settings, secrets := map[string]string{}, map[string]drivers.Secret{}
	for _, sw := range tg.Switches() {
		drivers.SwitchSettings(drivers.SwitchEndpoint{Name: sw, Address: tg.Addr(), Username: "admin",
			Password: drivers.NewSecret("lab-switch-Password")}, settings, secrets)
	}
	if drv, err = gnmidrv.Open(drivers.Config{Settings: settings, Secrets: secrets}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drv.Close() })
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	return d, env, e, tg
}

// labReleases counts the release operations the lab's MAAS accepted.
func labReleases(env *labrun.Env) int {
	n := 0
	for _, lc := range env.Lab.MAAS.Lifecycle() {
		n += lc.Releases
	}
	return n
}

// TestAsBuiltSwitchSeesSwappedCables: the switch's LLDP table (the lab's
// gNMI target) disagrees with the design while each machine's own
// inventory does not: two NICs of node A have their cables swapped, node
// B's and node C's cables of one alias are swapped between them, and a
// port of node D hears a device of no node. A, B, C and D fail at
// as-built, each naming its switch ports, what each sees and what the
// design cables there, although A's hardware profile expects nothing of
// LLDP; their machines are not released (the lab's MAAS counts no
// release); every other node, cabled as designed, deploys. With the
// cables put back, a retry deploys them.
func TestAsBuiltSwitchSeesSwappedCables(t *testing.T) {
	t.Parallel()
	d, env, e, tg := gnmiFabricLab(t)
	cables := cabledPorts(d)
	want := map[string][]string{} // node → words its reason must hold
	for p := range swapCables(t, env, d, tg) {
		n, alias, _ := strings.Cut(cables[p], "/")
		want[n] = append(want[n], p.String()+" sees "+n+"'s ", "the design cables "+n+"'s "+alias+" there")
	}
	a := slices.Collect(mapsKeys(want))[0]
	if hw := d.Nodes[a].Spec.Hardware; hw != nil && hw.Expect != nil && hw.Expect.LLDP {
		t.Fatalf("node %s's hardware profile expects LLDP: the test needs one that does not", a)
	}
	others := slices.DeleteFunc(d.NodeNames(), func(n string) bool { return n == a || len(d.Nodes[n].Spec.Cabling) == 0 })
	if len(others) < 3 {
		t.Fatalf("the example has %d other cabled nodes, the test needs 3", len(others))
	}
	b, c, dd := others[0], others[1], others[2]
	alias := slices.Sorted(mapsKeys(d.Nodes[b].Spec.Cabling))[0]
	pb, pc := d.Nodes[b].Spec.Cabling[alias], d.Nodes[c].Spec.Cabling[alias]
	setNeighbor(t, tg, pb, labNeighbor(t, env, c, alias))
	setNeighbor(t, tg, pc, labNeighbor(t, env, b, alias))
	want[b] = []string{pb.Switch + ":" + pb.Port + " sees " + c + "'s " + alias + " (", "the design cables " + b + "'s " + alias + " there"}
	want[c] = []string{pc.Switch + ":" + pc.Port + " sees " + b + "'s " + alias + " (", "the design cables " + c + "'s " + alias + " there"}
	pd := d.Nodes[dd].Spec.Cabling[alias]
	setNeighbor(t, tg, pd, &simgnmi.Neighbor{ChassisID: "aa:bb:cc:dd:ee:ff", SystemName: "mystery-host", PortID: "eth9"})
	want[dd] = []string{pd.Switch + ":" + pd.Port + " sees mystery-host chassis aa:bb:cc:dd:ee:ff port eth9 (not a node of the design), the design cables " + dd + "'s " + alias + " there"}

	task, res := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test"}, record.TaskPartiallySucceeded)
	for _, r := range res {
		words, bad := want[r.Node]
		switch {
		case bad && (r.Outcome != record.OutcomeFailed || r.Stage != record.StageAsBuilt):
			t.Errorf("%s, miscabled at the switch: %s at %s (%s), want failed at as-built", r.Node, r.Outcome, r.Stage, r.Reason)
		case !bad && (r.Outcome != record.OutcomeSucceeded || r.Stage != record.StageDeployed):
			t.Errorf("%s, cabled as designed: %s at %s (%s), want deployed", r.Node, r.Outcome, r.Stage, r.Reason)
		}
		for _, w := range words {
			if !strings.Contains(r.Reason, w) {
				t.Errorf("%s: reason %q lacks %q", r.Node, r.Reason, w)
			}
		}
	}
	if n := labReleases(env); n != 0 {
		t.Errorf("the lab's MAAS accepted %d release(s), want none", n)
	}
	if err := env.Lab.SeedGNMI(tg); err != nil { // the cables put back: each port hears its machine's NIC again
		t.Fatal(err)
	}
	res2 := applyVerb(t, e, task.ID, record.VerbRetry, record.TaskSucceeded)
	for n := range want {
		if r := res2[n]; r.Outcome != record.OutcomeSucceeded || r.Stage != record.StageDeployed {
			t.Errorf("%s, its cables put back, after a retry: %s at %s (%s)", n, r.Outcome, r.Stage, r.Reason)
		}
	}
}

// labNeighbor is what a switch port hears of node's NIC alias, as the
// lab seeds its gNMI target (sim/lab SeedGNMI).
func labNeighbor(t *testing.T, env *labrun.Env, node, alias string) *simgnmi.Neighbor {
	t.Helper()
	for _, nic := range env.Lab.Machine(node).Hardware.NICs {
		if nic.Alias == alias {
			return &simgnmi.Neighbor{ChassisID: nic.MAC, SystemName: node, PortID: nic.Alias, PortDescr: nic.Name}
		}
	}
	t.Fatalf("the lab's machine %s has no NIC %s", node, alias)
	return nil
}

func setNeighbor(t *testing.T, tg *simgnmi.Target, c design.Cable, nb *simgnmi.Neighbor) {
	t.Helper()
	if err := tg.SetNeighbor(c.Switch, c.Port, nb); err != nil {
		t.Fatal(err)
	}
}

// asBuiltEvents are a node's as-built events whose message holds s.
func asBuiltEvents(t *testing.T, e *orchestrator.Engine, node, s string) []record.Event {
	t.Helper()
	evs, err := e.Events(t.Context(), 0, 0, "", node)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(evs, func(ev record.Event) bool {
		return ev.Stage != record.StageAsBuilt || !strings.Contains(ev.Message, s)
	})
}

// nodeSwitches are the switches each node is cabled to.
func nodeSwitches(d *design.Design) map[string][]string {
	out := map[string][]string{}
	for name, n := range d.Nodes {
		for _, c := range n.Spec.Cabling {
			if !slices.Contains(out[name], c.Switch) {
				out[name] = append(out[name], c.Switch)
			}
		}
	}
	return out
}

// TestAsBuiltSwitchWithoutLLDP: switches that report no LLDP neighbour
// (the fake's, as Open vSwitch) are no cabling mismatch: every node
// deploys, and its as-built stage says once per switch that the switch
// reports no LLDP.
func TestAsBuiltSwitchWithoutLLDP(t *testing.T) {
	t.Parallel()
	d, e, _, _ := fabricLab(t, "")
	deployAll(t, e)
	checked := 0
	for node, sws := range nodeSwitches(d) {
		for _, sw := range sws {
			if evs := asBuiltEvents(t, e, node, "switch "+sw+" reports no LLDP"); len(evs) != 1 {
				t.Errorf("node %s: %d as-built events saying switch %s reports no LLDP, want 1", node, len(evs), sw)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no cabled node in the example with a fabric")
	}
}

// readsRefused is the fake network driver whose switch stops answering
// reads of one node's ports after its provisioning ports were read back,
// until the node's production ports are configured: the as-built stage's
// LLDP read in between is refused, or never answered when hang is set
// (it returns when the caller's context ends).
type readsRefused struct {
	*fake.Network
	ports   map[drivers.SwitchPort]bool // the node's
	node    string
	hang    bool
	mu      sync.Mutex
	state   int // 0: up; 1: down (after the first read); 2: up again
	refused int
}

func (s *readsRefused) ReadPorts(ctx context.Context, ports []drivers.SwitchPort) ([]drivers.PortState, error) {
	s.mu.Lock()
	mine := slices.ContainsFunc(ports, func(p drivers.SwitchPort) bool { return s.ports[p] })
	if mine && s.state == 1 {
		s.refused++
		s.mu.Unlock()
		if s.hang {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, drivers.Errorf(drivers.Transient, "switch %s: connection timed out", ports[0].Switch)
	}
	if mine && s.state == 0 {
		s.state = 1
	}
	s.mu.Unlock()
	return s.Network.ReadPorts(ctx, ports)
}

func (s *readsRefused) ConfigurePorts(ctx context.Context, n drivers.Node, p drivers.Phase) (drivers.Result, error) {
	if n.Name == s.node && p == drivers.PhaseProduction {
		s.mu.Lock()
		s.state = 2
		s.mu.Unlock()
	}
	return s.Network.ConfigurePorts(ctx, n, p)
}

// TestAsBuiltSwitchDown: a switch that does not answer the as-built
// stage's LLDP read (refusing it, or never answering: the read gives up
// after its bound) leaves that check unmade, said in an event naming the
// switch; the node is not failed for it (it deploys) and nothing is
// released (the lab's MAAS counts no release).
func TestAsBuiltSwitchDown(t *testing.T) {
	t.Parallel()
	for _, hang := range []bool{false, true} {
		t.Run(map[bool]string{false: "refused", true: "hangs"}[hang], func(t *testing.T) {
			t.Parallel()
			switchDown(t, hang)
		})
	}
}

func switchDown(t *testing.T, hang bool) {
	d := designtest.Example(t)
	designtest.Fabric(d, "fake", nil)
	node := ""
	for name := range nodeSwitches(d) {
		if node == "" || name < node {
			node = name
		}
	}
	sw := &readsRefused{Network: fake.NewNetwork(fake.Script{}), node: node, hang: hang, ports: map[drivers.SwitchPort]bool{}}
	for _, c := range d.Nodes[node].Spec.Cabling {
		sw.ports[drivers.SwitchPort{Switch: c.Switch, Port: c.Port}] = true
	}
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) { c.Drivers.Network = sw })
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	deployAll(t, e)
	sw.mu.Lock()
	refused := sw.refused
	sw.mu.Unlock()
	if refused == 0 {
		t.Fatalf("the switch refused no read of node %s's ports: the as-built stage did not read them", node)
	}
	for _, s := range nodeSwitches(d)[node] {
		if evs := asBuiltEvents(t, e, node, "switch "+s+" did not answer"); len(evs) != 1 || evs[0].Level != "warn" {
			t.Errorf("node %s: as-built events saying switch %s did not answer: %+v, want one warning", node, s, evs)
		}
	}
	if n := labReleases(env); n != 0 {
		t.Errorf("the lab's MAAS accepted %d release(s), want none", n)
	}
}
