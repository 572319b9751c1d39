package orchestrator_test

import (
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
)

// TestFabricNeverRunIsUnmanaged: on a fresh site (no node ever run, no
// record) the switch holds whatever it held before Slipway; the view
// shows those ports as unmanaged, not as differing from a provisioning
// setup nobody asked for yet; a port the switch lacks is still missing.
func TestFabricNeverRunIsUnmanaged(t *testing.T) {
	t.Parallel()
	d, e, sw, _ := fabricLab(t, "")
	cables := cabledPorts(d)
	var lacking drivers.SwitchPort
	for p := range cables {
		if lacking == (drivers.SwitchPort{}) {
			lacking = p // never set on the fake switch: it has no such port
			continue
		}
		sw.SetPort(drivers.PortConfig{SwitchPort: p, Mode: "access", VLAN: 1, Enabled: true}) // a switch's factory setting
	}
	v := fabricOf(t, e, d)
	n := 0
	for _, s := range v.Switches {
		for _, p := range s.Ports {
			n++
			want := orchestrator.PortUnmanaged
			if p.SwitchPort == lacking {
				want = orchestrator.PortMissing
			}
			if p.State != want || len(p.Diff) > 0 {
				t.Errorf("never run: port %s of node %s is %s %v, want %s", p.SwitchPort, p.Node, p.State, p.Diff, want)
			}
		}
	}
	if n != len(cables) {
		t.Errorf("%d ports in the view, %d cables", n, len(cables))
	}
}
