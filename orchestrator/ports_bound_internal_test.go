package orchestrator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

// TestPortDifferencesBounded: a stage failure's port differences are
// bounded whatever the switch reports: each port's text at most
// maxPortDiffText bytes (a trunk of 4,000 VLANs, a LAG name of 10 KB),
// the whole at most maxPortDiffsText, the port's switch and name kept.
func TestPortDifferencesBounded(t *testing.T) {
	var plan []drivers.PortConfig
	var states []drivers.PortState
	trunk := make([]int, 4000)
	for i := range trunk {
		trunk[i] = i + 1
	}
	for i := range 12 {
		sp := drivers.SwitchPort{Switch: "leaf-r01", Port: fmt.Sprintf("Ethernet%d", i+1)}
		plan = append(plan, drivers.PortConfig{SwitchPort: sp, Alias: "data0", Mode: "access", VLAN: 11, Enabled: true})
		states = append(states, drivers.PortState{Found: true,
			PortConfig: drivers.PortConfig{SwitchPort: sp, Mode: "trunk", Trunk: trunk, LAG: strings.Repeat("x", 10000), Enabled: true}})
	}
	got := portDifferences(plan, states)
	if len(got) > maxPortDiffsText {
		t.Errorf("%d bytes, at most %d", len(got), maxPortDiffsText)
	}
	parts := strings.Split(got, "; ")
	for _, p := range parts[:len(parts)-1] {
		if len(p) > maxPortDiffText {
			t.Errorf("a port's difference of %d bytes, at most %d: %.120s", len(p), maxPortDiffText, p)
		}
		if !strings.HasPrefix(p, "switch leaf-r01 port Ethernet") {
			t.Errorf("a port's difference does not name it: %.120s", p)
		}
	}
	if !strings.HasSuffix(got, "more") {
		t.Errorf("the ports left out are not counted: ...%s", got[max(0, len(got)-80):])
	}
	one := portDifferences(plan[:1], states[:1])
	if !strings.Contains(one, "switch leaf-r01 port Ethernet1 (data0): ") || len(one) > maxPortDiffText {
		t.Errorf("one port: %d bytes: %.200s", len(one), one)
	}
}
