package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// ErrConflict is wrapped by errors for verbs the task's or node's state
// does not allow.
var ErrConflict = errors.New("conflict")

// TaskVerb applies a verb to a task: it checks that the task may take
// it, picks the nodes the verb selects and sets each one's checkpoint
// (verbNode), then starts the task again on them (relaunch).
func (e *Engine) TaskVerb(ctx context.Context, id string, v record.Verb, who string) (record.Task, error) {
	if v == record.VerbCancel {
		return e.cancelTask(ctx, id, who)
	}
	t, err := e.verbTask(ctx, id, v)
	if err != nil {
		return record.Task{}, err
	}
	results, err := e.rec.results(ctx, id)
	if err != nil {
		return record.Task{}, err
	}
	var b batch
	var picked []string
	for _, res := range results {
		if !verbTakes(v, res) {
			continue
		}
		rec, ok, err := e.verbNode(ctx, t, v, res)
		if err != nil {
			return record.Task{}, err
		}
		if !ok {
			continue
		}
		res.Outcome, res.Class, res.Reason, res.Finished, res.Stage = record.OutcomeRunning, "", "", time.Time{}, rec.Stage
		if res.Started.IsZero() {
			res.Outcome = record.OutcomeQueued // the node run stamps its start
		}
		b.node(rec)
		b.result(id, res)
		picked = append(picked, res.Node)
	}
	if !t.Action.SiteAction() && len(picked) == 0 {
		return record.Task{}, fmt.Errorf("%w: %s selects no node of task %s (outcomes: %s)", ErrConflict, v, id, outcomes(results))
	}
	return e.relaunch(ctx, t, v, who, picked, &b)
}

// verbTask reads the task a verb (other than cancel) applies to and
// checks that it may take it: the task is finished, the verb is known,
// and a site task takes only retry and rerun.
func (e *Engine) verbTask(ctx context.Context, id string, v record.Verb) (record.Task, error) {
	switch v {
	case record.VerbRetry, record.VerbResume, record.VerbRerun, record.VerbRestartClean:
	default:
		return record.Task{}, fmt.Errorf("unknown verb %q: use retry, resume, rerun, restart-clean or cancel", v)
	}
	e.mu.Lock()
	_, running := e.runs[id]
	e.mu.Unlock()
	t, err := e.rec.task(ctx, id)
	if err != nil {
		return record.Task{}, err
	}
	if running || !t.Status.Finished() {
		return record.Task{}, fmt.Errorf("%w: task %s is %s; %s applies to a finished task (cancel it first)", ErrConflict, id, t.Status, v)
	}
	if t.Action.SiteAction() && v != record.VerbRerun && v != record.VerbRetry {
		return record.Task{}, fmt.Errorf("%w: %s is a site task; only retry and rerun apply", ErrConflict, t.Action)
	}
	return t, nil
}

// verbTakes tells whether the verb selects a node of the task by its
// result: retry the failed ones, resume the unfinished and cancelled
// ones, rerun and restart-clean all but those left to manual care.
func verbTakes(v record.Verb, res record.NodeResult) bool {
	switch v {
	case record.VerbRetry:
		return res.Outcome == record.OutcomeFailed
	case record.VerbResume:
		return !res.Outcome.Finished() || res.Outcome == record.OutcomeCancelled
	case record.VerbRerun, record.VerbRestartClean:
		return res.Outcome != record.OutcomeManual
	}
	return false
}

// verbNode reads the record of a node the verb selected and makes it the
// task's again, at the checkpoint the verb starts from. ok is false for
// a frozen node (manual intervention: nothing automatic touches it).
func (e *Engine) verbNode(ctx context.Context, t record.Task, v record.Verb, res record.NodeResult) (record.NodeRecord, bool, error) {
	rec, _, err := e.rec.node(ctx, res.Node)
	if err != nil || rec.Frozen {
		return rec, false, err
	}
	if holder := e.holder(rec); holder != "" && holder != t.ID {
		return rec, false, fmt.Errorf("%w: node %s is held by running task %s; wait for it or cancel it", ErrConflict, res.Node, holder)
	}
	seq := sequence(t.Action)
	// Another task drove the node since this one (e.g. a rescue_exit
	// after a decommission stopped): the record's checkpoint is that
	// task's, not this one's.
	otherSince := rec.LastTask != "" && rec.LastTask != t.ID || !slices.Contains(seq, rec.Stage)
	rec.Task, rec.Action, rec.Outcome, rec.Attempts, rec.NextAt = t.ID, t.Action, record.OutcomeRunning, 0, time.Time{}
	rec.Class, rec.Reason, rec.StageStart, rec.LastTask = "", "", now(), t.ID
	if rec.Lifecycle == "" {
		rec.Lifecycle = rec.LifecycleState()
	}
	if v != record.VerbResume {
		// The operator asks again: the provisioner's commissioning
		// failures so far do not count against this attempt (without
		// it the driver's spent budget fails the node at once).
		rec.BudgetFrom = now()
		rec.Recovery = nil
	}
	verbCheckpoint(&rec, v, t.Action, res, seq, otherSince)
	return rec, true, nil
}

