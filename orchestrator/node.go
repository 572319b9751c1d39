package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slipway-dev/slipway/internal/backoff"
	"github.com/slipway-dev/slipway/orchestrator/record"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/statestore"
)

// sequence is the state table's path for an action: the stages a node
// passes through, the last one terminal.
func sequence(a record.Action) []record.Stage {
	build := []record.Stage{record.StageBaseline, record.StageOOBPrepare, record.StageIdentify, record.StageCommission, record.StageAsBuilt, record.StageConfigure, record.StageDeploy, record.StageBootstrap, record.StageDeployed}
	switch a {
	case record.ActionDeployNodes: // the image is complete in the Site before the deploy (images.go)
		return slices.Insert(build, slices.Index(build, record.StageDeploy), record.StageImages)
	case record.ActionRedeployNodes: // ... and before anything is released
		return append([]record.Stage{record.StageImages, record.StageReleasing}, build...)
	case record.ActionPrepareNodes:
		return []record.Stage{record.StageBaseline, record.StageOOBPrepare, record.StageIdentify, record.StageCommission, record.StageAsBuilt, record.StageReady}
	case record.ActionVerifyNodes:
		return []record.Stage{record.StageVerify, record.StageVerified}
	case record.ActionDestroyNodes:
		return []record.Stage{record.StageReleasing, record.StageReleased}
	case record.ActionPowerOn, record.ActionPowerOff, record.ActionPowerCycle:
		return []record.Stage{record.StagePower, record.StagePowered}
	case record.ActionApplyBaseline:
		return []record.Stage{record.StageBaseline, record.StageBaselined}
	}
	return lifecycleSequence(a) // decommission.go
}

// next is the stage after s in seq; a stage not on the path (releasing
// before a clean restart) leads to the path's start.
func next(seq []record.Stage, s record.Stage) record.Stage {
	i := slices.Index(seq, s)
	if i < 0 {
		return seq[0]
	}
	return seq[min(i+1, len(seq)-1)]
}

// nodeRun drives one node of a task.
type nodeRun struct {
	e   *Engine
	run *taskRun
	d   *design.Design
	n   *design.Node
	seq []record.Stage
	log zerolog.Logger

	rec record.NodeRecord
	res record.NodeResult
	// later holds what the next save writes with the node's record
	// (note, keepWithSave): events of what a stage did between two
	// checkpoints, records that belong to the next one.
	later batch
	// recoveries counts the recoveries this run started whose stage goes
	// on (startRecovery caps them: a machine that is recovered and still
	// refuses is an operator's).
	recoveries int
	// deployLooked: this run looked whether an earlier run left the
	// machine in Failed deployment (deploy_left.go).
	deployLooked bool
	// kept is the lifecycle a cancel found the machine still in (deployed:
	// the task did not take it), which the node keeps (compensate).
	kept record.Lifecycle
	// slotWaitAt: when the node last found no firmware update slot free
	// (zero when it is not waiting for one; baseline_slots.go).
	slotWaitAt time.Time
	// wait: how long the current stage waited on the provisioner or
	// hardware (stagewait.go), for its transition event.
	wait stageWait
	// pend: the wait the round ended with, which loop parks the node on
	// (park.go); exit: called once when the drive is over.
	pend parking
	exit func()
	// gated: the node holds a place at the round gate (gate.go).
	gated bool
}

// stepKind is what a stage handler decided.
type stepKind int

const (
	stepAdvance stepKind = iota // to the next stage
	stepSub                     // to the next sub-step of this stage
	stepWait                    // in progress: call again later
	stepFail                    // failed: the driver's verdict
	stepAgain                   // call the stage again now (the handler saved its progress)
)

type step struct {
	kind stepKind
	msg  string
	wait time.Duration // stepWait: the driver's hint
	poll bool          // stepWait: wake on a status change of the machine
	// woken (stepWait): what the node waits for wakes it (e.wake); it
	// looks again on its own only after MaxWait.
	woken bool
}

func advance(format string, args ...any) step {
	return step{kind: stepAdvance, msg: fmt.Sprintf(format, args...)}
}
func sub(format string, args ...any) step {
	return step{kind: stepSub, msg: fmt.Sprintf(format, args...)}
}
func waitFor(r drivers.Result, poll bool) step {
	return step{kind: stepWait, msg: r.Message, wait: r.RetryAfter, poll: poll}
}
func failed(format string, args ...any) step {
	return step{kind: stepFail, msg: fmt.Sprintf(format, args...)}
}

