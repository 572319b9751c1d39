package orchestrator_test

import (
	"context"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// noBMCVersion is the lab's server driver whose commissioning inventory,
// like a real MAAS's, has no BMC firmware version.
type noBMCVersion struct{ drivers.Server }

func (s noBMCVersion) Inventory(ctx context.Context, n drivers.Node) (drivers.Inventory, error) {
	inv, err := s.Server.Inventory(ctx, n)
	inv.Firmware.BMCVersion = ""
	return inv, err
}

// TestFirmwareFromTheBMC: a Redfish-managed node's inventory gets the BMC
// firmware version its BMC reports when commissioning has none; an
// IPMI-managed node's stays without (the IPMI driver reads no firmware
// inventory).
func TestFirmwareFromTheBMC(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) { c.Drivers.Server = noBMCVersion{c.Drivers.Server} })
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionPrepareNodes, Requester: "test",
		Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{"r01-gpu01", "r01-cmp01"}}}}}, record.TaskSucceeded)
	for node, want := range map[string]bool{"r01-gpu01": true, "r01-cmp01": false} {
		inv, ok, err := orchestrator.NodeInventory(t.Context(), env.Store, node)
		if err != nil || !ok {
			t.Fatalf("%s: inventory %v %v", node, ok, err)
		}
		lab := env.Lab.Machine(node).Hardware.BMC()
		if got := inv.Firmware.BMCVersion; (got == lab) != want || (!want && got != "") {
			t.Errorf("%s: BMC firmware %q (the lab's BMC has %q); from the BMC: %v", node, got, lab, want)
		}
	}
}
