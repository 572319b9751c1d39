package orchestrator

import (
	"context"

	"github.com/slipway-dev/slipway/drivers"
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
		return failed("hardware tests of machine %s failed: %s (look at the machine's test results in the provisioner; fix it, then retry)", r.rec.MachineID, res.Message), nil
	}
	return r.result(res, true, func() step { return advance("hardware tests of machine %s passed: %s", r.rec.MachineID, res.Message) })
}
