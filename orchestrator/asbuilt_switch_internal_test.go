package orchestrator

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
)

// TestSortPorts: of one switch's ports, one with a neighbour is checked,
// one with none (or an empty one) and one the switch lacks are not, each
// said once in an event; with every port silent the switch is said to
// report no LLDP.
func TestSortPorts(t *testing.T) {
	port := func(p, alias string) cabledPort {
		return cabledPort{SwitchPort: drivers.SwitchPort{Switch: "leaf-r01", Port: p}, Alias: alias}
	}
	ports := []cabledPort{port("Ethernet0", "data0"), port("Ethernet1", "data1"), port("Ethernet2", "pxe0"), port("Ethernet3", "data2")}
	nb := &drivers.LLDPNeighbor{SystemName: "r01-cmp01", PortID: "data0"}
	st := []drivers.PortState{{Found: true, Neighbor: nb}, {Found: true}, {Found: true, Neighbor: &drivers.LLDPNeighbor{}}, {Found: false}}
	var sc switchCheck
	seen := map[cabledPort]*drivers.LLDPNeighbor{}
	sc.sortPorts("leaf-r01", ports, st, &design.HardwareExpect{LLDP: true}, seen)
	if len(seen) != 1 || seen[ports[0]] != nb {
		t.Errorf("checked %v, want Ethernet0 only", seen)
	}
	if len(sc.events) != 2 {
		t.Fatalf("events %v, want 2", sc.events)
	}
	for _, want := range [][2]string{
		{"info", "switch leaf-r01 reports no LLDP neighbour on port(s) Ethernet1, Ethernet2 (2 of the node's 3 there): for those, cabling checked from the machine's side only"},
		{"warn", "switch leaf-r01 has no port Ethernet3"},
	} {
		if !strings.Contains(sc.events[0][1]+"|"+sc.events[1][1], want[1]) || (sc.events[0][0] != want[0] && sc.events[1][0] != want[0]) {
			t.Errorf("events %v lack %v", sc.events, want)
		}
	}
	sc = switchCheck{}
	sc.sortPorts("leaf-r01", ports[1:3], st[1:3], nil, map[cabledPort]*drivers.LLDPNeighbor{})
	if len(sc.events) != 1 || !strings.Contains(sc.events[0][1], "switch leaf-r01 reports no LLDP neighbour on the node's port(s) Ethernet1, Ethernet2: cabling not checked by LLDP") {
		t.Errorf("a switch without LLDP: %v", sc.events)
	}
}
