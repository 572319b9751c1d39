package ovs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	simovs "github.com/slipway-dev/slipway/sim/ovs"
	"github.com/slipway-dev/slipway/sim/ovs/ovstest"
)

// A bond split across two switches (one member on each, the same port
// name on both, one switch over unix and one over TCP) is a plain port
// on each marked with its LAG and LACP; it reads back as planned, and
// quarantine clears it on both.
func TestLAGAcrossTwoSwitches(t *testing.T) {
	a, b := ovstest.Start(t), ovstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, x := range []struct {
		s  *simovs.Switchd
		br string
	}{{a, "sw-a"}, {b, "sw-b"}} {
		if err := x.s.AddBridge(ctx, x.br); err != nil {
			t.Fatal(err)
		}
	}
	node := bonded("n1", "p1", "p1", 1)
	node.Interfaces[0].Devices[0].Switch, node.Interfaces[0].Devices[1].Switch = "sw-a", "sw-b"
	sw := map[string]simovs.SwitchBridge{"sw-a": {D: a, Bridge: "sw-a"}, "sw-b": {D: b, Bridge: "sw-b"}}
	if _, err := simovs.NodeSide(ctx, a, sw, node); err != nil {
		t.Fatal(err)
	}
	d := open(t, map[string]string{"sw-a": a.Unix, "sw-b": b.TCP})
	refs := []drivers.SwitchPort{{Switch: "sw-a", Port: "p1"}, {Switch: "sw-b", Port: "p1"}}
	for _, phase := range []drivers.Phase{drivers.PhaseProduction, drivers.PhaseQuarantine} {
		if _, err := d.ConfigurePorts(ctx, node, phase); err != nil {
			t.Fatalf("%s: %v", phase, err)
		}
		want, err := drivers.PortPlan(node, phase)
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.ReadPorts(ctx, refs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range refs {
			if !got[i].Found || !want[i].Equal(got[i].PortConfig) {
				t.Errorf("%s: %s reads %+v, want %+v: %v", phase, refs[i], got[i].PortConfig, want[i], want[i].Diff(got[i].PortConfig))
			}
		}
		for _, s := range []*simovs.Switchd{a, b} {
			lag, _ := s.Vsctl(ctx, "get", "port", "p1", "external_ids")
			lacp, _ := s.Vsctl(ctx, "get", "port", "p1", "lacp")
			inLAG := strings.Contains(lag, `slipway-lag=bond0`) && strings.TrimSpace(lacp) == "active"
			if inLAG != (phase == drivers.PhaseProduction) {
				t.Errorf("%s: ovs-vsctl get port p1 external_ids, lacp: %s %s", phase, lag, lacp)
			}
		}
	}
}
