package orchestrator

import (
	"context"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Rescue mode (rescue_enter, rescue_exit): the provisioner boots a
// deployed machine into an ephemeral rescue system, and back to its
// deployed OS. Both run recoverStage (decommission.go) with the driver's
// rescue and exit-rescue recovery actions. A node in rescue mode keeps
// its deployment: its record's stage is rescue-mode, its machine's state
// one of deployedStates (sweep.go), and the node's introspection token
// stays valid; rescue_exit brings it back to deployed.
//
// The rescue system PXE-boots, which a deployed node's production ports
// (an LACP bond, a trunk) may not carry: on a Site with a fabric,
// rescue_enter first puts the node's switch ports in the provisioning
// phase (read back, ports.go) and only then asks the provisioner to boot
// it; rescue_exit puts them back in production once the machine is back
// in its deployed OS. Meanwhile reconcile does not take the ports for
// switchport drift (fabric_drift.go). The same holds for the hardware
// tests of a deployed node (hwtest.go).

// portsFollowTask reports whether the node's switch ports are the
// engine's to move around a PXE boot of its machine: a network driver
// and a Site with a fabric.
func (r *nodeRun) portsFollowTask() bool {
	return r.e.cfg.Drivers.Network != nil && r.n != nil && r.d.SiteOf(r.n).HasFabric()
}

// rescueEnter is the rescue stage: (0) the node must be deployed; its
// switch ports go to the provisioning phase; (1) the provisioner boots
// the machine into rescue mode. A switch error fails step 0: the machine
// is neither rebooted nor released, and retry takes the step again.
func (r *nodeRun) rescueEnter(ctx context.Context) (step, error) {
	if r.rec.Step == 0 {
		if l := r.rec.LifecycleState(); l != record.LifecycleDeployed {
			// rescue_exit brings the machine back to deployed: a node
			// that is not deployed has no OS to repair or return to.
			return failed("node %s is %s, not deployed: rescue mode is for repairing a deployed node's OS (to look at a machine's hardware, run test_nodes)",
				r.rec.Name, orDefault(string(l), "in an unknown lifecycle state")), nil
		}
		if r.portsFollowTask() {
			return r.portsStep(ctx, drivers.PhaseProvisioning) // its sub-step leads to step 1
		}
		r.rec.Step = 1 // checked: a resumed node goes on whatever the record says meanwhile
	}
	return r.recoverStage(ctx, drivers.RecoveryRescue, "rescue mode")
}

// rescueExit is the rescue-exit stage: (0) the provisioner boots the
// machine back into its deployed OS; (1) a deployed node's switch ports
// go back to production (read back) before the node reads deployed.
func (r *nodeRun) rescueExit(ctx context.Context) (step, error) {
	if r.rec.Step == 1 {
		return advanceOnSub(r.portsStep(ctx, drivers.PhaseProduction))
	}
	st, err := r.recoverStage(ctx, drivers.RecoveryExitRescue, "the deployed OS")
	if st.kind == stepAdvance && r.portsFollowTask() && r.rec.LifecycleState() == record.LifecycleDeployed {
		st.kind = stepSub
	}
	return st, err
}

// advanceOnSub makes a ports step that closes its stage advance.
func advanceOnSub(st step, err error) (step, error) {
	if st.kind == stepSub {
		st.kind = stepAdvance
	}
	return st, err
}