// drive runs the node to a final outcome, or until the engine stops
// (the checkpoint stays; the next start resumes it), then calls r.exit.
// A waiting node holds no goroutine (park.go): drive returns at its first
// wait, and its wake-ups run the rest.
func (r *nodeRun) drive() {
	if !r.begin(r.run.ctx) {
		r.over()
		return
	}
	r.loop()
}

// begin leases the node and loads its record, starting the task's run
// of it or resuming it from the checkpoint; false when the node is not
// to be driven now.
func (r *nodeRun) begin(ctx context.Context) bool {
	name := r.n.Metadata.Name
	r.res = r.run.result(name)
	r.res.Node = name
	if !r.lease(ctx) {
		if r.run.isCancelled() && r.e.ctx.Err() == nil {
			r.res.Outcome, r.res.Finished, r.res.Reason = record.OutcomeCancelled, now(), "cancelled before it started"
			r.saveResultOnly()
		}
		return false
	}
	rec, _, err := r.e.rec.node(r.e.ctx, name)
	if err != nil {
		r.log.Error().Err(err).Msg("load node record")
		r.unlease()
		return false
	}
	r.rec = rec
	if r.rec.Task != r.run.id {
		return r.startFresh()
	}
	// A verb may have left it at a baseline stage its path lacks.
	r.skipBaseline()
	if r.res.Outcome != record.OutcomeRunning { // resume from the checkpoint
		r.res.Outcome, r.res.Stage = record.OutcomeRunning, r.rec.Stage
		if r.res.Started.IsZero() {
			r.res.Started = now()
		}
	}
	return true
}

// startFresh starts the task's run of the node at its first stage and
// saves it; false when the save failed.
func (r *nodeRun) startFresh() bool {
	if r.rec.Lifecycle == "" { // a record of an earlier version: derived before the stage moves on
		r.rec.Lifecycle = r.rec.LifecycleState()
	}
	if opensBudget(r.run.task.Action) {
		// A new prepare or deploy task: the provisioner's earlier
		// commissioning failures do not count against it.
		r.rec.BudgetFrom = now()
	}
	r.rec.Recovery = nil // another task's recovery: its node was finished
	r.rec.Task, r.rec.LastTask, r.rec.Action = r.run.id, r.run.id, r.run.task.Action
	r.rec.Stage, r.rec.Step, r.rec.Attempts, r.rec.Rounds = r.seq[0], 0, 0, 0
	r.rec.Outcome, r.rec.Class, r.rec.Reason, r.rec.NextAt = record.OutcomeRunning, "", "", time.Time{}
	r.rec.StageStart = now()
	r.res.Started, r.res.Stage, r.res.Outcome = now(), r.rec.Stage, record.OutcomeRunning
	return r.save(r.started(r.event("info", "transition", "%s started at %s", r.run.task.Action, r.rec.Stage)))
}

// round is one turn of the node's loop: stop, resume a recovery, finish,
// wait its turn, time the stage out, or run the stage and act on its
// step; false when the drive is over.
func (r *nodeRun) round(ctx context.Context) bool {
	if r.halted() {
		return false
	}
	if r.rec.Recovery != nil { // a recovery the engine's stop interrupted: resume it at its step
		return r.runRecovery(ctx)
	}
	if r.rec.Stage == r.seq[len(r.seq)-1] {
		r.rec.AllocatedBy = servedHolder(r.rec, r.run.id)
		r.finish(record.OutcomeSucceeded, "", "")
		return false
	}
	if d := time.Until(r.rec.NextAt); d > 0 {
		r.pend = parking{kind: parkSleep, d: d} // then this round again
		return true
	}
	if r.stageTimedOut(ctx) {
		return false
	}
	if !r.enterGate() { // parks until a place is free; then this round again
		return true
	}
	r.wait.asking()
	st, err := r.stage(ctx)
	r.wait.end()
	if err != nil {
		return r.stageFailed(ctx, err)
	}
	return r.take(ctx, st)
}

