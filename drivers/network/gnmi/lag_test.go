package gnmi_test

import (
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	simgnmi "github.com/slipway-dev/slipway/sim/gnmi"
)

// TestForeignLAGInterfaceNotTaken: an interface the switch already has
// under the name the driver gives the node's LAG, made by someone else
// (an operator's, or another node's whose name and LAG join to the same
// string), is refused naming it, and left as it was on the switch.
func TestForeignLAGInterfaceNotTaken(t *testing.T) {
	tg := lab(t, simgnmi.Config{Strict: true})
	d := open(t, tg.Addr(), testPassword, nil)
	sw := driverstest.ConformanceSwitch
	const lag = "conformance-node-bond0"
	if err := tg.Tamper(sw, "/interfaces/interface[name="+lag+"]", `{"name": "`+lag+`", "config": {"name": "`+lag+
		`", "type": "iana-if-type:ieee8023adLag", "enabled": false, "description": "uplink to core (operator)"}}`); err != nil {
		t.Fatal(err)
	}
	before, err := tg.Port(sw, lag)
	if err != nil {
		t.Fatal(err)
	}
	sets := tg.Stats(sw).Sets
	_, err = d.ConfigurePorts(t.Context(), driverstest.NetworkNode(), drivers.PhaseProduction)
	wantErr(t, err, drivers.Permanent, sw, lag, "conformance-node", "uplink to core (operator)")
	after, _ := tg.Port(sw, lag)
	if after.Description != before.Description || after.Enabled != before.Enabled || after.MTU != before.MTU || tg.Stats(sw).Sets != sets {
		t.Errorf("the operator's interface became %+v (was %+v) after %d Sets", after, before, tg.Stats(sw).Sets-sets)
	}
}

// TestPortInAnotherNodesLAGIsMoved: a port the design now cables to
// this node but still a member of another node's LAG of the same name
// (bond0 on every node) is moved into this node's LAG, not taken as
// already planned.
func TestPortInAnotherNodesLAGIsMoved(t *testing.T) {
	tg := lab(t, simgnmi.Config{Strict: true})
	d := open(t, tg.Addr(), testPassword, nil)
	sw := driverstest.ConformanceSwitch
	other := driverstest.NetworkNode()
	other.Name, other.Hostname = "other-node", "other-node"
	if _, err := d.ConfigurePorts(t.Context(), other, drivers.PhaseProduction); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ConfigurePorts(t.Context(), driverstest.NetworkNode(), drivers.PhaseProduction); err != nil {
		t.Fatal(err)
	}
	for _, port := range []string{driverstest.BondPortA, driverstest.BondPortB} {
		p, err := tg.Port(sw, port)
		if err != nil || p.AggregateID != "conformance-node-bond0" {
			t.Errorf("%s: %+v, %v; want a member of conformance-node-bond0", port, p, err)
		}
	}
}

// TestPortInForeignLAGNotTaken: a planned port that is a member of a LAG
// interface Slipway did not make (an operator's Port-Channel5) is not
// pulled out of it: the call fails Permanent naming the port, the LAG
// and the fix, and the switch is unchanged (as the ovs driver refuses to
// regroup a bond made by hand, TestForeignBondNotRegrouped).
func TestPortInForeignLAGNotTaken(t *testing.T) {
	tg := lab(t, simgnmi.Config{})
	d := open(t, tg.Addr(), testPassword, nil)
	sw := driverstest.ConformanceSwitch
	if err := tg.Tamper(sw, "/interfaces/interface[name=Port-Channel5]", `{"name": "Port-Channel5", "config": {"name": "Port-Channel5", `+
		`"type": "iana-if-type:ieee8023adLag", "description": "to the firewall"}, "aggregation": {"config": {"lag-type": "LACP"}}}`); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{driverstest.BondPortA, driverstest.UnownedPort} {
		if err := tg.Tamper(sw, "/interfaces/interface[name="+p+"]/ethernet/config", `{"aggregate-id": "Port-Channel5"}`); err != nil {
			t.Fatal(err)
		}
	}
	sets := tg.Stats(sw).Sets
	for _, phase := range []drivers.Phase{drivers.PhaseProduction, drivers.PhaseQuarantine} {
		_, err := d.ConfigurePorts(t.Context(), driverstest.NetworkNode(), phase)
		wantErr(t, err, drivers.Permanent, sw, driverstest.BondPortA, "Port-Channel5", "conformance-node")
	}
	for _, p := range []string{driverstest.BondPortA, driverstest.UnownedPort} {
		if v, err := tg.Port(sw, p); err != nil || v.AggregateID != "Port-Channel5" {
			t.Errorf("%s: %+v, %v; want still a member of Port-Channel5", p, v, err)
		}
	}
	if got := tg.Stats(sw).Sets; got != sets {
		t.Errorf("%d Sets sent, want none", got-sets)
	}
}
