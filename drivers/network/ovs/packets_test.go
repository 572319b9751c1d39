package ovs_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/network/ovs"
	simovs "github.com/slipway-dev/slipway/sim/ovs"
	"github.com/slipway-dev/slipway/sim/ovs/ovstest"
)

const leaf = "leaf1"

var fabric = &drivers.NodeFabric{ProvisioningVLAN: 11, QuarantineVLAN: 999}

// bonded has an 802.3ad bond of two NICs on leaf ports pa and pb,
// trunking mgmt (untagged, switch VLAN 12) and prod (VLAN 100).
func bonded(name, pa, pb string, host int) drivers.Node {
	mgmt := drivers.Subnet{Name: "mgmt", CIDR: "10.2.0.0/24", UntaggedVLAN: 12}
	prod := drivers.Subnet{Name: "prod", CIDR: "10.1.0.0/24", VLAN: 100}
	return drivers.Node{NodeRef: drivers.NodeRef{Name: name}, Fabric: fabric, Interfaces: []drivers.Interface{{
		Name: "bond0",
		Link: drivers.Link{Name: "bond0", MTU: 9000, BondMode: "802.3ad", LACPRate: "fast", Trunking: "802.1q",
			NativeNetwork: "mgmt"},
		Devices: []drivers.Device{{Alias: "ens1f0", Switch: leaf, Port: pa}, {Alias: "ens1f1", Switch: leaf, Port: pb}},
		Networks: []drivers.InterfaceNetwork{{Subnet: mgmt, Address: fmt.Sprintf("10.2.0.%d", host)},
			{Subnet: prod, Address: fmt.Sprintf("10.1.0.%d", host)}},
	}}}
}

// access has one NIC on leaf port p, on VLAN 200 in prod's subnet: only
// the switch's VLANs keep it from the bonded nodes' prod network.
func access(name, p string, host int) drivers.Node {
	other := drivers.Subnet{Name: "other", CIDR: "10.1.0.0/24", UntaggedVLAN: 200}
	return drivers.Node{NodeRef: drivers.NodeRef{Name: name}, Fabric: fabric, Interfaces: []drivers.Interface{{
		Name: "eth0", Link: drivers.Link{Name: "eth0", BondMode: "disabled", Trunking: "disabled"},
		Devices:  []drivers.Device{{Alias: "eno1", Switch: leaf, Port: p}},
		Networks: []drivers.InterfaceNetwork{{Subnet: other, Address: fmt.Sprintf("10.1.0.%d", host)}},
	}}}
}

// lab is a leaf switch with nodes emulated on it (sim/ovs.NodeSide).
type lab struct {
	t     *testing.T
	ctx   context.Context
	s     *simovs.Switchd
	d     *ovs.Driver
	nodes map[string]*simovs.Node
	specs map[string]drivers.Node
}

func newLab(t *testing.T, specs ...drivers.Node) *lab {
	t.Helper()
	s := ovstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	if err := s.AddBridge(ctx, leaf); err != nil {
		t.Fatal(err)
	}
	l := &lab{t: t, ctx: ctx, s: s, d: open(t, map[string]string{leaf: s.Unix}), nodes: map[string]*simovs.Node{},
		specs: map[string]drivers.Node{}}
	sw := map[string]simovs.SwitchBridge{leaf: {D: s, Bridge: leaf}}
	for _, n := range specs {
		nd, err := simovs.NodeSide(ctx, s, sw, n)
		if err != nil {
			t.Fatal(err)
		}
		l.nodes[n.Name], l.specs[n.Name] = nd, n
	}
	return l
}

// configure runs ConfigurePorts for the nodes and returns how long each took.
func (l *lab) configure(phase drivers.Phase, names ...string) []time.Duration {
	l.t.Helper()
	var took []time.Duration
	for _, n := range names {
		start := time.Now()
		r, err := l.d.ConfigurePorts(l.ctx, l.specs[n], phase)
		if err != nil || r.Status != drivers.StatusDone {
			l.t.Fatalf("ConfigurePorts(%s, %s): %+v, %v", n, phase, r, err)
		}
		took = append(took, time.Since(start))
	}
	return took
}

// reach pings from one node's network to another's (until an answer, at most 6 s).
func (l *lab) reach(from, fromNet, to, toNet string) bool {
	l.t.Helper()
	src, ok1 := l.nodes[from].Net(fromNet)
	dst, ok2 := l.nodes[to].Net(toNet)
	if !ok1 || !ok2 {
		l.t.Fatalf("no network %s on %s or %s on %s", fromNet, from, toNet, to)
	}
	return l.s.Ping(l.ctx, src.NS, dst.IP(), 6*time.Second)
}

