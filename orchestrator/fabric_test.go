package orchestrator_test

import (
	"context"
	"fmt"
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
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
	simgnmi "github.com/slipway-dev/slipway/sim/gnmi"
	"github.com/slipway-dev/slipway/sim/lab"
)

// lldpSwitches are the fake network driver's switches with LLDP
// neighbours on some ports and, when failing is set, one switch that does
// not answer.
type lldpSwitches struct {
	*fake.Network
	mu        sync.Mutex
	neighbors map[drivers.SwitchPort]*drivers.LLDPNeighbor
	failing   string
	asked     int // ports asked of ReadPorts
}

func (s *lldpSwitches) ReadPorts(ctx context.Context, ports []drivers.SwitchPort) ([]drivers.PortState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked += len(ports)
	for _, p := range ports {
		if p.Switch == s.failing {
			return nil, fmt.Errorf("switch %s: connection refused", p.Switch)
		}
	}
	out, err := s.Network.ReadPorts(ctx, ports)
	for i := range out {
		out[i].Neighbor = s.neighbors[ports[i]]
	}
	return out, err
}

// wrapped is a network driver in front of another that is no
// NetworkReader itself but hands out the one behind (serve's rebinding
// wrapper is one).
type wrapped struct{ n *lldpSwitches }

func (w wrapped) Probe(ctx context.Context) (drivers.NetworkInfo, error) { return w.n.Probe(ctx) }
func (w wrapped) ConfigurePorts(ctx context.Context, n drivers.Node, p drivers.Phase) (drivers.Result, error) {
	return w.n.ConfigurePorts(ctx, n, p)
}
func (w wrapped) Reader() (drivers.NetworkReader, bool) { return w.n, true }

func (s *lldpSwitches) set(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// fabricLab is the example with a fabric, deployed in the lab with the
// fake network driver (its ports the independent state).
func fabricLab(t *testing.T, policy string) (*design.Design, *orchestrator.Engine, *lldpSwitches, *labrun.Env) {
	t.Helper()
	d := designtest.Example(t)
	designtest.Fabric(d, "fake", nil)
	for _, s := range d.SiteNames() {
		if policy != "" {
			d.SiteNamed(s).Spec.Reconciliation.Policy = map[string]string{"switchport": policy}
		}
	}
	sw := &lldpSwitches{Network: fake.NewNetwork(fake.Script{}), neighbors: map[drivers.SwitchPort]*drivers.LLDPNeighbor{}}
	// As serve does, the engine gets the driver behind a wrapper that
	// hands out its read-back side (drivers.ReaderUnwrapper).
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) { c.Drivers.Network = wrapped{sw} })
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	return d, e, sw, env
}

// cabledPorts are the design's cables, by switch port (node and alias).
func cabledPorts(d *design.Design) map[drivers.SwitchPort]string {
	out := map[drivers.SwitchPort]string{}
	for name, n := range d.Nodes {
		for alias, c := range n.Spec.Cabling {
			out[drivers.SwitchPort{Switch: c.Switch, Port: c.Port}] = name + "/" + alias
		}
	}
	return out
}

