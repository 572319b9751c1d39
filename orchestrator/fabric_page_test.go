package orchestrator_test

import (
	"errors"
	"strings"
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

// TestFabricPages: the paged view lists every cable once, by switch then
// port, a page at a time following Next; each page reads only its own
// ports from the switches (counted at the fake switch), each port's
// state is the switch's own (a port changed there differs), its LLDP
// finding is on the port; ?switch= and ?node= narrow; a cursor that is
// not one is the query's error.
func TestFabricPages(t *testing.T) {
	t.Parallel()
	d, e, sw, _ := fabricLab(t, "")
	deployAll(t, e)
	cables := cabledPorts(d)
	var changed drivers.SwitchPort
	for p := range cables {
		changed = p
		break
	}
	st, err := sw.ReadPorts(t.Context(), []drivers.SwitchPort{changed})
	if err != nil {
		t.Fatal(err)
	}
	sw.set(func() {
		st[0].VLAN = 3999
		sw.SetPort(st[0].PortConfig)
		sw.neighbors[changed] = &drivers.LLDPNeighbor{SystemName: strings.Split(cables[changed], "/")[0]}
		sw.asked = 0
	})
	const limit = 3
	seen := map[drivers.SwitchPort]bool{}
	var last orchestrator.FabricPort
	after, pages := "", 0
	for ; pages <= len(cables); pages++ {
		pg, err := e.FabricPage(t.Context(), d, orchestrator.FabricQuery{After: after, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if pg.Total != len(cables) || len(pg.Ports) > limit || (pg.Next != "" && len(pg.Ports) != limit) {
			t.Fatalf("page %d: %d ports of %d, next %q (the design has %d cables)", pages, len(pg.Ports), pg.Total, pg.Next, len(cables))
		}
		sw.set(func() {
			if sw.asked != len(pg.Ports) {
				t.Errorf("page %d of %d ports asked the switches for %d", pages, len(pg.Ports), sw.asked)
			}
			sw.asked = 0
		})
		for _, p := range pg.Ports {
			if seen[p.SwitchPort] || cables[p.SwitchPort] != p.Node+"/"+p.Alias {
				t.Errorf("port %s listed twice or not as cabled (%s/%s, design %s)", p.SwitchPort, p.Node, p.Alias, cables[p.SwitchPort])
			}
			if last.Switch > p.Switch || (last.Switch == p.Switch && last.Port == p.Port) {
				t.Errorf("port %s after %s", p.SwitchPort, last.SwitchPort)
			}
			seen[p.SwitchPort], last = true, p
			want, finding := orchestrator.PortOK, orchestrator.FindingNoNeighbor
			if p.SwitchPort == changed {
				want, finding = orchestrator.PortDiffers, orchestrator.FindingCabled
			}
			if p.State != want || p.Finding != finding {
				t.Errorf("port %s: %s (%v), finding %s %q; want %s, %s", p.SwitchPort, p.State, p.Diff, p.Finding, p.LLDP, want, finding)
			}
		}
		if after = pg.Next; after == "" {
			break
		}
	}
	if len(seen) != len(cables) || pages != (len(cables)-1)/limit {
		t.Errorf("%d ports over %d pages, %d cables", len(seen), pages+1, len(cables))
	}
	one, err := e.FabricPage(t.Context(), d, orchestrator.FabricQuery{Switches: []string{changed.Switch}, Nodes: []string{strings.Split(cables[changed], "/")[0]}})
	if err != nil || len(one.Ports) == 0 || len(one.Switches) != 1 || one.Switches[0].Name != changed.Switch {
		t.Fatalf("?switch=%s&node=: %v %+v", changed.Switch, err, one.Switches)
	}
	for _, p := range one.Ports {
		if p.Switch != changed.Switch || p.Node+"/"+p.Alias != cables[p.SwitchPort] || strings.Split(cables[changed], "/")[0] != p.Node {
			t.Errorf("?switch=%s&node=: port %s of node %s", changed.Switch, p.SwitchPort, p.Node)
		}
	}
	if _, err := e.FabricPage(t.Context(), d, orchestrator.FabricQuery{After: "!!"}); !errors.Is(err, orchestrator.ErrFabricQuery) {
		t.Errorf("a cursor that is not one: %v", err)
	}
}