// verbCheckpoint sets the stage a node starts from under the verb; seq is
// the task's workflow and otherSince tells whether another task drove the
// node since this one.
func verbCheckpoint(rec *record.NodeRecord, v record.Verb, action record.Action, res record.NodeResult, seq []record.Stage, otherSince bool) {
	switch v {
	case record.VerbRetry:
		// A fresh budget: the failed deployments counted against
		// DeployRetries are spent, the retry gets its own.
		rec.Rounds = 0
		switch {
		case res.Started.IsZero():
			// Failed before it started (the task's preflight): the
			// record's checkpoint is another task's; start at the top.
			rec.Stage, rec.Step = seq[0], 0
		case otherSince:
			// From the stage this task's node failed at.
			rec.Stage, rec.Step, rec.Intent = res.Stage, 0, nil
			if !slices.Contains(seq, rec.Stage) {
				rec.Stage = seq[0]
			}
		}
	case record.VerbResume:
		resumeCheckpoint(rec, res, seq)
	case record.VerbRerun:
		rec.Stage, rec.Step, rec.Rounds = seq[0], 0, 0
	case record.VerbRestartClean:
		rec.Stage, rec.Step, rec.Rounds = record.StageReleasing, 0, 0
		if action == record.ActionDestroyNodes || !restartReleases(action) { // decommission.go
			rec.Stage = seq[0]
		}
	}
}

// resumeCheckpoint is verbCheckpoint for resume.
func resumeCheckpoint(rec *record.NodeRecord, res record.NodeResult, seq []record.Stage) {
	switch {
	case res.Started.IsZero():
		// Cancelled before it started (it waited for another task's
		// lease): the record's checkpoint is another task's, so this
		// task's workflow starts at its top.
		rec.Stage, rec.Step, rec.Rounds = seq[0], 0, 0
	case rec.Stage == record.StageReleased && !slices.Contains(seq, record.StageReleased):
		// Cancelled after its deploy intent: the compensation released
		// the machine, which stays commissioned and configured, so the
		// workflow continues at deploy (allocating it again).
		rec.Stage, rec.Step, rec.Intent = record.StageDeploy, 0, nil
	}
}

// relaunch writes the task running again with the picked nodes' records
// (in b), leases the nodes to it and starts it.
func (e *Engine) relaunch(ctx context.Context, t record.Task, v record.Verb, who string, picked []string, b *batch) (record.Task, error) {
	t.Status, t.Finished, t.Message, t.Cancel = record.TaskRunning, time.Time{}, "", false
	b.task(t)
	b.event(record.Event{Time: now(), Task: t.ID, Level: "info", Kind: "verb", Correlation: t.Correlation,
		Message: fmt.Sprintf("%s by %s: %d node(s): %s", v, orDefault(who, "unknown"), len(picked), strings.Join(limitList(picked, 10), ", "))})
	if err := e.rec.write(ctx, b); err != nil {
		return record.Task{}, err
	}
	e.mu.Lock()
	for _, n := range picked {
		e.leases[n] = t.ID
	}
	e.mu.Unlock()
	e.launch(t)
	return t, nil
}

// holder is the running task holding a node, "" when none.
func (e *Engine) holder(rec record.NodeRecord) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leases[rec.Name]
}

