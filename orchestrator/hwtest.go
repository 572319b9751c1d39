package orchestrator

import (
	"context"
	"slices"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// testing is the testing stage (test_nodes). The tests PXE-boot the
// machine into the provisioner's test environment: the switch ports of a
// deployed node (production: an LACP bond, a trunk) or of a released one
// (quarantine) are put in the provisioning phase first (step 0, read
// back; a switch error fails the node there, its machine not tested, so
// not rebooted), the tests run (step 1), and once they passed the ports
// go back to the phase they were in (step 2). Any other node's tests run
// at step 0, its ports left as they are (provisioning). Tests that
// failed leave the ports in provisioning, with the machine as the tests
// left it.
func (r *nodeRun) testing(ctx context.Context) (step, error) {
	switch {
	case r.rec.Step == 0 && r.testsReturnTo() != "":
		return r.portsStep(ctx, drivers.PhaseProvisioning) // ports.go; its sub-step leads to step 1
	case r.rec.Step == 2 && r.testsReturnTo() != "":
		return advanceOnSub(r.portsStep(ctx, r.testsReturnTo())) // rescue.go
	case r.rec.Step == 2:
		return advance("node %s is %s: its switch ports are left in provisioning", r.rec.Name, orDefault(string(r.rec.LifecycleState()), "in an unknown lifecycle state")), nil
	}
	st, err := r.runTests(ctx)
	if st.kind == stepAdvance && r.rec.Step == 1 {
		st.kind = stepSub
	}
	return st, err
}

// testsReturnTo is the phase the node's switch ports go back to after
// its tests: production for a deployed node, quarantine for a released
// one; "" for any other, or without a fabric (its ports stay as they are).
func (r *nodeRun) testsReturnTo() drivers.Phase {
	if !r.portsFollowTask() {
		return ""
	}
	switch r.rec.LifecycleState() {
	case record.LifecycleDeployed:
		return drivers.PhaseProduction
	case record.LifecycleReleased:
		return drivers.PhaseQuarantine
	}
	return ""
}

// runTests runs the provisioner's hardware tests on the node's machine.
// The driver starts them, answers InProgress while they
// run, Done when every test passed (the machine is back in the state it
// was tested in) and Failed with the provisioner's reason (the failed
// tests) otherwise: the node then fails with that reason, and the
// machine stays as the tests left it for an operator to look at.
func (r *nodeRun) runTests(ctx context.Context) (step, error) {
	if r.rec.MachineID == "" {
		return failed("node %s has no provisioner machine recorded: prepare it first (`prepare_nodes`, or `adopt` its machine), then retry", r.rec.Name), nil
	}
	var res drivers.Result
	err := r.e.callServer(ctx, func(ctx context.Context) (err error) {
		res, err = r.e.cfg.Drivers.Server.Recover(ctx, r.attemptRef(), drivers.RecoveryTest)
		return err
	})
	if err != nil {
		return step{}, err
	}
	if res.Status == drivers.StatusFailed {
		if err := r.testFailedLifecycle(ctx); err != nil {
			return step{}, err
		}
		return failed("hardware tests of machine %s failed: %s (look at the machine's test results in the provisioner; fix it, then retry)", r.rec.MachineID, res.Message), nil
	}
	return r.result(res, true, func() step { return advance("hardware tests of machine %s passed: %s", r.rec.MachineID, res.Message) })
}

// testFailedLifecycle reads the machine after its tests failed: a
// deployed node's machine that the provisioner now holds in a failed
// state (MAAS's Failed testing) is no longer in service, so the node's
// lifecycle reads failed, though a test task does not own the lifecycle.
func (r *nodeRun) testFailedLifecycle(ctx context.Context) error {
	if r.rec.LifecycleState() != record.LifecycleDeployed {
		return nil
	}
	ms, err := r.e.statusCall(ctx, []drivers.NodeRef{r.ref()})
	if err != nil || len(ms) != 1 || ms[0].State == "" {
		return err
	}
	r.rec.Observed = ms[0].State
	if !slices.Contains(deployedStates, ms[0].State) {
		r.rec.Lifecycle = record.LifecycleFailed
	}
	return nil
}
