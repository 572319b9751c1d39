package orchestrator

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// fabricPlanNode is planTestNode cabled under a fabric: its bond's two
// NICs on leaf1 p1 and p2, carrying mgmt untagged on switch VLAN 100.
func fabricPlanNode(f func(n *drivers.Node)) *drivers.Node {
	n := planTestNode()
	n.Fabric = &drivers.NodeFabric{ProvisioningVLAN: 100, QuarantineVLAN: 999}
	n.Interfaces[0].Devices = []drivers.Device{{Alias: "data0", Switch: "leaf1", Port: "p1"}, {Alias: "data1", Switch: "leaf1", Port: "p2"}}
	n.Interfaces[0].Networks = []drivers.InterfaceNetwork{{Subnet: drivers.Subnet{Name: "mgmt", CIDR: "10.0.0.0/24", UntaggedVLAN: 100}}}
	if f != nil {
		f(n)
	}
	return n
}

// TestClassifySwitchPorts: a design change that only a deployed node's
// switch ports see (its network's switchVlan, a cable moved to another
// port) is planned as what it is, a switch port change that the
// reconciliation's switchport repair (or its report) applies, not a
// redeploy (the machine's interfaces are the same) and not nothing;
// the same fabric plans nothing.
func TestClassifySwitchPorts(t *testing.T) {
	repairAll := func(string) bool { return true }
	for _, c := range []struct {
		name    string
		new     *drivers.Node
		repairs func(string) bool
		want    record.PlanAction
		says    string
	}{
		{"the same fabric", fabricPlanNode(nil), nil, record.PlanNone, ""},
		{"switchVlan changed", fabricPlanNode(func(n *drivers.Node) { n.Interfaces[0].Networks[0].UntaggedVLAN = 101 }), nil,
			record.PlanConfigure, "switchports: drift will be reported"},
		{"a cable moved", fabricPlanNode(func(n *drivers.Node) { n.Interfaces[0].Devices[1].Port = "p7" }), repairAll,
			record.PlanConfigure, "switchports: the reconciliation repairs it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := classify(planInput{Name: "n1", Old: fabricPlanNode(nil), New: c.new, Rec: deployedRec(), Repairs: c.repairs})
			reasons := strings.Join(got.Reasons, " | ")
			if got.Action != c.want || !strings.Contains(reasons, c.says) {
				t.Errorf("action %s, reasons %q; want %s saying %q", got.Action, reasons, c.want, c.says)
			}
		})
	}
}
