package orchestrator

import (
	"context"
	"slices"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// testing runs the provisioner's hardware tests on the node's machine
// (test_nodes). The driver starts them, answers InProgress while they
// run, Done when every test passed (the machine is back in the state it
// was tested in) and Failed with the provisioner's reason (the failed
// tests) otherwise: the node then fails with that reason, and the
// machine stays as the tests left it for an operator to look at.
func (r *nodeRun) testing(ctx context.Context) (step, error) {
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