// TestFabricView: the view lists every cable of the design once, under
// its switch and its node, in the node's phase (provisioning before the
// deploy, production after); ports read back as designed are ok, a port
// changed on the switch differs (words from the switch's state), LLDP
// neighbours are compared with the design, and a switch that does not
// answer is named while the others are read.
func TestFabricView(t *testing.T) {
	t.Parallel()
	d, e, sw, env := fabricLab(t, "")
	cables := cabledPorts(d)
	if len(cables) < 5 {
		t.Fatalf("the example with a fabric has %d cables; the test needs 5", len(cables))
	}
	v := fabricOf(t, e, d)
	for _, n := range v.Nodes {
		if n.Phase != drivers.PhaseProvisioning {
			t.Errorf("before the deploy, node %s is in phase %s", n.Node, n.Phase)
		}
	}
	deployAll(t, e)
	v = fabricOf(t, e, d)
	seen := map[drivers.SwitchPort]bool{}
	for _, s := range v.Switches {
		for _, p := range s.Ports {
			if seen[p.SwitchPort] || cables[p.SwitchPort] != p.Node+"/"+p.Alias || p.Switch != s.Name {
				t.Errorf("port %s (%s/%s) listed twice or not as cabled (%q)", p.SwitchPort, p.Node, p.Alias, cables[p.SwitchPort])
			}
			seen[p.SwitchPort] = true
			if p.Phase != drivers.PhaseProduction || p.State != orchestrator.PortOK {
				t.Errorf("deployed: port %s is %s in phase %s: %v", p.SwitchPort, p.State, p.Phase, p.Diff)
			}
			if !slices.Contains(s.VLANs, p.Desired.VLAN) && p.Desired.VLAN != 0 {
				t.Errorf("switch %s VLANs %v lack port %s's %d", s.Name, s.VLANs, p.Port, p.Desired.VLAN)
			}
		}
	}
	if len(seen) != len(cables) {
		t.Fatalf("the view lists %d ports, the design cables %d", len(seen), len(cables))
	}
	ports := slices.SortedFunc(func(yield func(drivers.SwitchPort) bool) {
		for p := range cables {
			if !yield(p) {
				return
			}
		}
	}, func(a, b drivers.SwitchPort) int { return strings.Compare(a.String(), b.String()) })
	own, other, stranger, changed, byMAC := ports[0], ports[1], ports[2], ports[3], ports[4]
	macNode, macAlias, _ := strings.Cut(cables[byMAC], "/")
	inv, ok, err := orchestrator.NodeInventory(t.Context(), env.Store, macNode)
	if err != nil || !ok {
		t.Fatalf("no inventory of %s: %v", macNode, err)
	}
	var mac string
	for _, nic := range inv.NICs {
		if nic.Alias == macAlias {
			mac = strings.ToUpper(nic.MAC)
		}
	}
	ownNode, _, _ := strings.Cut(cables[own], "/")
	var otherNode string
	for name := range d.Nodes {
		if c, _, _ := strings.Cut(cables[other], "/"); name != c {
			otherNode = name
		}
	}
	st := readPort(t, sw, changed)
	st.VLAN = 3999
	sw.SetPort(st.PortConfig) // behind Slipway's back
	sw.set(func() {
		sw.neighbors[own] = &drivers.LLDPNeighbor{SystemName: ownNode + ".example.net", PortID: "eth0"}
		sw.neighbors[other] = &drivers.LLDPNeighbor{SystemName: otherNode}
		sw.neighbors[stranger] = &drivers.LLDPNeighbor{ChassisID: "aa:bb:cc:dd:ee:ff"}
		sw.neighbors[byMAC] = &drivers.LLDPNeighbor{ChassisID: "host-id", PortID: mac}
	})
	v = fabricOf(t, e, d)
	got := portsOf(v)
	if p := got[changed]; p.State != orchestrator.PortDiffers || !slices.Contains(p.Diff, fmt.Sprintf("vlan 3999, want %d", p.Desired.VLAN)) {
		t.Errorf("changed port %s: state %s, diff %v", changed, p.State, p.Diff)
	}
	if p := got[own]; !strings.HasPrefix(p.LLDP, "cabled as designed") {
		t.Errorf("port %s with its own node as neighbour: %q", own, p.LLDP)
	}
	if p := got[other]; !strings.Contains(p.LLDP, "is node "+otherNode) || !strings.Contains(p.LLDP, "design says node "+p.Node) {
		t.Errorf("port %s with node %s as neighbour: %q", other, otherNode, p.LLDP)
	}
	if p := got[stranger]; !strings.Contains(p.LLDP, "not a node of the design") {
		t.Errorf("port %s with an unknown neighbour: %q", stranger, p.LLDP)
	}
	if p := got[byMAC]; mac == "" || p.LLDP != "cabled as designed (MAC "+mac+" of NIC "+macAlias+")" {
		t.Errorf("port %s with %s's NIC %s (%s) as neighbour: %q", byMAC, macNode, macAlias, mac, p.LLDP)
	}
	if p := got[changed]; p.LLDP != "no neighbour" {
		t.Errorf("port %s without a neighbour: %q", changed, p.LLDP)
	}
	sw.set(func() { sw.failing = own.Switch })
	v = fabricOf(t, e, d)
	for _, s := range v.Switches {
		for _, p := range s.Ports {
			if unread := s.Name == own.Switch; unread != (p.State == orchestrator.PortUnread) {
				t.Errorf("switch %s failing: port %s of switch %s is %s", own.Switch, p.Port, s.Name, p.State)
			}
		}
		if (s.Name == own.Switch) != strings.Contains(s.Error, "connection refused") {
			t.Errorf("switch %s: error %q", s.Name, s.Error)
		}
	}
}