func (e *Engine) cancelTask(ctx context.Context, id, who string) (record.Task, error) {
	t, err := e.rec.task(ctx, id)
	if err != nil {
		return record.Task{}, err
	}
	if t.Status.Finished() {
		return record.Task{}, fmt.Errorf("%w: task %s already ended (%s)", ErrConflict, id, t.Status)
	}
	t.Cancel = true
	var b batch
	b.task(t)
	b.event(record.Event{Time: now(), Task: id, Level: "warn", Kind: "verb", Correlation: t.Correlation,
		Message: fmt.Sprintf("cancel by %s: stopping; machines this task allocated and did not finish are released", orDefault(who, "unknown"))})
	if err := e.rec.write(ctx, &b); err != nil {
		return record.Task{}, err
	}
	e.mu.Lock()
	run := e.runs[id]
	e.mu.Unlock()
	if run != nil {
		// run.task is the runner's (copied without the lock): the runner
		// stores Cancel from run.cancelled (cancelledTask).
		run.mu.Lock()
		run.cancelled = true
		run.mu.Unlock()
		run.cancel()
	}
	return t, nil
}

// compensate ends a cancelled node: what the provisioner runs for this
// task on the node's machine is aborted (abortCancelled), the machine is
// released when this task holds it (holdsMachine) and did not bring it
// to its goal (the intent first), and the node is marked cancelled (its
// lifecycle too, when the task owns it). A machine the task did not take
// (deployed before it, or left to another) stays as it is: a deployed
// one keeps the node's lifecycle deployed.
func (r *nodeRun) compensate() {
	ctx := r.e.ctx
	r.settleUpdate(ctx)
	note, ok := r.abortCancelled(ctx)
	if !ok {
		return
	}
	if r.holdsMachine() && r.rec.Stage != record.StageDeployed {
		if r.rec.Intent == nil || r.rec.Intent.Op != "release" {
			r.rec.Intent = &record.Intent{Op: "release", Task: r.run.id, At: now()}
			if !r.save(r.event("warn", "intent", "cancelled: releasing machine %s, which this task holds", r.rec.MachineID)) {
				return
			}
		}
		if !r.releaseCancelled(ctx) {
			return
		}
		if err := r.endDeployment(ctx); err != nil && ctx.Err() != nil {
			return
		}
		r.rec.Intent, r.rec.AllocatedBy, r.rec.Observed = nil, "", "Ready"
		r.rec.AddHistory(record.Transition{At: now(), Task: r.run.id, From: r.rec.Stage, To: record.StageReleased, Message: "cancelled"})
		r.rec.Stage = record.StageReleased
		note += r.quarantineCancelled(ctx)
	} else if r.rec.MachineID != "" && slices.Contains(deployedStates, r.rec.Observed) && r.rec.Observed != "Broken" {
		// Deployed before the task, which did not take it: it stays
		// deployed, and so does the node's lifecycle.
		r.kept = record.LifecycleDeployed
	}
	r.finish(record.OutcomeCancelled, "", "task cancelled"+note)
}

// quarantineCancelled puts the switch ports of a node whose machine the
// cancel released in quarantine, as destroy does (ports.go); what it
// could not do is said in the node's reason (switchport drift shows the
// ports until they are fixed).
func (r *nodeRun) quarantineCancelled(ctx context.Context) string {
	if r.e.cfg.Drivers.Network == nil || !r.d.SiteOf(r.n).HasFabric() {
		return ""
	}
	st, err := r.portsStep(ctx, drivers.PhaseQuarantine)
	switch {
	case err != nil:
		return "; its switch ports are not in quarantine: " + err.Error()
	case st.kind == stepFail:
		return "; its switch ports are not in quarantine: " + st.msg
	case st.kind == stepSub:
		r.save(r.event("info", "ports", "cancelled: %s", st.msg))
		return ""
	}
	return "; its switch ports are not confirmed in quarantine (the network driver is not done)"
}

// holdsMachine reports whether this task holds the node's machine: its
// deploy intent took it (deployIntent), or a release it asked for is in
// flight.
func (r *nodeRun) holdsMachine() bool {
	return r.rec.MachineID != "" && r.rec.AllocatedBy == r.run.id
}