// halted is true when the drive stops: the engine stopping, the task
// cancelled (after compensating) or the node frozen (finished as
// manual).
func (r *nodeRun) halted() bool {
	if r.e.ctx.Err() != nil {
		return true
	}
	if r.run.isCancelled() {
		r.compensate()
		return true
	}
	if why, ok := r.e.frozenReason(r.n.Metadata.Name); ok {
		r.finish(record.OutcomeManual, string(drivers.NeedsIntervention), "frozen for manual intervention: "+why)
		return true
	}
	return false
}

// stopAsked reports, acting on nothing, whether halted would stop the
// drive now (or ctx ended): a stage that makes several calls in one
// round asks between two.
func (r *nodeRun) stopAsked(ctx context.Context) bool {
	if ctx.Err() != nil || r.e.ctx.Err() != nil || r.run.isCancelled() {
		return true
	}
	_, frozen := r.e.frozenReason(r.n.Metadata.Name)
	return frozen
}

// stageTimedOut fails the node (or recovers its machine first) when the
// stage ran past its timeout; true when it did.
func (r *nodeRun) stageTimedOut(ctx context.Context) bool {
	lim := r.stageTimeout()
	if r.rec.StageStart.IsZero() || time.Since(r.rec.StageStart) <= lim {
		return false
	}
	trigger := fmt.Sprintf("stage %s did not finish within %s", r.rec.Stage, lim.Round(time.Millisecond))
	if r.rec.MachineID != "" && slices.Contains(stuckStages, r.rec.Stage) {
		// The machine may be stuck in the provisioner: get it
		// moving again (abort, release...) before failing.
		r.startRecovery(ctx, trigger, recoveryThenFail)
		return true
	}
	r.fail(drivers.Transient, trigger+"; look at the machine in the provisioner, then retry the task")
	return true
}

// stageDeadline is when the current stage times out (stageTimedOut);
// zero when its start is not known.
func (r *nodeRun) stageDeadline() time.Time {
	if r.rec.StageStart.IsZero() {
		return time.Time{}
	}
	return r.rec.StageStart.Add(r.stageTimeout())
}

// stageFailed handles a stage's error; false when the drive is over.
func (r *nodeRun) stageFailed(ctx context.Context, err error) bool {
	switch {
	case errors.Is(err, errRecovered):
		return false // a recovery failed the node or froze it
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return true // cancelled or stopping: the next round decides
	}
	return r.callFailed(err)
}

// take acts on a stage's step; false when the drive is over.
func (r *nodeRun) take(ctx context.Context, st step) bool {
	switch st.kind {
	case stepAdvance:
		return r.transition(next(r.seq, r.rec.Stage), st.msg)
	case stepSub:
		r.rec.Step++
		r.rec.Attempts = 0
		return r.save(r.event("info", "step", "%s", st.msg))
	case stepWait: // the next call's answer ends the wait
		r.wait.begin(r.hardwareWait(st))
		r.waitStep(st)
	case stepFail:
		r.fail(drivers.Permanent, st.msg)
		return false
	case stepAgain:
	}
	return true
}

// waitStep parks the node as an in-progress result asks: on the batched
// poller when the machine is known, else on a timer that a report of the
// node (ReportNotifier) ends early.
func (r *nodeRun) waitStep(st step) {
	d := min(r.e.scaled(max(st.wait, time.Second)), r.e.cfg.MaxWait)
	if st.woken {
		d = r.e.cfg.MaxWait
	}
	if st.poll && r.rec.MachineID != "" {
		// The batched poll sees the change; MaxWait is only the fallback
		// (the driver's hint is for a caller that polls on its own).
		r.pend = parking{kind: parkPoll}
		return
	}
	r.pend = parking{kind: parkTimer, d: d}
}

