package orchestrator

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// partSwitchPorts is the plan's part for a node's switch ports: what
// its production configuration becomes on the switches (the fabric's
// VLANs, the cabling), which the reconciliation's switchport repair
// applies to a deployed node (fabric_drift.go).
const partSwitchPorts = "switchports"

// maxPortChanges bounds the ports one planned change names.
const maxPortChanges = 8

// portChanges is how a node's production switch ports differ between
// the design its machine was deployed with (a) and the planned one (b):
// a port whose configuration changes, one newly cabled, and one no
// longer cabled to the node, which nothing touches (it keeps what it
// has until someone sets it by hand).
func portChanges(a, b drivers.Node) []drivers.PlannedChange {
	pa, errA := drivers.PortPlan(a, drivers.PhaseProduction)
	pb, errB := drivers.PortPlan(b, drivers.PhaseProduction)
	if errB != nil {
		if errA != nil && errA.Error() == errB.Error() {
			return nil
		}
		return []drivers.PlannedChange{{Part: partSwitchPorts, Op: "error", Object: "switch ports", Detail: errB.Error()}}
	}
	old := map[drivers.SwitchPort]drivers.PortConfig{}
	for _, c := range pa {
		old[c.SwitchPort] = c
	}
	var what []string
	for _, c := range pb {
		was, ok := old[c.SwitchPort]
		delete(old, c.SwitchPort)
		switch {
		case !ok:
			what = append(what, c.String()+" newly cabled ("+c.Alias+")")
		case !c.Equal(was):
			what = append(what, c.String()+": "+strings.Join(c.Diff(was), ", "))
		}
	}
	for _, c := range pa {
		if _, gone := old[c.SwitchPort]; gone {
			what = append(what, c.String()+" no longer cabled to the node: left as it is (set it by hand)")
		}
	}
	if len(what) == 0 {
		return nil
	}
	if len(what) > maxPortChanges {
		what = append(what[:maxPortChanges], fmt.Sprintf("and %d more", len(what)-maxPortChanges))
	}
	return []drivers.PlannedChange{{Part: partSwitchPorts, Op: "update", Object: "switch ports", Detail: strings.Join(what, "; ")}}
}

// withoutCables are interfaces without their devices' switch ports,
// which are the fabric's, not the machine's.
func withoutCables(is []drivers.Interface) []drivers.Interface {
	out := slices.Clone(is)
	for i := range out {
		out[i].Devices = slices.Clone(out[i].Devices)
		for j := range out[i].Devices {
			out[i].Devices[j].Switch, out[i].Devices[j].Port = "", ""
		}
	}
	return out
}
