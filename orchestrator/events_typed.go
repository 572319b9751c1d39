package orchestrator

import "github.com/slipway-dev/slipway/orchestrator/record"

// lifecycle names the typed events that mark the milestones of a node's
// workflow in a task.
type lifecycle struct{ started, completed, failed, manual string }

// onboarding is the deploy workflow's: a node's deploy (or redeploy) is
// its onboarding.
var onboarding = &lifecycle{record.EventOnboardingStarted, record.EventOnboardingCompleted, record.EventOnboardingFailed, record.EventOnboardingManual}

// lifecycles maps the actions whose node workflow is a lifecycle to its
// typed events. The other actions' events stay untyped.
var lifecycles = map[record.Action]*lifecycle{
	record.ActionDeployNodes:   onboarding,
	record.ActionRedeployNodes: onboarding,
}

// started types ev, the event of a node's fresh start in its task, as the
// start of its lifecycle. The event is written with the checkpoint that
// records the start (the node record names the task), so a resumed node
// never announces it twice; a verb (retry, resume, ...) continues the
// node's workflow in the same task and does not announce it again.
func (r *nodeRun) started(ev record.Event) record.Event {
	if lc := lifecycles[r.rec.Action]; lc != nil {
		ev.Type = lc.started
	}
	return ev
}

// ended types ev, the event of the node's final outcome o in its task:
// completed when it reached its goal, failed, or manual intervention
// required. A cancelled node's end is untyped (the task's cancel says
// it). The event is written with the checkpoint that ends the node's run,
// so a resumed task does not repeat it; a verb that runs the node again
// ends in a new one.
func (r *nodeRun) ended(o record.Outcome, ev record.Event) record.Event {
	lc := lifecycles[r.rec.Action]
	if lc == nil {
		return ev
	}
	switch o {
	case record.OutcomeSucceeded:
		ev.Type = lc.completed
	case record.OutcomeFailed:
		ev.Type = lc.failed
	case record.OutcomeManual:
		ev.Type = lc.manual
	}
	return ev
}
