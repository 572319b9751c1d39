package ovs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/ovs"
	"github.com/slipway-dev/slipway/sim/ovs/ovstest"
)

// bondedNode has one 802.3ad bond of two NICs cabled to sw ports pa, pb,
// trunking mgmt (untagged, switch VLAN 12) and prod (VLAN 100).
func bondedNode(name, pa, pb string, host int) drivers.Node {
	mgmt := drivers.Subnet{Name: "mgmt", CIDR: "10.2.0.0/24", UntaggedVLAN: 12}
	prod := drivers.Subnet{Name: "prod", CIDR: "10.1.0.0/24", VLAN: 100}
	return drivers.Node{NodeRef: drivers.NodeRef{Name: name}, Interfaces: []drivers.Interface{{
		Name:    "bond0",
		Link:    drivers.Link{Name: "bond0", BondMode: "802.3ad", LACPRate: "fast", Trunking: "802.1q", NativeNetwork: "mgmt"},
		Devices: []drivers.Device{{Alias: "ens1f0", Switch: "sw", Port: pa}, {Alias: "ens1f1", Switch: "sw", Port: pb}},
		Networks: []drivers.InterfaceNetwork{{Subnet: mgmt, Address: fmt.Sprintf("10.2.0.%d", host)},
			{Subnet: prod, Address: fmt.Sprintf("10.1.0.%d", host)}},
	}}}
}

// accessNode has one NIC on sw port p, on VLAN 200 in prod's subnet.
func accessNode(name, p string, host int) drivers.Node {
	other := drivers.Subnet{Name: "other", CIDR: "10.1.0.0/24", UntaggedVLAN: 200}
	return drivers.Node{NodeRef: drivers.NodeRef{Name: name}, Interfaces: []drivers.Interface{{
		Name: "eth0", Link: drivers.Link{Name: "eth0", BondMode: "disabled", Trunking: "disabled"},
		Devices:  []drivers.Device{{Alias: "eno1", Switch: "sw", Port: p}},
		Networks: []drivers.InterfaceNetwork{{Subnet: other, Address: fmt.Sprintf("10.1.0.%d", host)}},
	}}}
}

// NodeSide's emulated nodes, with the switch side set by hand with
// ovs-vsctl as a driver would: bonded nodes reach each other on both
// VLANs through LACP bonds, also with one member's cable down; a node
// on another VLAN in the same subnet is not reached.
func TestNodeSideWithHandSetSwitch(t *testing.T) {
	s := ovstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.AddBridge(ctx, "sw"); err != nil {
		t.Fatal(err)
	}
	sw := map[string]ovs.SwitchBridge{"sw": {D: s, Bridge: "sw"}}
	var nodes []*ovs.Node
	for _, n := range []drivers.Node{bondedNode("a", "p1", "p2", 1), bondedNode("b", "p3", "p4", 2), accessNode("c", "p5", 3)} {
		nd, err := ovs.NodeSide(ctx, s, sw, n)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, nd)
	}
	for _, cmd := range [][]string{
		{"del-port", "p1", "--", "del-port", "p2", "--", "add-bond", "sw", "a/bond0", "p1", "p2", "bond_mode=balance-tcp", "lacp=active",
			"other_config:lacp-time=fast", "vlan_mode=native-untagged", "tag=12", "trunks=12,100"},
		{"del-port", "p3", "--", "del-port", "p4", "--", "add-bond", "sw", "b/bond0", "p3", "p4", "bond_mode=balance-tcp", "lacp=active",
			"other_config:lacp-time=fast", "vlan_mode=native-untagged", "tag=12", "trunks=12,100"},
		{"set", "port", "p5", "tag=200"},
	} {
		if out, err := s.Vsctl(ctx, cmd...); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	a, b, c := nodes[0], nodes[1], nodes[2]
	reach := func(from *ovs.Node, fromNet string, to *ovs.Node, toNet string) bool {
		src, _ := from.Net(fromNet)
		dst, _ := to.Net(toNet)
		return s.Ping(ctx, src.NS, dst.IP(), 6*time.Second)
	}
	for _, nw := range []string{"mgmt", "prod"} {
		if !reach(a, nw, b, nw) {
			t.Errorf("a does not reach b on %s", nw)
		}
	}
	if reach(a, "prod", c, "other") {
		t.Error("a (prod, VLAN 100) reaches c (VLAN 200, same subnet)")
	}
	lacp := ""
	for i := 0; i < 100 && !strings.Contains(lacp, "negotiated"); i++ {
		time.Sleep(time.Duration(min(i, 1)) * 50 * time.Millisecond)
		lacp, _ = s.Appctl(ctx, "ovs-vswitchd", "lacp/show", "a/bond0")
	}
	if !strings.Contains(lacp, "negotiated") {
		t.Errorf("LACP of a/bond0 not negotiated within 5 s:\n%s", lacp)
	}
	nic, _ := a.NIC("ens1f0")
	if err := s.Down(ctx, "", nic.Port); err != nil {
		t.Fatal(err)
	}
	if !reach(a, "prod", b, "prod") {
		t.Error("a does not reach b on prod with one bond member's cable down")
	}
}