// abortCancelled aborts what the provisioner runs on the machine of a
// cancelled node for this task, as MAAS can abort it: commissioning or
// testing that the task's workflow starts (MAAS returns the machine to
// where it was: New or Ready, or the state it was tested in), and a
// deployment of a machine the task holds (Allocated again, which the
// release then takes back). A release or disk erase in flight is not
// aborted (it ends Ready; an aborted erase would leave it failed), nor
// anything the task did not start. note is what the node's reason adds
// when the abort could not be done; ok is false when the engine stops.
func (r *nodeRun) abortCancelled(ctx context.Context) (note string, ok bool) {
	if r.rec.MachineID == "" {
		return "", true
	}
	state, err := r.observe(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return "", false
		}
		state = r.rec.Observed // as last seen: the release, if any, reads it again
	}
	switch {
	case (state == "Commissioning" || state == "Testing") && (slices.Contains(r.seq, record.StageCommission) || slices.Contains(r.seq, record.StageTesting)):
	case state == "Deploying" && r.holdsMachine():
	default:
		return "", true
	}
	done, err := r.recoveryStep(ctx, record.RecAbort)
	if ctx.Err() != nil {
		return "", false
	}
	if err != nil || !done {
		why := "the provisioner refused"
		if err != nil {
			why = err.Error()
		}
		r.log.Warn().Str("machine", r.rec.MachineID).Str("state", state).Str("why", why).Msg("cancel: abort failed")
		return fmt.Sprintf("; aborting the %s of machine %s failed (%s): abort it in the provisioner", strings.ToLower(state), r.rec.MachineID, why), true
	}
	_ = r.save(r.event("warn", "recovery", "cancelled: abort of machine %s done (it was %s)", r.rec.MachineID, state))
	return "", true
}

// releaseCancelled releases the machine of a cancelled node until the
// provisioner has it back: a refusal goes through the machine's recovery
// and releases again, an error is retried with backoff. False: the engine
// stops, or the node failed or went to an operator (recorded).
func (r *nodeRun) releaseCancelled(ctx context.Context) bool {
	for attempt := 1; ; attempt++ {
		res, err := r.release(ctx, false)
		if ctx.Err() != nil {
			return false
		}
		if err == nil && res.Status == drivers.StatusDone {
			return true
		}
		why := res.Message
		if err != nil {
			why = err.Error()
		}
		if err == nil && res.Status == drivers.StatusFailed || err != nil && drivers.Classify(err) == drivers.Permanent {
			// Refused: the machine's recovery (abort, mark broken and
			// fixed...), then release again; one that gives up leaves
			// the node to an operator.
			if !r.startRecovery(ctx, fmt.Sprintf("cancelled, but the provisioner refused to release machine %s (%s)", r.rec.MachineID, why), recoveryThenContinue) {
				return false
			}
			attempt = 0
			continue
		}
		if attempt >= r.e.cfg.Retry.Attempts && err != nil {
			r.fail(drivers.Permanent, "cancelled, but releasing machine "+r.rec.MachineID+" failed: "+why+"; release it in the provisioner")
			return false
		}
		d := r.e.scaled(r.e.cfg.Retry.backoff(attempt))
		if err == nil {
			d = min(r.e.scaled(max(res.RetryAfter, time.Second)), r.e.cfg.MaxWait)
		}
		if !sleep(ctx, d) {
			return false
		}
	}
}

// freeze records a node as frozen for manual intervention (in memory;
// the caller persists the record).
func (e *Engine) freeze(node, why string) {
	e.mu.Lock()
	e.frozen[node] = why
	e.mu.Unlock()
	if e.poll != nil { // a node waiting for its machine stops at the next poll
		e.poll.expire(node)
	}
}

func (e *Engine) frozenReason(node string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	why, ok := e.frozen[node]
	return why, ok
}

// MarkManual freezes a node: nothing automatic touches it until
// ReleaseManual. A task driving it stops at its next step.
func (e *Engine) MarkManual(ctx context.Context, node, why, who string) (record.NodeRecord, error) {
	if err := e.inCurrentDesign(ctx, node); err != nil {
		return record.NodeRecord{}, err
	}
	why = orDefault(why, "marked by "+orDefault(who, "an operator"))
	rec, _, err := e.rec.node(ctx, node)
	if err != nil {
		return record.NodeRecord{}, err
	}
	e.freeze(node, why)
	rec.Frozen, rec.FrozenWhy, rec.Updated = true, why, now()
	var b batch
	b.node(rec)
	b.event(record.Event{Time: now(), Node: node, Stage: rec.Stage, Level: "warn", Kind: "verb",
		Message: fmt.Sprintf("mark-manual-intervention by %s: %s", orDefault(who, "unknown"), why)})
	if err := e.rec.write(ctx, &b); err != nil {
		return record.NodeRecord{}, err
	}
	return rec, nil
}