// vsctl is ovs-vsctl's trimmed output.
func (l *lab) vsctl(args ...string) string {
	l.t.Helper()
	out, err := l.s.Vsctl(l.ctx, args...)
	if err != nil {
		l.t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// expect fails the test when ovs-vsctl's answer to args is not want.
func (l *lab) expect(want string, args ...string) {
	l.t.Helper()
	if got := l.vsctl(args...); got != want {
		l.t.Errorf("ovs-vsctl %s: %q, want %q", strings.Join(args, " "), got, want)
	}
}

// eventually is expect for a value ovs-vswitchd sets on its own time:
// polled every 50 ms for up to 5 s.
func (l *lab) eventually(want string, args ...string) {
	l.t.Helper()
	got := ""
	for range 100 {
		if got = l.vsctl(args...); got == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	l.t.Errorf("ovs-vsctl %s: %q for 5 s, want %q", strings.Join(args, " "), got, want)
}

// writes is what counts the database's committed transactions: the
// size of conf.db (ovsdb-server appends each one) and next_cfg.
func (l *lab) writes() string {
	l.t.Helper()
	fi, err := os.Stat(l.s.Dir + "/conf.db")
	if err != nil {
		l.t.Fatal(err)
	}
	return fmt.Sprintf("conf.db %d bytes, next_cfg %s", fi.Size(), l.vsctl("get", "Open_vSwitch", ".", "next_cfg"))
}

// After ConfigurePorts(production): the bonded nodes reach each other on
// both networks over LACP bonds (also with one member's cable down); the
// access node, on another VLAN in the same subnet, is not reached; the
// ports read as planned with the real tools; a second call writes
// nothing. After ConfigurePorts(quarantine) a node's ports are on the
// quarantine VLAN, its LAG gone, and it is not reached; production
// again regroups the LAG and it is reached again.
func TestPacketsAfterConfigurePorts(t *testing.T) {
	l := newLab(t, bonded("n1", "p1", "p2", 1), bonded("n2", "p3", "p4", 2), access("n3", "p5", 3))
	took := l.configure(drivers.PhaseProduction, "n1", "n2", "n3")
	t.Logf("ConfigurePorts(production) per node: %v", took)

	l.expect("200", "get", "port", "p5", "tag")
	l.expect("access", "get", "port", "p5", "vlan_mode")
	for _, n := range []string{"n1", "n2"} {
		bond := n + "/bond0"
		l.expect(`"`+bond+`"`, "get", "port", bond, "name")
		l.expect("12", "get", "port", bond, "tag")
		l.expect("[12, 100]", "get", "port", bond, "trunks")
		l.expect("native-untagged", "get", "port", bond, "vlan_mode")
		l.expect("balance-tcp", "get", "port", bond, "bond_mode")
		l.expect("active", "get", "port", bond, "lacp")
		l.expect(`fast`, "get", "port", bond, "other_config:lacp-time")
	}
	l.expect("9000", "get", "interface", "p1", "mtu")
	if out, err := l.s.Ofctl(l.ctx, "show", leaf); err != nil || !strings.Contains(out, "(p1)") || !strings.Contains(out, "(p5)") {
		t.Errorf("ovs-ofctl show %s: %v\n%s", leaf, err, out)
	}

	for _, nw := range []string{"mgmt", "prod"} {
		if !l.reach("n1", nw, "n2", nw) {
			t.Errorf("n1 does not reach n2 on %s (same VLAN)", nw)
		}
	}
	if l.reach("n1", "prod", "n3", "other") {
		t.Error("n1 (prod, VLAN 100) reaches n3 (VLAN 200, the same subnet)")
	}
	lacp := ""
	for i := 0; i < 100 && !strings.Contains(lacp, "negotiated"); i++ {
		time.Sleep(time.Duration(min(i, 1)) * 50 * time.Millisecond)
		lacp, _ = l.s.Appctl(l.ctx, "ovs-vswitchd", "lacp/show", "n1/bond0")
	}
	if !strings.Contains(lacp, "negotiated") {
		t.Errorf("LACP of n1/bond0 not negotiated within 5 s:\n%s", lacp)
	}

	before := l.writes()
	l.configure(drivers.PhaseProduction, "n1", "n2", "n3")
	if after := l.writes(); after != before {
		t.Errorf("a second ConfigurePorts(production) with nothing to change wrote: %s, then %s", before, after)
	}

	if err := l.s.Down(l.ctx, "", "p1"); err != nil {
		t.Fatal(err)
	}
	l.eventually("down", "get", "interface", "p1", "link_state") // ovs-vswitchd sees the carrier go
	if !l.reach("n1", "prod", "n2", "prod") {
		t.Error("n1 does not reach n2 with one member of its LAG (p1) down")
	}
	if err := l.s.Up(l.ctx, "", "p1"); err != nil {
		t.Fatal(err)
	}

	l.configure(drivers.PhaseQuarantine, "n2")
	l.expect("999", "get", "port", "p3", "tag")
	l.expect("999", "get", "port", "p4", "tag")
	if ports := l.vsctl("list-ports", leaf); strings.Contains(ports, "n2/bond0") || !strings.Contains(ports, "n1/bond0") {
		t.Errorf("after quarantine of n2, the bridge's ports: %s", ports)
	}
	for _, nw := range []string{"mgmt", "prod"} {
		if l.reach("n1", nw, "n2", nw) {
			t.Errorf("n1 reaches n2 on %s with n2's ports in quarantine", nw)
		}
	}

	l.configure(drivers.PhaseProduction, "n2")
	l.expect("[12, 100]", "get", "port", "n2/bond0", "trunks")
	if !l.reach("n1", "prod", "n2", "prod") {
		t.Error("n1 does not reach n2 after n2's ports are back in production")
	}
}
