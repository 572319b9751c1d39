package orchestrator

import (
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

// TestNaturalCompare: port names sort with their numbers as numbers.
func TestNaturalCompare(t *testing.T) {
	got := []string{"Ethernet12", "Ethernet4", "eth1/10", "Ethernet0", "eth1/9", "pxe-r01", "Ethernet04x", "Ethernet4"}
	slices.SortStableFunc(got, naturalCompare)
	want := []string{"Ethernet0", "Ethernet4", "Ethernet4", "Ethernet04x", "Ethernet12", "eth1/9", "eth1/10", "pxe-r01"}
	if !slices.Equal(got, want) {
		t.Errorf("sorted %v, want %v", got, want)
	}
}

// TestNeighbourBounded: what a switch reports of a neighbour is kept to
// 255 bytes a field, and said in a message in at most 64 printable ones.
func TestNeighbourBounded(t *testing.T) {
	long := strings.Repeat("x", 10000) + "\x1b[2J"
	p := &FabricPort{SwitchPort: drivers.SwitchPort{Switch: "s", Port: "p"}, Node: "n", Desired: drivers.PortConfig{Mode: drivers.ModeAccess}}
	st := drivers.PortState{PortConfig: drivers.PortConfig{Mode: drivers.ModeAccess}, Found: true,
		Neighbor: &drivers.LLDPNeighbor{SystemName: long, ChassisID: long, PortID: long, PortDescr: long}}
	f := comparePort(p, st, true, neighbours{})
	nb := p.Observed.Neighbor
	for _, v := range []string{nb.SystemName, nb.ChassisID, nb.PortID, nb.PortDescr} {
		if len(v) != maxLLDPField {
			t.Errorf("a neighbour field of %d bytes kept, want %d", len(v), maxLLDPField)
		}
	}
	if f.Kind != FindingMiscabled || len(f.Message) > 400 || strings.ContainsRune(f.Message, 0x1b) {
		t.Errorf("finding %s of %d bytes: %.120q", f.Kind, len(f.Message), f.Message)
	}
}