// inCurrentDesign returns an error wrapping ErrNotFound when node is not
// in the current design revision (or there is none).
func (e *Engine) inCurrentDesign(ctx context.Context, node string) error {
	rev, err := e.currentRevision(ctx)
	if err != nil {
		return fmt.Errorf("%w: node %.80q: %v", ErrNotFound, node, err)
	}
	d, _, err := e.design(ctx, rev)
	if err != nil {
		return err
	}
	if d.Nodes[node] == nil {
		return fmt.Errorf("%w: node %.80q is not in the current design %s: check the name (`orchestrator nodes` lists them)", ErrNotFound, node, short(rev))
	}
	return nil
}

// ReleaseManual unfreezes a node. Its outcome becomes failed with a note
// to retry or rerun the task that was driving it.
func (e *Engine) ReleaseManual(ctx context.Context, node, who string) (record.NodeRecord, error) {
	rec, err := e.frozenRecord(ctx, node)
	if err != nil {
		return record.NodeRecord{}, err
	}
	e.mu.Lock()
	delete(e.frozen, node)
	e.mu.Unlock()
	rec.Frozen, rec.FrozenWhy, rec.Updated = false, "", now()
	if rec.Outcome == record.OutcomeManual {
		rec.Outcome, rec.Reason = record.OutcomeFailed, releasedManual
	}
	var b batch
	b.node(rec)
	b.event(record.Event{Time: now(), Node: node, Stage: rec.Stage, Level: "info", Kind: "verb",
		Message: fmt.Sprintf("release-manual by %s", orDefault(who, "unknown"))})
	moved, err := e.releaseManualResults(ctx, node, &b)
	if err != nil {
		return record.NodeRecord{}, err
	}
	if err := e.rec.write(ctx, &b); err != nil {
		return record.NodeRecord{}, err
	}
	// A task still running its other nodes reports from memory.
	for task, r := range moved {
		e.mu.Lock()
		run := e.runs[task]
		e.mu.Unlock()
		if run != nil {
			run.setResult(r)
		}
	}
	return rec, nil
}

// releasedManual is the reason of what release-manual moves to failed.
const releasedManual = "released from manual intervention: retry or rerun the task to continue"

// frozenRecord reads the record of a node release-manual applies to: a
// frozen node no task holds (a frozen node that left the design can still
// be released).
func (e *Engine) frozenRecord(ctx context.Context, node string) (record.NodeRecord, error) {
	inDesign := e.inCurrentDesign(ctx, node)
	if inDesign != nil && len(node) > record.MaxFilterValueLen { // no record can have that name
		return record.NodeRecord{}, inDesign
	}
	rec, ok, err := e.rec.node(ctx, node)
	if err != nil {
		return record.NodeRecord{}, err
	}
	if inDesign != nil && !rec.Frozen {
		return record.NodeRecord{}, inDesign
	}
	if !ok || !rec.Frozen {
		return record.NodeRecord{}, fmt.Errorf("%w: node %s is not frozen for manual intervention", ErrConflict, node)
	}
	if e.holder(rec) != "" {
		return record.NodeRecord{}, fmt.Errorf("%w: node %s is still held by a running task; wait a moment and try again", ErrConflict, node)
	}
	return rec, nil
}

// releaseManualResults moves the node's results that froze in their tasks
// from manual to failed (into b), so that retry picks them, and answers
// them by task. The record does not name the task (a node frozen before a
// task reached it has no transition of that task in its history), so
// every task that selected the node is looked at.
func (e *Engine) releaseManualResults(ctx context.Context, node string, b *batch) (map[string]record.NodeResult, error) {
	tasks, err := e.rec.tasks(ctx)
	if err != nil {
		return nil, err
	}
	moved := map[string]record.NodeResult{}
	for _, t := range tasks {
		if !slices.Contains(t.Nodes, node) {
			continue
		}
		var r record.NodeResult
		if err := e.rec.getJSON(ctx, collTaskNodes, t.ID+"/"+node, &r); err != nil {
			if errors.Is(err, ErrNotFound) {
				continue
			}
			return nil, err
		}
		if r.Outcome == record.OutcomeManual {
			r.Outcome, r.Reason = record.OutcomeFailed, releasedManual
			b.result(t.ID, r)
			moved[t.ID] = r
		}
	}
	return moved, nil
}

