package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Rebootstrap gives a node whose machine runs its current deployment a
// new introspection token, without a redeploy: the previous token is
// revoked and the deployment's reports are dropped, and the node waits at
// the bootstrap stage for new reports, with a fresh deadline, in its
// deploy task (which runs again when it had finished). The provisioner
// delivers user data only at deploy, so the node gets the new token only
// when an operator installs Env on it and runs its bootstrap again.
func (e *Engine) Rebootstrap(ctx context.Context, node, who string) (out record.Rebootstrapped, err error) {
	if e.cfg.Bootstrap == nil {
		return out, fmt.Errorf("%w: no introspection API is configured: nodes have no token to reissue", ErrConflict)
	}
	rec, ok, err := e.rec.node(ctx, node)
	if err != nil {
		return out, err
	}
	if err := rebootstrappable(rec, ok, node); err != nil {
		return out, err
	}
	t, held, err := e.bootstrapTask(ctx, rec)
	if err != nil {
		return out, err
	}
	if !held { // the task runs again for the node: hold the node for it
		if !e.leaseFor(node, t.ID) {
			return out, fmt.Errorf("%w: node %s was just taken by a task; try again", ErrConflict, node)
		}
		defer func() {
			if err != nil {
				e.unleaseFor(node, t.ID)
			}
		}()
	}
	re, err := e.reissue(ctx, t, rec)
	if err != nil {
		return out, err
	}
	out = record.Rebootstrapped{Node: rec, Task: t.ID, Env: string(re.Env), UserData: string(re.UserData)}
	ev := record.Event{Time: now(), Task: t.ID, Node: node, Stage: record.StageBootstrap, Level: "info", Kind: "verb",
		Message: fmt.Sprintf("rebootstrap by %s: a new introspection token for deployment %d (the previous one is revoked, the reports dropped); "+
			"the node runs its bootstrap again once its new environment file is installed; task %s waits for its reports", orDefault(who, "unknown"), rec.Deployment, t.ID)}
	if held { // the running task waits at bootstrap already, with a fresh deadline from the reissue
		var b batch
		b.event(ev)
		return out, e.rec.write(ctx, &b)
	}
	if out.Node, err = e.reopen(ctx, t, rec, ev); err != nil {
		return record.Rebootstrapped{}, err
	}
	return out, nil
}

// rebootstrappable checks that the node's machine runs its recorded
// deployment, past the deploy stage, and that no one froze it.
func rebootstrappable(rec record.NodeRecord, ok bool, node string) error {
	switch {
	case !ok:
		return fmt.Errorf("%w: node %s has no record: no task has deployed it", ErrConflict, node)
	case rec.Frozen:
		return fmt.Errorf("%w: node %s is frozen for manual intervention (%s): `release-manual` it first", ErrConflict, node, rec.FrozenWhy)
	case rec.MachineID == "" || rec.Deployment == 0 || rec.DeploymentEnded:
		return fmt.Errorf("%w: node %s has no deployment to bootstrap (its machine was released, or never deployed): deploy it", ErrConflict, node)
	case rec.Stage != record.StageBootstrap && rec.LifecycleState() != record.LifecycleDeployed: // a power or verify task since leaves it deployed
		return fmt.Errorf("%w: node %s is at stage %s (lifecycle %s): rebootstrap applies at bootstrap or once deployed", ErrConflict, node, rec.Stage, rec.LifecycleState())
	}
	return nil
}

