package orchestrator

import (
	"context"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// lifecycleSequence is the state table's path of the actions above (nil
// for any other); decommission_nodes's without options.delete (see
// taskSequence).
func lifecycleSequence(a record.Action) []record.Stage {
	switch a {
	case record.ActionDecommissionNodes:
		return []record.Stage{record.StageReleasing, record.StageReleased}
	case record.ActionRescueEnter:
		return []record.Stage{record.StageRescue, record.StageRescueMode}
	case record.ActionRescueExit:
		return []record.Stage{record.StageRescueExit, record.StageDeployed}
	case record.ActionTestNodes:
		return []record.Stage{record.StageTesting, record.StageTested}
	}
	return nil
}

// taskSequence is the path of t's nodes: its action's, except for a
// decommission that deletes the machines.
func taskSequence(t record.Task) []record.Stage {
	if t.Action == record.ActionDecommissionNodes && t.Options != nil && t.Options.Delete {
		return []record.Stage{record.StageReleasing, record.StageDeleting, record.StageDeleted}
	}
	return sequence(t.Action)
}

// lifecycleStage runs the handler of the stages above; ok is false for a
// stage that is not one of them.
func (r *nodeRun) lifecycleStage(ctx context.Context) (st step, ok bool, err error) {
	switch r.rec.Stage {
	case record.StageDeleting:
		st, err = r.deleting(ctx)
	case record.StageRescue:
		st, err = r.rescueEnter(ctx) // rescue.go
	case record.StageRescueExit:
		st, err = r.rescueExit(ctx)
	case record.StageTesting:
		st, err = r.testing(ctx)
	default:
		return step{}, false, nil
	}
	return st, true, err
}

// restartReleases reports whether restart-clean releases the node's
// machine before running a's workflow again. Rescue, tests, power
// actions and verify act on a machine as it is (a deployed one keeps its
// deployment): restart-clean runs them from the top like rerun.
func restartReleases(a record.Action) bool {
	switch a {
	case record.ActionRescueEnter, record.ActionRescueExit, record.ActionTestNodes, record.ActionPowerOn, record.ActionPowerOff, record.ActionPowerCycle, record.ActionVerifyNodes:
		return false
	}
	return true
}

// options is the task's options (zero when it has none).
func (r *nodeRun) options() record.TaskOptions {
	r.run.mu.Lock()
	defer r.run.mu.Unlock()
	if o := r.run.task.Options; o != nil {
		return *o
	}
	return record.TaskOptions{}
}

// erasePolicy is how the releasing stage erases the node's disks: a
// redeploy's release keeps them (the new deployment overwrites them);
// destroy_nodes and decommission_nodes erase as the task's options say,
// else as the design's policy for the node (its host spec's erase), else
// as its site profile's, else as the Site's lifecycle.erase, else as the
// server driver's default.
func (r *nodeRun) erasePolicy(ctx context.Context) drivers.Erase {
	switch r.rec.Action {
	case record.ActionDestroyNodes, record.ActionDecommissionNodes:
		if o := r.options(); o.Erase != "" {
			return drivers.Erase(o.Erase)
		}
		if r.n != nil && r.n.Spec.Erase != "" { // the node's or its host profile's
			return drivers.Erase(r.n.Spec.Erase)
		}
		if p, ok, err := r.e.siteProfile(ctx, r.d, r.n); err == nil && ok && p.Erase != "" {
			return drivers.Erase(p.Erase)
		}
		if e := r.d.EraseOf(r.n); e != "" { // the Site's lifecycle.erase
			return drivers.Erase(e)
		}
		return r.e.cfg.Erase
	}
	return drivers.EraseNone
}

// releaseWith calls Release with an erase policy under the limits.
func (r *nodeRun) releaseWith(ctx context.Context, erase drivers.Erase) (drivers.Result, error) {
	var res drivers.Result
	err := r.e.callServer(ctx, func(ctx context.Context) (err error) {
		res, err = r.e.cfg.Drivers.Server.Release(ctx, r.ref(), erase)
		return err
	})
	return res, err
}

// deleting removes the machine from the provisioner when the task asks
// for it, the intent recorded first; without options.delete the machine
// stays, released.
func (r *nodeRun) deleting(ctx context.Context) (step, error) {
	if !r.options().Delete {
		return advance("machine %s stays in the provisioner, released (no delete asked)", orDefault(r.rec.MachineID, "(none)")), nil
	}
	if r.rec.MachineID == "" {
		return advance("no machine recorded for the node: nothing to delete"), nil
	}
	if r.rec.Intent == nil || r.rec.Intent.Op != "delete" {
		r.rec.Intent = &record.Intent{Op: "delete", Task: r.run.id, At: now()}
		if err := r.saveErr("intent: delete machine %s from the provisioner", r.rec.MachineID); err != nil {
			return step{}, err
		}
	}
	var res drivers.Result
	err := r.e.callServer(ctx, func(ctx context.Context) (err error) {
		res, err = r.e.cfg.Drivers.Server.Recover(ctx, r.ref(), drivers.RecoveryDelete)
		return err
	})
	if err != nil {
		return step{}, err
	}
	return r.result(res, false, func() step {
		id := r.rec.MachineID
		r.rec.Intent, r.rec.AllocatedBy, r.rec.MachineID, r.rec.Observed = nil, "", "", ObservedDeleted
		return advance("machine %s deleted from the provisioner: %s", id, res.Message)
	})
}

// ObservedDeleted is a node record's observed state once decommission
// deleted its machine.
const ObservedDeleted = "(deleted)"

// recoverStage runs a recovery action on the node's machine until the
// driver reports it done: the driver answers InProgress while the
// machine is on its way (the engine wakes on the machine's next state
// change and asks again), Failed with the provisioner's reason.
func (r *nodeRun) recoverStage(ctx context.Context, action drivers.Recovery, goal string) (step, error) {
	if r.rec.MachineID == "" {
		return failed("node %s has no provisioner machine recorded: deploy it first (or `adopt` its machine), then retry", r.rec.Name), nil
	}
	var res drivers.Result
	err := r.e.callServer(ctx, func(ctx context.Context) (err error) {
		res, err = r.e.cfg.Drivers.Server.Recover(ctx, r.attemptRef(), action)
		return err
	})
	if err != nil {
		return step{}, err
	}
	if res.Status == drivers.StatusFailed {
		return failed("%s of machine %s failed: %s; once the machine is fixed in the provisioner, retry the task", action, r.rec.MachineID, res.Message), nil
	}
	return r.result(res, true, func() step {
		if action == drivers.RecoveryRescue {
			// Done means the provisioner has it in rescue mode now,
			// whatever the last poll saw on the way there.
			r.rec.Observed = expected[record.StageRescueMode][0]
		}
		return advance("machine %s is in %s: %s", r.rec.MachineID, goal, res.Message)
	})
}

// attemptRef is the node's machine for a recovery action of this
// attempt at the stage: the driver counts the action's earlier runs
// (a test run, a failed rescue) only from the stage's start on, so a
// fresh task, or an operator's retry (which restarts the stage's clock),
// runs the action again instead of taking an old run's outcome, while a
// resumed one (after a restart of the engine) picks up the run in
// progress.
func (r *nodeRun) attemptRef() drivers.NodeRef {
	ref := r.ref()
	if r.rec.StageStart.After(ref.BudgetFrom) {
		ref.BudgetFrom = r.rec.StageStart
	}
	return ref
}

// stageTimeout is the current stage's time limit: the Site's
// lifecycle.timeouts in the task's design revision (following the time
// scale like the defaults), else the engine's (Config.Timeouts, then
// DefaultTimeouts).
func (r *nodeRun) stageTimeout() time.Duration {
	if r.d != nil {
		if d, ok := r.d.StageTimeout(string(r.rec.Stage)); ok {
			return max(r.e.scaled(d), min(d, minTimeout))
		}
	}
	return r.e.timeout(r.rec.Stage)
}

// deployRetries is the node's budget of failed deployments released and
// deployed again: the design's lifecycle.deployRetries, else the engine's.
func (r *nodeRun) deployRetries() int {
	if r.d != nil {
		if n, ok := r.d.DeployRetries(); ok {
			return n
		}
	}
	return r.e.cfg.DeployRetries
}

// designTimeoutStages checks that the design's stage names are the
// engine's (a test holds them together).
func designTimeoutStages() []record.Stage {
	out := make([]record.Stage, len(design.TimeoutStages))
	for i, s := range design.TimeoutStages {
		out[i] = record.Stage(s)
	}
	return out
}

// decommissioning types the events of a node's decommission: its
// destroy_nodes or decommission_nodes workflow starting, completing,
// failing or needing an operator (events_typed.go writes them).
var decommissioning = &lifecycle{record.EventDecommissionStarted, record.EventDecommissionCompleted, record.EventDecommissionFailed, record.EventDecommissionManual}

func init() {
	lifecycles[record.ActionDestroyNodes] = decommissioning
	lifecycles[record.ActionDecommissionNodes] = decommissioning
	// Default timeouts of the stages above: MAAS's hardware tests can
	// run for hours on large disks; rescue mode is a PXE boot and a
	// power cycle; a delete is one call.
	DefaultTimeouts[record.StageTesting] = 4 * time.Hour
	DefaultTimeouts[record.StageRescue] = 30 * time.Minute
	DefaultTimeouts[record.StageRescueExit] = 30 * time.Minute
	DefaultTimeouts[record.StageDeleting] = 10 * time.Minute
}