// Adopt takes the provisioner's observed state of the node's machine as
// truth: the record gets the machine and the stage that state means. A
// machine that no longer runs the recorded deployment (Ready, Allocated,
// released) ends it: the node's introspection token is revoked.
func (e *Engine) Adopt(ctx context.Context, node, revision, who string) (record.NodeRecord, error) {
	return e.AdoptMachine(ctx, node, "", revision, who)
}

// AdoptMachine is Adopt; given a machine (its provisioner ID), it
// attaches that machine to the node instead of the one the provisioner
// finds for the node: a machine the sweep reports leaked ("owned by this
// orchestrator but no node record claims it") becomes the node's. The
// machine must carry this orchestrator's marker naming the node, or no
// marker at all, and no other node's record may claim it; a node whose
// record holds another machine still in service is refused. The node
// takes the machine's state (its stage and lifecycle), and the adoption
// is an event naming who did it.
func (e *Engine) AdoptMachine(ctx context.Context, node, machineID, revision, who string) (record.NodeRecord, error) {
	d, n, err := e.adoptNode(ctx, node, revision)
	if err != nil {
		return record.NodeRecord{}, err
	}
	// The node's lease for the adoption: no task starts on the node
	// between the checks below and the record's write.
	const by = "(adopt)"
	if !e.leaseFor(node, by) {
		return record.NodeRecord{}, fmt.Errorf("%w: node %s is held by running task %s; wait for it or cancel it, then adopt", ErrConflict, node, e.holder(record.NodeRecord{Name: node}))
	}
	defer e.unleaseFor(node, by)
	rec, _, err := e.rec.node(ctx, node)
	if err != nil {
		return record.NodeRecord{}, err
	}
	var m drivers.Machine
	how := ""
	if machineID == "" {
		m, err = e.adoptIdentified(ctx, d, n, node, rec)
	} else {
		// One adoption of a machine at a time: two nodes adopting one
		// machine would both find it unclaimed.
		adoptMu.Lock()
		defer adoptMu.Unlock()
		m, err = e.adoptable(ctx, node, machineID, rec)
		how = adoptedHow(m)
	}
	if err != nil {
		return record.NodeRecord{}, err
	}
	from := rec.Stage
	replaced := rec.MachineID != "" && rec.MachineID != m.MachineID
	ended, err := e.endLeftDeployment(ctx, &rec, node, m, replaced)
	if err != nil {
		return record.NodeRecord{}, err
	}
	adoptInto(&rec, node, m, replaced || machineID != "")
	rec.AddHistory(record.Transition{At: now(), From: from, To: rec.Stage, Message: "adopted: machine " + m.MachineID + " is " + m.State + how})
	var b batch
	b.node(rec)
	b.event(record.Event{Time: now(), Node: node, Stage: rec.Stage, Level: "info", Kind: "verb",
		Message: fmt.Sprintf("adopt by %s: machine %s is %s%s → stage %s, lifecycle %s%s", orDefault(who, "unknown"), m.MachineID, m.State, how, rec.Stage, rec.Lifecycle, ended)})
	if err := e.rec.write(ctx, &b); err != nil {
		return record.NodeRecord{}, err
	}
	e.log.Info().Str("node", node).Str("machine", m.MachineID).Str("state", m.State).Str("by", orDefault(who, "unknown")).
		Str("lifecycle", string(rec.Lifecycle)).Msg("node adopted its machine")
	return rec, nil
}

// adoptNode reads the design revision (the current one when revision is
// "") and the node in it that a machine is adopted into.
func (e *Engine) adoptNode(ctx context.Context, node, revision string) (*design.Design, *design.Node, error) {
	if revision == "" {
		var err error
		if revision, err = e.currentRevision(ctx); err != nil {
			return nil, nil, err
		}
	}
	d, _, err := e.design(ctx, revision)
	if err != nil {
		return nil, nil, err
	}
	n := d.Nodes[node]
	if n == nil {
		return nil, nil, fmt.Errorf("%w: node %q is not in design %s: adopt a machine into a node of the current design (`orchestrator nodes` lists them)", ErrNotFound, node, short(revision))
	}
	return d, n, nil
}