func fabricOf(t *testing.T, e *orchestrator.Engine, d *design.Design, nodes ...string) orchestrator.FabricView {
	t.Helper()
	v, err := e.Fabric(t.Context(), d, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Read {
		t.Fatalf("the fake network driver reads ports, the view says %q", v.ReadNote)
	}
	return v
}

func portsOf(v orchestrator.FabricView) map[drivers.SwitchPort]orchestrator.FabricPort {
	out := map[drivers.SwitchPort]orchestrator.FabricPort{}
	for _, n := range v.Nodes {
		for _, p := range n.Ports {
			out[p.SwitchPort] = p
		}
	}
	return out
}

// readPort is a port as the fake switch holds it (not through the engine).
func readPort(t *testing.T, sw *lldpSwitches, p drivers.SwitchPort) drivers.PortState {
	t.Helper()
	st, err := sw.Network.ReadPorts(t.Context(), []drivers.SwitchPort{p})
	if err != nil || len(st) != 1 || !st[0].Found {
		t.Fatalf("read %s from the fake switch: %v %+v", p, err, st)
	}
	return st[0]
}

// wantPorts checks every cabled port of node reads back from the fake
// switch as the design's production configuration.
func wantPorts(t *testing.T, d *design.Design, sw *lldpSwitches, node string) {
	t.Helper()
	for alias, c := range d.Nodes[node].Spec.Cabling {
		p := drivers.SwitchPort{Switch: c.Switch, Port: c.Port}
		got := readPort(t, sw, p)
		want := portsOf(orchestrator.FabricView{Nodes: []orchestrator.FabricNode{fabricNode(t, d, node)}})[p].Desired
		if !want.Equal(got.PortConfig) {
			t.Errorf("node %s %s (%s): the switch holds %+v, want %+v: %v", node, alias, p, got.PortConfig, want, want.Diff(got.PortConfig))
		}
	}
}

// TestSwitchportDrift: a port changed on the switch behind Slipway's back
// is one switchport drift record of its node (report policy), kept
// however many runs see it with one detected event; resolving it with
// repair configures the port back (read from the fake switch), and the
// next run clears it.
func TestSwitchportDrift(t *testing.T) {
	t.Parallel()
	d, e, sw, _ := fabricLab(t, "")
	deployAll(t, e)
	if _, open := reconcile(t, e); len(open) != 0 {
		t.Fatalf("drift after a clean deploy: %v", keys(open))
	}
	node, port := changePort(t, d, sw)
	for range 2 {
		if _, open := reconcile(t, e); len(open) != 1 || !strings.Contains(open[node+"/switchport"].Observed, "vlan 3999") {
			t.Fatalf("after %s changed on the switch: open drift %v", port, open)
		}
	}
	if evs := typedEvents(t, e, node, record.EventDriftDetected); len(evs) != 1 {
		t.Errorf("%d drift detected events for node %s, want 1", len(evs), node)
	}
	res, err := e.ResolveDrift(t.Context(), node, record.DriftSwitchport, record.ResolveRepair, "test", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Message, "read back as designed") {
		t.Errorf("repair: %s", res.Message)
	}
	wantPorts(t, d, sw, node)
	if _, open := reconcile(t, e); len(open) != 0 {
		t.Fatalf("after the repair: open drift %v", keys(open))
	}
}

// TestSwitchportDriftRepaired: with the Site's policy repair, the run
// that sees a changed port configures it back itself.
func TestSwitchportDriftRepaired(t *testing.T) {
	t.Parallel()
	d, e, sw, _ := fabricLab(t, "repair")
	deployAll(t, e)
	node, _ := changePort(t, d, sw)
	rep, open := reconcile(t, e)
	if len(open) != 0 || !slices.Contains(rep.Repaired, node+"/switchport") {
		t.Fatalf("repair policy: repaired %v, open %v", rep.Repaired, keys(open))
	}
	wantPorts(t, d, sw, node)
}

// changePort changes the VLAN of the first cabled port (by node name)
// on the fake switch, behind Slipway's back.
func changePort(t *testing.T, d *design.Design, sw *lldpSwitches) (string, drivers.SwitchPort) {
	t.Helper()
	for _, name := range d.NodeNames() {
		for _, alias := range slices.Sorted(mapsKeys(d.Nodes[name].Spec.Cabling)) {
			c := d.Nodes[name].Spec.Cabling[alias]
			p := drivers.SwitchPort{Switch: c.Switch, Port: c.Port}
			st := readPort(t, sw, p)
			st.VLAN = 3999
			sw.SetPort(st.PortConfig)
			return name, p
		}
	}
	t.Fatal("no cabled node")
	return "", drivers.SwitchPort{}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// fabricNode is a deployed node's production ports, planned from the
// design by the SDK (not by the engine).
func fabricNode(t *testing.T, d *design.Design, node string) orchestrator.FabricNode {
	t.Helper()
	plan, err := driverspec.Ports(d, d.Nodes[node], drivers.PhaseProduction)
	if err != nil {
		t.Fatal(err)
	}
	n := orchestrator.FabricNode{Node: node}
	for _, c := range plan {
		n.Ports = append(n.Ports, orchestrator.FabricPort{SwitchPort: c.SwitchPort, Desired: c})
	}
	return n
}

// TestSwitchportDriftReleased: a released node's ports are in quarantine
// (the destroy put them there); one changed on the switch is its
// node's switchport drift against the quarantine configuration, and
// repair puts it back in quarantine (read from the fake switch).
func TestSwitchportDriftReleased(t *testing.T) {
	t.Parallel()
	d, e, sw, _ := fabricLab(t, "")
	deployAll(t, e)
	node, port := changePort(t, d, sw)
	run(t, e, record.Request{Action: record.ActionDestroyNodes, Requester: "test",
		Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{node}}}}}, record.TaskSucceeded)
	if st := readPort(t, sw, port); st.VLAN != designtest.FabricQuarantineVLAN {
		t.Fatalf("after the destroy, %s is on VLAN %d, want the quarantine VLAN", port, st.VLAN)
	}
	if _, open := reconcile(t, e); len(open) != 0 {
		t.Fatalf("drift after a clean destroy: %v", keys(open))
	}
	st := readPort(t, sw, port)
	st.VLAN = 3999
	sw.SetPort(st.PortConfig)
	_, open := reconcile(t, e)
	if r := open[node+"/switchport"]; len(open) != 1 || !strings.HasPrefix(r.Expected, "quarantine: ") || !strings.Contains(r.Observed, "vlan 3999, want 999") {
		t.Fatalf("a released node's port changed: open drift %v", open)
	}
	if _, err := e.ResolveDrift(t.Context(), node, record.DriftSwitchport, record.ResolveRepair, "test", ""); err != nil {
		t.Fatal(err)
	}
	if st := readPort(t, sw, port); st.VLAN != designtest.FabricQuarantineVLAN {
		t.Errorf("after the repair, %s is on VLAN %d, want the quarantine VLAN", port, st.VLAN)
	}
}

