package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// What a node does once its recovery's steps are done.
const (
	recoveryThenFail     = "fail"     // the node fails with the recovery's reason (retry deploys again)
	recoveryThenContinue = "continue" // the stage goes on (a release that was refused is asked again)
)

// planRecovery is the one place that says how the engine gets a stuck
// machine moving again, as a MAAS operator would: it maps the machine's
// observed state to the steps that bring it back to Ready. ours says the
// node's current deployment allocated the machine: nothing that only an
// allocation allows (abort of a deployment, marking, releasing) is
// planned for another's machine. An empty plan with no reason means
// there is nothing to do; a reason means the engine gives up and an
// operator must act (the reason says what to do).
func planRecovery(state string, ours bool) ([]record.RecoveryStep, string) {
	notOurs := func(what string) string {
		return fmt.Sprintf("the machine is %s, and this node's deployment did not allocate it: %s in the provisioner, then `release-manual` the node and retry", state, what)
	}
	switch state {
	case "Ready", "New", "":
		return nil, ""
	case "Commissioning", "Testing":
		return []record.RecoveryStep{record.RecAbort}, "" // nothing allocated: aborting leaves it as it was before
	case "Deploying", "Disk erasing":
		if !ours {
			return nil, notOurs("abort the operation and release it")
		}
		return []record.RecoveryStep{record.RecAbort, record.RecRelease}, ""
	case "Allocated":
		if !ours {
			return nil, notOurs("release it")
		}
		return []record.RecoveryStep{record.RecRelease}, ""
	case "Broken":
		if !ours {
			return nil, notOurs("repair it, mark it fixed and release it")
		}
		return []record.RecoveryStep{record.RecMarkFixed, record.RecRelease}, ""
	case "Failed deployment", "Failed releasing", "Failed disk erasing":
		// The provisioner refuses to release it as it is: marking it
		// broken, then fixed, returns it to Ready (MAAS's way out).
		if !ours {
			return nil, notOurs("mark it broken, then fixed, and release it")
		}
		return []record.RecoveryStep{record.RecMarkBroken, record.RecMarkFixed, record.RecRelease}, ""
	}
	return nil, fmt.Sprintf("the machine is %s, a state the engine has no recovery for: bring it to Ready in the provisioner (or release it), then `release-manual` the node and retry", state)
}

// busyStates are the provisioner's states of a machine in a phase of
// its own (commissioning, deploying, erasing): an abort stops it.
var busyStates = []string{"Commissioning", "Testing", "Deploying", "Disk erasing"}

// stepReached reports whether a step's goal holds for a machine in
// state: a step asked again after a crash, or answered Failed because
// the machine is already past it, counts as done.
func stepReached(s record.RecoveryStep, state string) bool {
	switch s {
	case record.RecAbort:
		return !slices.Contains(busyStates, state)
	case record.RecMarkBroken:
		return state == "Broken" || state == "Ready" || state == "Deployed"
	case record.RecMarkFixed:
		return state != "Broken"
	case record.RecRelease:
		return state == "Ready" || state == "New"
	}
	return false
}

// maxRecoveries caps the recoveries a node run starts whose stage goes
// on: one that still finds the machine stuck after them gives up.
const maxRecoveries = 2

// ours says the node's current deployment allocated its machine.
func (r *nodeRun) ours() bool {
	return r.rec.MachineID != "" && (r.rec.AllocatedBy != "" || r.rec.Deployment > 0 && !r.rec.DeploymentEnded)
}

// observe reads the machine's state from the provisioner ("" when it has
// no such machine).
func (r *nodeRun) observe(ctx context.Context) (string, error) {
	ms, err := r.e.status(ctx, []drivers.NodeRef{r.ref()})
	if err != nil {
		return "", err
	}
	if len(ms) != 1 || ms[0].MachineID == "" {
		return "", nil
	}
	r.rec.Observed = ms[0].State
	return ms[0].State, nil
}