// adoptIdentified asks the provisioner which machine is the node's.
func (e *Engine) adoptIdentified(ctx context.Context, d *design.Design, n *design.Node, node string, rec record.NodeRecord) (drivers.Machine, error) {
	dn, err := e.serverNode(ctx, d, n, rec.MachineID)
	if err != nil {
		return drivers.Machine{}, err
	}
	var m drivers.Machine
	var res drivers.Result
	err = e.readServer(ctx, func(ctx context.Context) (err error) {
		m, res, err = e.cfg.Drivers.Server.IdentifyNode(ctx, dn)
		return err
	})
	if err != nil {
		return drivers.Machine{}, err
	}
	if res.Status != drivers.StatusDone {
		return drivers.Machine{}, fmt.Errorf("%w: the provisioner has no machine for node %s yet: %s", ErrConflict, node, res.Message)
	}
	return m, nil
}

// adoptedHow is what the adoption event says of a machine adopted by ID.
func adoptedHow(m drivers.Machine) string {
	if m.OwnerNode != "" {
		return " (adopted by machine ID, marked for the node)"
	}
	return " (adopted by machine ID)"
}

// endLeftDeployment ends the recorded deployment when the machine left it
// (or is another machine): its token and reports must not serve the next
// one. It answers what the adoption event adds ("" when nothing ended).
func (e *Engine) endLeftDeployment(ctx context.Context, rec *record.NodeRecord, node string, m drivers.Machine, replaced bool) (string, error) {
	if rec.Deployment == 0 || rec.DeploymentEnded || !replaced && (m.State == "Deploying" || slices.Contains(deployedStates, m.State)) {
		return "", nil
	}
	if e.cfg.Bootstrap != nil {
		if err := e.cfg.Bootstrap.EndDeployment(ctx, node); err != nil {
			return "", err
		}
	}
	rec.DeploymentEnded = true
	return fmt.Sprintf("; deployment %d is over: the node's introspection token is revoked", rec.Deployment), nil
}

// adoptInto makes the record the node's with machine m in the state m is
// in; fresh (another machine, or one adopted by ID) starts its counters
// anew and owns the machine when it is allocated.
func adoptInto(rec *record.NodeRecord, node string, m drivers.Machine, fresh bool) {
	if fresh || rec.Name == "" {
		rec.Name = node
	}
	rec.MachineID, rec.Observed = m.MachineID, m.State
	rec.Stage, rec.Outcome = stageOf(m.State)
	if fresh {
		rec.Step, rec.Rounds, rec.Attempts = 0, 0, 0
	}
	// The adoption holds what the machine's state says is allocated,
	// whatever an earlier task's record said (the machine may have been
	// released and taken again behind the engine's back): a deploy task
	// that follows takes it over (takeHold) and its cancel releases it.
	rec.AllocatedBy = ""
	if slices.Contains([]string{"Allocated", "Deploying", "Deployed", "Failed deployment", "Broken"}, m.State) {
		rec.AllocatedBy = adoptedHolder
	}
	rec.Lifecycle = adoptedLifecycle(m.State)
	rec.Recovery = nil
	rec.Intent, rec.Class, rec.Reason, rec.Updated = nil, "", "", now()
}

// Holders (AllocatedBy) that are no task: a machine an adoption holds,
// and one in service (its deploy task reached deployed).
const (
	adoptedHolder = "adopted"
	inService     = "in-service"
)

// servedHolder is the holder of rec's machine once task (holding it)
// brought the node to deployed: the machine is in service, and no later
// run of that task (rebootstrap, rerun) releases it when cancelled; the
// record still says the node's deployment allocated it (ours).
func servedHolder(rec record.NodeRecord, task string) string {
	if rec.Stage == record.StageDeployed && rec.AllocatedBy == task {
		return inService
	}
	return rec.AllocatedBy
}

// adoptMu serializes adoptions by machine ID (see AdoptMachine).
var adoptMu sync.Mutex