// bootstrapTask is the task the node waits in: the running task holding
// it at the bootstrap stage (held), else its newest deploy task, which
// must have finished.
func (e *Engine) bootstrapTask(ctx context.Context, rec record.NodeRecord) (record.Task, bool, error) {
	if h := e.holder(rec); h != "" {
		if rec.Stage != record.StageBootstrap || h != rec.Task {
			return record.Task{}, false, fmt.Errorf("%w: node %s is held by %s at stage %s: rebootstrap it once it waits at bootstrap or has finished", ErrConflict, rec.Name, h, rec.Stage)
		}
		t, err := e.rec.task(ctx, h)
		return t, true, err
	}
	tasks, err := e.rec.tasks(ctx)
	if err != nil {
		return record.Task{}, false, err
	}
	for _, t := range slices.Backward(tasks) {
		if !slices.Contains(sequence(t.Action), record.StageBootstrap) || !slices.Contains(t.Nodes, rec.Name) {
			continue
		}
		e.mu.Lock()
		_, running := e.runs[t.ID]
		e.mu.Unlock()
		if running || !t.Status.Finished() {
			return record.Task{}, false, fmt.Errorf("%w: task %s, the node's last deploy task, is still running its other nodes: rebootstrap %s when it ends", ErrConflict, t.ID, rec.Name)
		}
		return t, false, nil
	}
	return record.Task{}, false, fmt.Errorf("%w: node %s has no deploy task to wait in (adopted?): deploy it", ErrConflict, rec.Name)
}

// reissue checks that the machine is Deployed, then reissues the node's
// token from the task's design revision.
func (e *Engine) reissue(ctx context.Context, t record.Task, rec record.NodeRecord) (Reissued, error) {
	d, _, err := e.design(ctx, t.Revision)
	if err != nil {
		return Reissued{}, err
	}
	ms, err := e.status(ctx, []drivers.NodeRef{{Name: rec.Name, MachineID: rec.MachineID}})
	if err != nil {
		return Reissued{}, fmt.Errorf("rebootstrap %s: look at machine %s: %w", rec.Name, rec.MachineID, err)
	}
	if len(ms) != 1 || ms[0].State != "Deployed" {
		st := "gone"
		if len(ms) == 1 && ms[0].MachineID != "" {
			st = ms[0].State
		}
		return Reissued{}, fmt.Errorf("%w: machine %s of node %s is %s: rebootstrap needs it Deployed (`adopt` the node, then deploy it)", ErrConflict, rec.MachineID, rec.Name, st)
	}
	return e.cfg.Bootstrap.Reissue(ctx, d, rec.Name, strconv.Itoa(rec.Deployment))
}

// reopen puts the node back at the bootstrap stage of its finished task
// and runs the task again for it (the node's lease is held for the task).
func (e *Engine) reopen(ctx context.Context, t record.Task, rec record.NodeRecord, ev record.Event) (record.NodeRecord, error) {
	var res record.NodeResult
	if err := e.rec.getJSON(ctx, collTaskNodes, t.ID+"/"+rec.Name, &res); err != nil {
		if errors.Is(err, ErrNotFound) {
			res = record.NodeResult{Node: rec.Name, Started: now()}
		} else {
			return record.NodeRecord{}, err
		}
	}
	from := rec.Stage
	if from != record.StageBootstrap {
		rec.Step = 1 // deployed: its switch ports are set; only the reports are awaited
		// A record from before servedHolder: the machine is in service.
		if rec.AllocatedBy == t.ID {
			rec.AllocatedBy = inService
		}
	}
	rec.Task, rec.Action, rec.Stage, rec.Outcome, rec.Attempts, rec.NextAt = t.ID, t.Action, record.StageBootstrap, record.OutcomeRunning, 0, time.Time{}
	rec.Class, rec.Reason, rec.StageStart, rec.Updated = "", "", now(), now()
	rec.AddHistory(record.Transition{At: now(), Task: t.ID, From: from, To: record.StageBootstrap, Message: "rebootstrap: waiting for the node's reports again"})
	res.Stage, res.Outcome, res.Class, res.Reason, res.Finished = record.StageBootstrap, record.OutcomeRunning, "", "", time.Time{}
	t.Status, t.Finished, t.Message, t.Cancel = record.TaskRunning, time.Time{}, "", false
	var b batch
	b.node(rec)
	b.result(t.ID, res)
	b.task(t)
	b.event(ev)
	if err := e.rec.write(ctx, &b); err != nil {
		return record.NodeRecord{}, err
	}
	e.launch(t)
	return rec, nil
}