// TestSwitchportDriftSwitchDown: while a node's switch does not answer,
// reconciliation runs without error and keeps the node's switchport
// drift as it was (neither cleared nor detected again); once the switch
// answers with the port put back by hand, the drift is cleared.
func TestSwitchportDriftSwitchDown(t *testing.T) {
	t.Parallel()
	d, e, sw, _ := fabricLab(t, "")
	deployAll(t, e)
	node, port := changePort(t, d, sw)
	if _, open := reconcile(t, e); len(open) != 1 {
		t.Fatalf("open drift %v", keys(open))
	}
	sw.set(func() { sw.failing = port.Switch })
	rep, open := reconcile(t, e)
	if len(open) != 1 || len(rep.Cleared) != 0 || len(rep.Detected) != 0 {
		t.Fatalf("switch %s down: open %v, cleared %v, detected %v", port.Switch, keys(open), rep.Cleared, rep.Detected)
	}
	st := readPort(t, sw, port)
	for _, p := range fabricNode(t, d, node).Ports {
		if p.SwitchPort == port {
			st.PortConfig = p.Desired
		}
	}
	sw.SetPort(st.PortConfig) // put back by hand
	sw.set(func() { sw.failing = "" })
	if rep, open := reconcile(t, e); len(open) != 0 || !slices.Contains(rep.Cleared, node+"/switchport") {
		t.Fatalf("switch back, port put back: open %v, cleared %v", keys(open), rep.Cleared)
	}
	if evs := typedEvents(t, e, node, record.EventDriftResolved); len(evs) != 1 {
		t.Errorf("%d drift resolved events for node %s, want 1", len(evs), node)
	}
}