// adoptable checks that machineID may become node's machine and returns
// it: the provisioner has it; it carries this orchestrator's marker for
// this node, or none (another orchestrator's, or one naming another
// node, is refused); no other node's record claims it; and the node's
// record holds no other machine still in service.
func (e *Engine) adoptable(ctx context.Context, node, machineID string, rec record.NodeRecord) (drivers.Machine, error) {
	if len(machineID) > 200 || strings.ContainsAny(machineID, "/?# \t\n") {
		return drivers.Machine{}, fmt.Errorf("%w: machine ID %.40q is not a provisioner machine ID", ErrConflict, machineID)
	}
	if err := e.unclaimed(ctx, node, machineID, rec); err != nil {
		return drivers.Machine{}, err
	}
	var ms []drivers.Machine
	err := e.readServer(ctx, func(ctx context.Context) (err error) {
		ms, err = e.cfg.Drivers.Server.Status(ctx, []drivers.NodeRef{{MachineID: machineID}})
		return err
	})
	if err != nil {
		return drivers.Machine{}, err
	}
	if len(ms) != 1 || ms[0].MachineID == "" {
		return drivers.Machine{}, fmt.Errorf("%w: the provisioner has no machine %s: check the ID (the sweep's leak events name them)", ErrNotFound, machineID)
	}
	m := ms[0]
	switch {
	case m.Owned && m.OwnerNode != "" && m.OwnerNode != node:
		return drivers.Machine{}, fmt.Errorf("%w: machine %s is marked for node %s, not %s: adopt it into %s", ErrConflict, machineID, m.OwnerNode, node, m.OwnerNode)
	case !m.Owned && m.Node != "":
		return drivers.Machine{}, fmt.Errorf("%w: machine %s carries another orchestrator's marker (node %q): refusing to take it", ErrConflict, machineID, m.Node)
	}
	return m, nil
}

// unclaimed checks the records: no other node's claims machineID, and
// the node's own holds no other machine still in service.
func (e *Engine) unclaimed(ctx context.Context, node, machineID string, rec record.NodeRecord) error {
	recs, err := e.rec.nodes(ctx)
	if err != nil {
		return err
	}
	for _, o := range recs {
		if o.MachineID == machineID && o.Name != node {
			return fmt.Errorf("%w: machine %s is node %s's (its record claims it): it is not leaked; adopt another machine, or destroy %s first", ErrConflict, machineID, o.Name, o.Name)
		}
	}
	if rec.MachineID == "" || rec.MachineID == machineID {
		return nil
	}
	switch rec.LifecycleState() {
	case record.LifecycleNew, record.LifecycleReleased, record.LifecycleCancelled, "":
		return nil
	}
	return fmt.Errorf("%w: node %s already has machine %s (lifecycle %s): destroy the node first (its machine is released), then adopt %s",
		ErrConflict, node, rec.MachineID, rec.LifecycleState(), machineID)
}

// adoptedLifecycle is the lifecycle state a machine's provisioner state
// means for the node that adopts it.
func adoptedLifecycle(state string) record.Lifecycle {
	switch state {
	case "Deployed", "Entering rescue mode", "Rescue mode", "Exiting rescue mode", "Failed to enter rescue mode", "Failed to exit rescue mode":
		return record.LifecycleDeployed
	case "Ready":
		return record.LifecycleReady
	case "New":
		return record.LifecycleNew
	case "Allocated", "Deploying":
		return record.LifecycleDeploying
	case "Commissioning", "Testing":
		return record.LifecyclePreparing
	case "Releasing", "Disk erasing":
		return record.LifecycleReleasing
	}
	return record.LifecycleFailed
}

// stageOf maps a provisioner state to the workflow stage it means.
func stageOf(state string) (record.Stage, record.Outcome) {
	switch state {
	case "Deployed":
		return record.StageDeployed, record.OutcomeSucceeded
	case "Ready":
		return record.StageReady, record.OutcomeSucceeded
	case "Allocated", "Deploying":
		return record.StageDeploy, record.OutcomeRunning
	case "Failed deployment":
		return record.StageDeploy, record.OutcomeFailed
	case "Commissioning", "Testing":
		return record.StageCommission, record.OutcomeRunning
	case "Releasing", "Disk erasing":
		return record.StageReleasing, record.OutcomeRunning
	}
	return record.StageIdentify, record.OutcomeFailed
}

func outcomes(rs []record.NodeResult) string {
	c := map[record.Outcome]int{}
	for _, r := range rs {
		c[r.Outcome]++
	}
	var parts []string
	for _, o := range []record.Outcome{record.OutcomeSucceeded, record.OutcomeFailed, record.OutcomeCancelled, record.OutcomeManual, record.OutcomeRunning, record.OutcomeQueued} {
		if c[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[o], o))
		}
	}
	return strings.Join(parts, ", ")
}

func limitList(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("… %d more", len(s)-n))
}