// callFailed applies a driver error's class; false when the node is done.
func (r *nodeRun) callFailed(err error) bool {
	class := drivers.Classify(err)
	switch class {
	case drivers.NeedsIntervention:
		r.e.freeze(r.rec.Name, err.Error())
		r.rec.Frozen, r.rec.FrozenWhy = true, err.Error()
		r.finish(record.OutcomeManual, string(class), fmt.Sprintf("%s: %v (fix it, then `release-manual` the node and retry)", r.rec.Stage, err))
		return false
	case drivers.Permanent:
		if r.releaseCall() && !portsFailure(err) { // ports.go: the switch failed, not the release
			// The provisioner refuses the release (MAAS's 409 "cannot be
			// released" in Failed deployment, say): recover the machine
			// (mark broken, then fixed...), then release again.
			return r.startRecovery(r.run.ctx, fmt.Sprintf("the provisioner refused to release machine %s (%v)", r.rec.MachineID, err), recoveryThenContinue)
		}
		r.fail(class, err.Error())
		return false
	}
	r.rec.Attempts++
	r.rec.Total++
	r.res.Attempts++
	budget := r.e.cfg.Retry.Attempts
	if r.rec.Attempts >= budget {
		if r.releaseCall() && !portsFailure(err) {
			// A release that keeps failing (MAAS answering 409 "cannot be
			// released", say): the machine's recovery, then release again.
			r.rec.Attempts = 0
			return r.startRecovery(r.run.ctx, fmt.Sprintf("releasing machine %s failed %d times (%v)", r.rec.MachineID, budget, err), recoveryThenContinue)
		}
		r.fail(class, fmt.Sprintf("gave up after %d attempts: %v", r.rec.Attempts, err))
		return false
	}
	wait := r.e.scaled(r.e.cfg.Retry.backoff(r.rec.Attempts))
	r.rec.NextAt = now().Add(wait)
	return r.save(r.event("warn", "retry", "attempt %d of %d failed (%v); next in %s", r.rec.Attempts, budget, err, wait.Round(time.Millisecond)))
}

// transition moves to a stage and persists it.
func (r *nodeRun) transition(to record.Stage, msg string) bool {
	ev := r.enter(to, msg)
	if why, ok := r.nothingToDo(); ok { // on to the next stage, in the same save
		r.note(ev)
		ev = r.enter(next(r.seq, to), why)
	}
	if r.savesFirst() { // the stage's first save writes the transition too
		r.note(ev)
		return true
	}
	return r.save(ev)
}

// savesFirst: the stage just entered saves before it calls anything, so
// its transition is written with that save rather than alone: a deploy
// that starts a fresh deployment, whose first act is to record its intent
// (deployIntent). Cut short before that save, the node resumes at the
// stage before, which looks again and calls nothing twice that differs.
func (r *nodeRun) savesFirst() bool {
	fresh := r.rec.MachineID == "" || r.rec.Deployment == 0 || r.rec.DeploymentEnded
	return r.rec.Stage == record.StageDeploy && r.rec.Step == 0 && r.rec.Intent == nil && r.rec.AllocatedBy == "" && fresh
}

// enter moves the record to stage to and answers the transition's event.
func (r *nodeRun) enter(to record.Stage, msg string) record.Event {
	from := r.rec.Stage
	r.rec.Stage, r.rec.Step, r.rec.Attempts, r.rec.NextAt, r.rec.StageStart = to, 0, 0, time.Time{}, now()
	r.rec.AddHistory(record.Transition{At: now(), Task: r.run.id, From: from, To: to, Message: msg})
	r.res.Stage = to
	text := fmt.Sprintf("%s → %s", from, to)
	if msg != "" {
		text += ": " + msg
	}
	ev := r.event("info", "transition", "%s", text)
	ev.ProvisionerWait = r.wait.take(r.rec.StageStart, r.rec.Observed)
	return ev
}

// nothingToDo answers why the stage the node just entered has nothing
// to do for it, when it has not and it is not the workflow's last: the
// as-built check of a node with no hardware expectations, no hardware
// tags of its Site and no switch to read (asBuiltNothing). Its round
// would only advance, with a save of its own.
func (r *nodeRun) nothingToDo() (string, bool) {
	if r.rec.Stage != record.StageAsBuilt || r.rec.Stage == r.seq[len(r.seq)-1] {
		return "", false
	}
	return r.asBuiltNothing()
}

func (r *nodeRun) fail(class drivers.Class, reason string) {
	r.finish(record.OutcomeFailed, string(class), reason)
}

// finish records the node's final outcome in this task and frees it.
func (r *nodeRun) finish(o record.Outcome, class, reason string) {
	reason += r.ejectAtEnd(o) // vmedia.go: no ISO stays attached
	r.rec.Outcome, r.rec.Class, r.rec.Reason, r.rec.Task = o, class, reason, ""
	r.res.Outcome, r.res.Class, r.res.Reason, r.res.Finished, r.res.Stage = o, class, reason, now(), r.rec.Stage
	level, text := "info", fmt.Sprintf("%s at %s", o, r.rec.Stage)
	if o != record.OutcomeSucceeded {
		level, text = "error", fmt.Sprintf("%s at %s: %s", o, r.rec.Stage, reason)
	}
	if r.save(r.ended(o, r.event(level, string(o), "%s", text))) {
		r.unlease()
	}
}

