package maas

import (
	"context"

	"github.com/slipway-dev/slipway/drivers"
)

// Recover runs a recovery action: abort stops a running commissioning,
// deployment, disk erasing or testing (POST op=abort); mark-fixed
// returns a Broken machine to Ready, or Deployed if it was (POST
// op=mark_fixed). An action that does not apply to the machine's state is
// Failed naming the state; an unknown action is a Permanent error.
func (d *Driver) Recover(ctx context.Context, n drivers.NodeRef, action drivers.Recovery) (drivers.Result, error) {
	switch action {
	case drivers.RecoveryAbort, drivers.RecoveryMarkFixed:
	default:
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "maas: unknown recovery action %q (want %s or %s)",
			action, drivers.RecoveryAbort, drivers.RecoveryMarkFixed)
	}
	m, err := d.fetchMachine(ctx, n.MachineID)
	if err != nil {
		return drivers.Result{}, err
	}
	op := ""
	switch {
	case action == drivers.RecoveryAbort:
		switch m.Status {
		case stCommissioning, stDeploying, stDiskErasing, stTesting:
			op = "abort"
		}
	case action == drivers.RecoveryMarkFixed:
		if m.Status == stBroken {
			op = "mark_fixed"
		}
	}
	if op == "" {
		return drivers.Failed("cannot %s: %s", action, describe(m)), nil
	}
	nm, err := d.machineOp(ctx, m.SystemID, op, nil)
	if err != nil {
		return drivers.Result{}, err
	}
	return drivers.Done("%s: machine %s was %s, now %s", action, m.SystemID, m.StatusName, nm.StatusName), nil
}