// TestFabricOverGNMI: the view and switchport drift through the real gnmi
// driver against the lab's gNMI target, whose switches hear each cabled
// machine NIC over LLDP: after the deploy every cable reads back as
// designed and every neighbour is its designed node; a port changed at
// the switch's console (the target's own state) is drift, and repair
// puts it back (read from the target, not the driver).
func TestFabricOverGNMI(t *testing.T) {
	t.Parallel()
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
	deployAll(t, e)
	cables := cabledPorts(d)
	v := fabricOf(t, e, d)
	cabled := 0
	for _, f := range v.Findings {
		if f.Kind == orchestrator.FindingCabled {
			cabled++
		}
	}
	for p, fp := range portsOf(v) {
		if fp.State != orchestrator.PortOK {
			t.Errorf("port %s over gNMI: %s %v", p, fp.State, fp.Diff)
		}
	}
	if cabled != len(cables) || len(portsOf(v)) != len(cables) {
		t.Fatalf("%d of %d cables cabled as designed by LLDP (%d ports in the view): %+v", cabled, len(cables), len(portsOf(v)), v.Findings)
	}
	swapped := swapCables(t, env, d, tg)
	for p, fp := range portsOf(fabricOf(t, e, d)) {
		want, ok := swapped[p]
		if !ok {
			want = "cabled as designed"
		}
		if !strings.Contains(fp.LLDP, want) {
			t.Errorf("port %s, its cable swapped %v: %q, want %q", p, ok, fp.LLDP, want)
		}
	}
	swapCables(t, env, d, tg) // back
	node, port := "", drivers.SwitchPort{}
	for p, fp := range portsOf(v) {
		if fp.Desired.Mode == drivers.ModeAccess && (node == "" || p.String() < port.String()) {
			node, port = fp.Node, p
		}
	}
	if node == "" {
		t.Fatal("no access port in the view")
	}
	want, err := tg.Port(port.Switch, port.Port)
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.Tamper(port.Switch, "/interfaces/interface[name="+port.Port+"]/ethernet/switched-vlan/config", `{"access-vlan": 3999}`); err != nil {
		t.Fatal(err)
	}
	if _, open := reconcile(t, e); !strings.Contains(open[node+"/switchport"].Observed, fmt.Sprintf("%s: vlan 3999, want %d", port, want.AccessVLAN)) {
		t.Fatalf("a port changed at the console: open drift %v", open)
	}
	if _, err := e.ResolveDrift(t.Context(), node, record.DriftSwitchport, record.ResolveRepair, "test", ""); err != nil {
		t.Fatal(err)
	}
	if got, err := tg.Port(port.Switch, port.Port); err != nil || got.AccessVLAN != want.AccessVLAN {
		t.Errorf("after the repair, the target's %s is on VLAN %d (%v), want %d", port, got.AccessVLAN, err, want.AccessVLAN)
	}
}

// swapCables swaps, on the gNMI target, the LLDP neighbours of the two
// cabled NICs (by alias) of the first node with two (its cables swapped
// at the server; a second call swaps them back); it returns the words
// each port's LLDP finding must hold.
func swapCables(t *testing.T, env *labrun.Env, d *design.Design, tg *simgnmi.Target) map[drivers.SwitchPort]string {
	t.Helper()
	for _, name := range d.NodeNames() {
		cab := d.Nodes[name].Spec.Cabling
		aliases := slices.Sorted(mapsKeys(cab))
		if len(aliases) < 2 {
			continue
		}
		a, b := aliases[0], aliases[1]
		nbs := map[string]*simgnmi.Neighbor{} // as the lab seeds the target (sim/lab SeedGNMI)
		for _, nic := range env.Lab.Machine(name).Hardware.NICs {
			if nic.Alias == a || nic.Alias == b {
				nbs[nic.Alias] = &simgnmi.Neighbor{ChassisID: nic.MAC, SystemName: name, PortID: nic.Alias, PortDescr: nic.Name}
			}
		}
		if nbs[a] == nil || nbs[b] == nil {
			t.Fatalf("the lab's machine %s lacks NIC %s or %s", name, a, b)
		}
		if err := tg.SetNeighbor(cab[a].Switch, cab[a].Port, nbs[b]); err != nil {
			t.Fatal(err)
		}
		if err := tg.SetNeighbor(cab[b].Switch, cab[b].Port, nbs[a]); err != nil {
			t.Fatal(err)
		}
		return map[drivers.SwitchPort]string{
			{Switch: cab[a].Switch, Port: cab[a].Port}: "node " + name + "'s NIC " + nbs[b].PortID + ", design says NIC " + a,
			{Switch: cab[b].Switch, Port: cab[b].Port}: "node " + name + "'s NIC " + nbs[a].PortID + ", design says NIC " + b}
	}
	t.Fatal("no node with two cables")
	return nil
}