// startRecovery looks at the machine, plans its recovery and records the
// plan (the checkpoint a restarted engine resumes from), then runs it.
// It returns false when the node is done (failed, or frozen for manual
// intervention); true when its stage goes on.
func (r *nodeRun) startRecovery(ctx context.Context, trigger, then string) bool {
	state, err := r.observe(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		r.fail(drivers.Classify(err), fmt.Sprintf("%s; reading machine %s's state to recover it failed: %v; look at the machine in the provisioner, then retry the task", trigger, r.rec.MachineID, err))
		return false
	}
	if state == "" {
		r.fail(drivers.Permanent, fmt.Sprintf("%s; the provisioner has no machine %s any more: `rerun` the task to identify the node's machine again", trigger, r.rec.MachineID))
		return false
	}
	steps, why := planRecovery(state, r.ours())
	if why != "" {
		r.manual(fmt.Sprintf("%s; %s", trigger, why))
		return false
	}
	if then == recoveryThenContinue {
		if r.recoveries >= maxRecoveries {
			r.manual(fmt.Sprintf("%s; machine %s is %s after %d recoveries (%s): bring it to Ready in the provisioner, then `release-manual` the node and retry",
				trigger, r.rec.MachineID, orDefault(state, "unknown"), r.recoveries, planText(steps)))
			return false
		}
		r.recoveries++
	}
	r.rec.Recovery = &record.Recovery{Trigger: trigger, Observed: state, Steps: steps, Then: then, Started: now()}
	if !r.save(r.event("warn", "recovery", "%s; machine %s is %s: recovering (%s)", trigger, r.rec.MachineID, orDefault(state, "unknown"), planText(steps))) {
		return false
	}
	return r.runRecovery(ctx)
}

func planText(steps []record.RecoveryStep) string {
	if len(steps) == 0 {
		return "nothing to do"
	}
	s := make([]string, len(steps))
	for i, st := range steps {
		s[i] = string(st)
	}
	return strings.Join(s, ", then ")
}

// runRecovery applies the recorded plan from the step it reached, saving
// after each step. A step answered Failed is looked at again (the
// machine may be past it); one that cannot be done freezes the node for
// manual intervention. It returns as startRecovery.
func (r *nodeRun) runRecovery(ctx context.Context) bool {
	rc := r.rec.Recovery
	for rc.Done < len(rc.Steps) {
		st := rc.Steps[rc.Done]
		ok, err := r.recoveryStep(ctx, st)
		if err != nil {
			if ctx.Err() != nil {
				return false // stopping: the checkpoint resumes this step
			}
			if drivers.Classify(err) == drivers.NeedsIntervention {
				r.manual(fmt.Sprintf("%s; recovery step %s of machine %s failed: %v; fix that, finish it in the provisioner (%s), then `release-manual` the node and retry",
					rc.Trigger, st, r.rec.MachineID, err, planText(rc.Steps[rc.Done:])))
				return false
			}
			r.manual(fmt.Sprintf("%s; recovery step %s of machine %s kept failing: %v; finish it in the provisioner (%s), then `release-manual` the node and retry",
				rc.Trigger, st, r.rec.MachineID, err, planText(rc.Steps[rc.Done:])))
			return false
		}
		if !ok {
			r.manual(fmt.Sprintf("%s; recovery step %s of machine %s was refused (the machine is %s): finish it in the provisioner (%s), then `release-manual` the node and retry",
				rc.Trigger, st, r.rec.MachineID, orDefault(r.rec.Observed, "in an unknown state"), planText(rc.Steps[rc.Done:])))
			return false
		}
		rc.Done++
		if st == record.RecRelease {
			if err := r.endDeployment(ctx); err != nil {
				if ctx.Err() != nil {
					return false
				}
				rc.Done-- // the release stands; ending the deployment is asked again
				r.manual(fmt.Sprintf("%s; machine %s is released, but ending the node's deployment failed: %v; `release-manual` the node and retry", rc.Trigger, r.rec.MachineID, err))
				return false
			}
			r.rec.Intent, r.rec.AllocatedBy, r.rec.Observed = nil, "", "Ready"
		}
		if !r.save(r.event("info", "recovery", "recovery step %d of %d done: %s of machine %s", rc.Done, len(rc.Steps), st, r.rec.MachineID)) {
			return false
		}
	}
	r.rec.Recovery = nil
	if rc.Then == recoveryThenFail && len(rc.Steps) == 0 {
		r.fail(drivers.Transient, fmt.Sprintf("%s; machine %s is %s: nothing to recover; look at why the stage did not finish, then `retry` the task",
			rc.Trigger, r.rec.MachineID, orDefault(rc.Observed, "unknown to the provisioner")))
		return false
	}
	if rc.Then == recoveryThenFail {
		r.fail(drivers.Transient, fmt.Sprintf("%s; machine %s was %s: %s done, it is back in the pool; look at why it stuck, then `retry` the task",
			rc.Trigger, r.rec.MachineID, orDefault(rc.Observed, "unknown"), planText(rc.Steps)))
		return false
	}
	return r.save(r.event("info", "recovery", "recovered machine %s (%s); %s goes on", r.rec.MachineID, planText(rc.Steps), r.rec.Stage))
}