// releaseCall reports whether the node's current step releases its
// machine: the releasing stage's release (its step 1 puts the switch
// ports in quarantine, ports.go), or a deploy round's release.
func (r *nodeRun) releaseCall() bool {
	return r.rec.MachineID != "" && (r.rec.Stage == record.StageReleasing && r.rec.Step == 0 ||
		r.rec.Stage == record.StageDeploy && (r.rec.Step == 1 || r.rec.Step == stepReleaseLeft))
}

// opensBudget: a new task of action a gives the node a fresh
// commissioning budget.
func opensBudget(a record.Action) bool {
	return a == record.ActionPrepareNodes || a == record.ActionDeployNodes || a == record.ActionRedeployNodes
}

// stuckStages are the stages whose deadline may mean a machine stuck in
// the provisioner, which a recovery gets moving again.
var stuckStages = []record.Stage{record.StageCommission, record.StageDeploy, record.StageReleasing}

// note keeps ev to be written with the node's next save (before that
// save's own event): what a stage did between two checkpoints.
func (r *nodeRun) note(ev record.Event) { r.later.event(ev) }

// keepWithSave keeps op to be written with the node's next save: a
// record that needs no commit of its own because the stage is redone
// (and the record made again) when that save does not happen.
func (r *nodeRun) keepWithSave(op statestore.Op) { r.later.ops = append(r.later.ops, op) }

func (r *nodeRun) event(level, kind, format string, args ...any) record.Event {
	return record.Event{Time: now(), Task: r.run.id, Node: r.rec.Name, Stage: r.rec.Stage, Level: level, Kind: kind,
		Message: fmt.Sprintf(format, args...), Correlation: r.run.corr}
}

// save persists the record, the task's node result and an event in one
// write. It fails only when the engine is stopping (or the store broke):
// the caller then returns, and the checkpoint before stands.
func (r *nodeRun) save(ev record.Event) bool {
	if why, ok := r.e.frozenReason(r.rec.Name); ok {
		r.rec.Frozen, r.rec.FrozenWhy = true, why
	}
	if l, ok := record.LifecycleAt(r.rec.Action, r.rec.Stage, r.rec.Outcome); ok {
		r.rec.Lifecycle = l
	}
	if r.kept != "" {
		r.rec.Lifecycle = r.kept
	}
	r.rec.Updated = now()
	b := batch{ops: r.later.ops}
	b.node(r.rec)
	b.result(r.run.id, r.res)
	b.event(ev)
	if err := r.e.rec.write(r.e.ctx, &b); err != nil {
		if r.e.ctx.Err() == nil {
			r.log.Error().Err(err).Msg("store node checkpoint")
		}
		return false
	}
	r.later = batch{}
	r.run.setResult(r.res)
	ll := r.log.Debug()
	if ev.Level != "info" {
		ll = r.log.Info()
	}
	ll.Str("stage", string(r.rec.Stage)).Str("kind", ev.Kind).Msg(ev.Message)
	return true
}

func (r *nodeRun) saveResultOnly() {
	var b batch
	b.result(r.run.id, r.res)
	if err := r.e.rec.write(r.e.ctx, &b); err == nil {
		r.run.setResult(r.res)
	}
}

// lease takes the node for this task, waiting while another task holds it.
func (r *nodeRun) lease(ctx context.Context) bool {
	name := r.n.Metadata.Name
	for {
		r.e.mu.Lock()
		holder := r.e.leases[name]
		if holder == "" || holder == r.run.id {
			r.e.leases[name] = r.run.id
			r.e.mu.Unlock()
			return true
		}
		ch := r.e.leaseCh
		r.e.mu.Unlock()
		if r.res.Reason == "" {
			r.res.Reason = "waiting for task " + holder + ", which holds the node"
			r.run.setResult(r.res)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

func (r *nodeRun) unlease() { r.e.unleaseFor(r.rec.Name, r.run.id) }

func (r *nodeRun) ref() drivers.NodeRef {
	return drivers.NodeRef{Name: r.rec.Name, MachineID: r.rec.MachineID, BudgetFrom: r.rec.BudgetFrom}
}

func now() time.Time { return time.Now().UTC() }

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool { return backoff.Sleep(ctx, d) == nil }