// recoveryStep runs one step until the provisioner reports it done
// (polling while in progress, retrying transient errors within the
// retry budget). ok is false when the provisioner refused it and the
// machine is not past it.
func (r *nodeRun) recoveryStep(ctx context.Context, st record.RecoveryStep) (bool, error) {
	// A step gets its stage's time (a release the releasing stage's):
	// one still in progress after it (an erase that hangs again, say) is
	// the operator's.
	lim, start := r.stageTimeout(), time.Now()
	if st == record.RecRelease {
		saved := r.rec.Stage
		r.rec.Stage = record.StageReleasing
		lim = r.stageTimeout()
		r.rec.Stage = saved
	}
	for attempt := 1; ; {
		var res drivers.Result
		err := r.e.callServer(ctx, func(ctx context.Context) (err error) {
			if st == record.RecRelease {
				res, err = r.e.cfg.Drivers.Server.Release(ctx, r.ref(), r.erasePolicy(ctx))
			} else {
				res, err = r.e.cfg.Drivers.Server.Recover(ctx, r.ref(), drivers.Recovery(st))
			}
			return err
		})
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil || drivers.Classify(err) != drivers.Transient || attempt >= r.e.cfg.Retry.Attempts {
				return false, err
			}
			wait = r.e.scaled(r.e.cfg.Retry.backoff(attempt))
			attempt++
			r.log.Warn().Err(err).Str("step", string(st)).Int("attempt", attempt).Msg("recovery step failed; retrying")
		case res.Status == drivers.StatusDone:
			return true, nil
		case res.Status == drivers.StatusFailed:
			state, oerr := r.observe(ctx)
			if oerr != nil {
				return false, oerr
			}
			return stepReached(st, state), nil
		default:
			if time.Since(start) > lim {
				return false, fmt.Errorf("still in progress after %s: %s", lim.Round(time.Millisecond), res.Message)
			}
			wait = min(r.e.scaled(max(res.RetryAfter, time.Second)), r.e.cfg.MaxWait)
		}
		if !sleep(ctx, wait) {
			return false, ctx.Err()
		}
	}
}

// manual freezes the node for manual intervention with why, which names
// the machine and what the operator does next.
func (r *nodeRun) manual(why string) {
	r.e.freeze(r.rec.Name, why)
	r.rec.Frozen, r.rec.FrozenWhy = true, why
	r.finish(record.OutcomeManual, string(drivers.NeedsIntervention), fmt.Sprintf("%s: %s", r.rec.Stage, why))
}

// errRecovered tells the drive loop that a stage handler ran a recovery
// and the node is done (failed or frozen).
var errRecovered = errors.New("recovery ended the node")
