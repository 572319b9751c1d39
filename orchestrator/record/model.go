package record

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/design"
)

// Action is what a task does.
type Action string

// Actions.
const (
	ActionValidateDesign Action = "validate_design"
	ActionVerifySite     Action = "verify_site"
	ActionPrepareSite    Action = "prepare_site"
	ActionVerifyNodes    Action = "verify_nodes"
	ActionPrepareNodes   Action = "prepare_nodes"
	ActionDeployNodes    Action = "deploy_nodes"
	ActionRedeployNodes  Action = "redeploy_nodes"
	ActionDestroyNodes   Action = "destroy_nodes"
	ActionPowerOn        Action = "power_on"
	ActionPowerOff       Action = "power_off"
	ActionPowerCycle     Action = "power_cycle"
)

// Actions lists every action in the order an operator meets them.
var Actions = []Action{ActionValidateDesign, ActionVerifySite, ActionPrepareSite, ActionVerifyNodes,
	ActionPrepareNodes, ActionDeployNodes, ActionRedeployNodes, ActionDestroyNodes,
	ActionPowerOn, ActionPowerOff, ActionPowerCycle,
	ActionDecommissionNodes, ActionRescueEnter, ActionRescueExit, ActionTestNodes, // these four: decommission.go
	ActionApplyBaseline, // baseline.go
	ActionSyncImages}    // images.go

// SiteAction reports whether a acts on the site rather than on nodes.
func (a Action) SiteAction() bool {
	return a == ActionValidateDesign || a == ActionVerifySite || a == ActionPrepareSite || a == ActionSyncImages
}

// ParseAction checks an action name.
func ParseAction(s string) (Action, error) {
	if slices.Contains(Actions, Action(s)) {
		return Action(s), nil
	}
	return "", fmt.Errorf("unknown action %q: use one of %v", s, Actions)
}

// TaskStatus is where a task is.
type TaskStatus string

// Task statuses.
const (
	TaskQueued             TaskStatus = "queued"
	TaskRunning            TaskStatus = "running"
	TaskSucceeded          TaskStatus = "succeeded"
	TaskPartiallySucceeded TaskStatus = "partially_succeeded"
	TaskFailed             TaskStatus = "failed"
	TaskCancelled          TaskStatus = "cancelled"
)

// Finished reports a terminal status.
func (s TaskStatus) Finished() bool {
	return s == TaskSucceeded || s == TaskPartiallySucceeded || s == TaskFailed || s == TaskCancelled
}

// Stage is a step of a node workflow.
type Stage string

// Stages. The deploy workflow runs pending → oob-prepare → identify →
// commission → as-built → configure → deploy → bootstrap → deployed.
const (
	StagePending    Stage = "pending"
	StageVerify     Stage = "verify"
	StageOOBPrepare Stage = "oob-prepare"
	StageIdentify   Stage = "identify"
	StageCommission Stage = "commission"
	StageAsBuilt    Stage = "as-built" // the inventory against the design (asbuilt.go)
	StageConfigure  Stage = "configure"
	StageDeploy     Stage = "deploy"
	StageBootstrap  Stage = "bootstrap"
	StageReleasing  Stage = "releasing"
	StagePower      Stage = "power"
	// Terminal stages.
	StageDeployed Stage = "deployed"
	StageReady    Stage = "ready"    // prepare_nodes: commissioned, unallocated
	StageVerified Stage = "verified" // verify_nodes
	StageReleased Stage = "released"
	StagePowered  Stage = "powered"
)

// Outcome of a node within a task.
type Outcome string

// Outcomes.
const (
	OutcomeQueued    Outcome = "queued"  // selected, waiting for its lease or a slot
	OutcomeRunning   Outcome = "running" // advancing (or waiting on the provisioner)
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"
	OutcomeCancelled Outcome = "cancelled"
	// OutcomeManual: frozen until an operator releases it; nothing
	// automatic touches the node.
	OutcomeManual Outcome = "manual-intervention"
)

// Finished reports whether a node result is final for its task.
func (o Outcome) Finished() bool {
	return o == OutcomeSucceeded || o == OutcomeFailed || o == OutcomeCancelled || o == OutcomeManual
}

// Filter selects nodes: each set is a design.NodeFilter (all of its
// criteria must hold: names, labels, tags, racks); the sets combine as a
// union (default: a node matching any set) or an intersection. No sets
// selects every node.
type Filter struct {
	Type string              `json:"type,omitempty"` // union | intersection
	Sets []design.NodeFilter `json:"sets,omitempty"`
}

// Select returns the names of d's nodes the filter selects, sorted.
func (f Filter) Select(d *design.Design) ([]string, error) {
	if f.Type != "" && f.Type != "union" && f.Type != "intersection" {
		return nil, fmt.Errorf("node filter type %.40q: use union or intersection", f.Type)
	}
	var out []string
	for _, name := range d.NodeNames() {
		if f.matches(d.Nodes[name]) {
			out = append(out, name)
		}
	}
	return out, nil
}

func (f Filter) matches(n *design.Node) bool {
	if len(f.Sets) == 0 {
		return true
	}
	inter := f.Type == "intersection"
	for i := range f.Sets {
		m := f.Sets[i].Matches(n)
		if m && !inter {
			return true
		}
		if !m && inter {
			return false
		}
	}
	return inter
}

// Task is one request to act on the site or on a set of nodes.
type Task struct {
	ID        string     `json:"id"`
	Action    Action     `json:"action"`
	Filter    Filter     `json:"node_filter"`
	Revision  string     `json:"design_revision"`
	Requester string     `json:"requester"`
	Status    TaskStatus `json:"status"`
	Nodes     []string   `json:"nodes,omitempty"` // selected when the task was created
	Message   string     `json:"message,omitempty"`
	Created   time.Time  `json:"created"`
	Started   time.Time  `json:"started,omitzero"`
	Finished  time.Time  `json:"finished,omitzero"`
	// Cancel asks the engine to stop the task and compensate.
	Cancel bool `json:"cancel,omitempty"`
	// Correlation is the ID of the API request that created the task (its
	// audit record's request_id); the task's events carry it.
	Correlation string `json:"correlation_id,omitempty"`
	// Options are the action's options (decommission.go), nil when none.
	Options *TaskOptions `json:"options,omitempty"`
}

// NodeResult is one node's result within a task.
type NodeResult struct {
	Node     string    `json:"node"`
	Stage    Stage     `json:"stage"`
	Outcome  Outcome   `json:"outcome"`
	Attempts int       `json:"attempts"` // driver calls that failed, over all stages
	Class    string    `json:"class,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
}

// Intent is a provisioner mutation about to be made, persisted first.
type Intent struct {
	Op   string    `json:"op"` // deploy (allocates when needed) | release
	Task string    `json:"task"`
	At   time.Time `json:"at"`
}

// Transition is one entry of a node's workflow history.
type Transition struct {
	At      time.Time `json:"at"`
	Task    string    `json:"task,omitempty"`
	From    Stage     `json:"from"`
	To      Stage     `json:"to"`
	Message string    `json:"message,omitempty"`
}

// historyLen is how many transitions a node record keeps.
const historyLen = 30

// NodeRecord is the engine's durable view of one node, written after
// every transition: the workflow checkpoint, the lease, the provisioner
// machine, the intent in flight.
//
// Two things are kept apart: Lifecycle is where the node's machine is
// in its life (deployed, ready, released...), which only the workflows
// that own the machine change (prepare, deploy, redeploy, destroy);
// LastTask, Action, Stage and Outcome are the result of the last task
// that drove the node, whatever it was (a power_cycle or verify_nodes
// task leaves a deployed node deployed, at stage powered or verified).
type NodeRecord struct {
	Name      string `json:"name"`
	MachineID string `json:"machine_id,omitempty"`
	Observed  string `json:"observed,omitempty"` // provisioner state last seen
	// ObservedPower is the power state the provisioner last reported for
	// the machine (on, off, unknown), seen with Observed.
	ObservedPower string `json:"observed_power,omitempty"`
	// Lifecycle is the node's lifecycle state. A record written before
	// the field existed has none: LifecycleState derives it.
	Lifecycle Lifecycle `json:"lifecycle,omitempty"`
	// Task holds the node's lease: the task driving it ("" when free).
	Task     string  `json:"task,omitempty"`
	LastTask string  `json:"last_task,omitempty"` // the task running or last run
	Action   Action  `json:"action,omitempty"`    // the workflow running or last run
	Stage    Stage   `json:"stage"`
	Step     int     `json:"step,omitempty"` // sub-step within the stage
	Outcome  Outcome `json:"outcome,omitempty"`
	Attempts int     `json:"attempts,omitempty"` // failed calls in this stage
	Total    int     `json:"total_attempts,omitempty"`
	// Rounds counts failed deployments released and retried.
	Rounds int `json:"rounds,omitempty"`
	// Deployment numbers the allocations of the node's machine; Ended
	// says the last one was released (the next deploy starts a new one).
	Deployment      int     `json:"deployment,omitempty"`
	DeploymentEnded bool    `json:"deployment_ended,omitempty"`
	Intent          *Intent `json:"intent,omitempty"`
	// AllocatedBy holds the machine: the task whose deploy intent took it
	// (a cancel of that task releases it), "adopted" (an adoption; the
	// next deploy task takes it over), "in-service" (its deploy task
	// brought it to deployed: no cancel releases it), "" (no one).
	AllocatedBy string `json:"allocated_by,omitempty"`
	Class       string `json:"class,omitempty"`
	Reason      string `json:"reason,omitempty"`
	// PXEBeforePower: the node's BMC does not keep its boot override
	// (drivers.ErrBootNotKept), so a one-time PXE boot is set right before
	// each power change that is to boot the machine from PXE.
	PXEBeforePower bool      `json:"pxe_before_power,omitempty"`
	Frozen         bool      `json:"frozen,omitempty"`
	FrozenWhy      string    `json:"frozen_reason,omitempty"`
	StageStart     time.Time `json:"stage_started,omitzero"`
	// BudgetFrom opens the node's commissioning budget: the provisioner's
	// commissioning failures before it do not count against the driver's
	// retries. A new prepare or deploy task, and an operator's retry or
	// restart-clean, set it to their start.
	BudgetFrom time.Time `json:"budget_from,omitzero"`
	// Recovery is the recovery in progress on the node's machine (its
	// plan and how far it got), nil when none: a restarted engine
	// resumes it at the step it had reached.
	Recovery *Recovery `json:"recovery,omitempty"`
	// Baseline is the node's last baseline plan and its progress
	// (baseline.go), nil before the first.
	Baseline *Baseline    `json:"baseline,omitempty"`
	NextAt   time.Time    `json:"next_at,omitzero"`
	Updated  time.Time    `json:"updated,omitzero"`
	History  []Transition `json:"history,omitempty"`
}

// AddHistory appends a transition, keeping the last historyLen.
func (r *NodeRecord) AddHistory(t Transition) {
	r.History = append(r.History, t)
	if n := len(r.History); n > historyLen {
		r.History = slices.Clone(r.History[n-historyLen:])
	}
}

// Event is one entry of the engine's event log.
type Event struct {
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Task    string    `json:"task,omitempty"`
	Node    string    `json:"node,omitempty"`
	Stage   Stage     `json:"stage,omitempty"`
	Level   string    `json:"level"` // info | warn | error
	Kind    string    `json:"kind"`  // e.g. transition, retry, failed, leak, drift, task
	Message string    `json:"message"`
	// Type is the event's stable, typed name (one of EventTypes), set on
	// the events that mark a lifecycle milestone; "" on the others.
	Type string `json:"type,omitempty"`
	// Correlation links the event to the API request (its audit record's
	// request_id) that created the task, and so to the task and node.
	Correlation string `json:"correlation_id,omitempty"`
	// ProvisionerWait, on a transition event, is how long (milliseconds)
	// the stage the node left waited on the provisioner or the hardware:
	// from the call that first answered in progress (or the stage's
	// start, when the machine was in a phase then) to the answer of the
	// call that saw the machine move on (stagewait.go). 0 when it never
	// waited.
	ProvisionerWait int64 `json:"provisioner_wait_ms,omitempty"`
}

// Typed event names. A node's deploy workflow is its onboarding; its
// destroy or decommission workflow is its decommission. docs/asyncapi.yaml
// describes them.
const (
	EventOnboardingStarted     = "node.onboarding.started"
	EventOnboardingCompleted   = "node.onboarding.completed"
	EventOnboardingFailed      = "node.onboarding.failed"
	EventOnboardingManual      = "node.onboarding.manual_intervention_required"
	EventDecommissionStarted   = "node.decommission.started"
	EventDecommissionCompleted = "node.decommission.completed"
	EventDecommissionFailed    = "node.decommission.failed"
	EventDecommissionManual    = "node.decommission.manual_intervention_required"
	EventDriftDetected         = "node.drift.detected"
	EventDriftResolved         = "node.drift.resolved"
)

// EventTypes lists every typed event name.
var EventTypes = []string{EventOnboardingStarted, EventOnboardingCompleted, EventOnboardingFailed, EventOnboardingManual,
	EventDecommissionStarted, EventDecommissionCompleted, EventDecommissionFailed, EventDecommissionManual,
	EventDriftDetected, EventDriftResolved, EventImageSync}

// Lifecycle is where a node's machine is in its life, as the workflows
// that own the machine left it. Tasks that only look at or power the
// machine (verify_nodes, power_*) do not change it.
type Lifecycle string

// Lifecycle states.
const (
	LifecycleNew       Lifecycle = "new"       // no workflow has taken the machine anywhere yet
	LifecyclePreparing Lifecycle = "preparing" // prepare_nodes running
	LifecycleReady     Lifecycle = "ready"     // commissioned, unallocated
	LifecycleDeploying Lifecycle = "deploying" // deploy_nodes or redeploy_nodes running
	LifecycleDeployed  Lifecycle = "deployed"
	LifecycleReleasing Lifecycle = "releasing" // destroy_nodes running
	LifecycleReleased  Lifecycle = "released"
	LifecycleFailed    Lifecycle = "failed"    // the owning workflow failed or needs an operator (see the record's reason)
	LifecycleCancelled Lifecycle = "cancelled" // the owning workflow was cancelled before its goal
)

// lifecycleActions are the workflows that own the machine's lifecycle,
// with the state a node is in while each runs.
var lifecycleActions = map[Action]Lifecycle{
	ActionPrepareNodes:  LifecyclePreparing,
	ActionDeployNodes:   LifecycleDeploying,
	ActionRedeployNodes: LifecycleDeploying,
	ActionDestroyNodes:  LifecycleReleasing,
	// While it runs a decommission is releasing.
	ActionDecommissionNodes: LifecycleReleasing,
}

// ownsLifecycle reports whether a's workflow changes the node's
// lifecycle state. Workflows added later that take a machine out of
// service (decommissioning) own it too; looking and powering do not.
func ownsLifecycle(a Action) bool {
	if _, ok := lifecycleActions[a]; ok {
		return true
	}
	return strings.Contains(string(a), "decommission")
}

// LifecycleAt is the lifecycle state a workflow of action a means at
// stage s with outcome o; ok is false when a does not own the lifecycle.
// A terminal stage that names a lifecycle state is that state whatever
// the workflow (adopt, and a resumed node, get there too).
func LifecycleAt(a Action, s Stage, o Outcome) (Lifecycle, bool) {
	if l, ok := stageLifecycle[s]; ok && (o == OutcomeSucceeded || o == "") {
		return l, true
	}
	if !ownsLifecycle(a) {
		return "", false
	}
	switch o {
	case OutcomeFailed, OutcomeManual:
		return LifecycleFailed, true
	case OutcomeCancelled:
		// Whatever the compensation did (a machine the task held is
		// released, at stage released): the workflow was cancelled.
		return LifecycleCancelled, true
	}
	if l, ok := lifecycleActions[a]; ok {
		return l, true
	}
	return LifecycleReleasing, true // decommissioning
}

// stageLifecycle maps the terminal stages that are lifecycle states.
var stageLifecycle = map[Stage]Lifecycle{
	StageDeployed: LifecycleDeployed,
	StageReady:    LifecycleReady,
	StageReleased: LifecycleReleased,
	StageDeleted:  LifecycleDeleted, // a deleted machine is a lifecycle state of its own
}

// LifecycleState is the node's lifecycle state: the recorded one, or,
// for a record written before the engine kept it apart (only a stage),
// the one its last lifecycle workflow left: its stage when that workflow
// was the last one, else the newest lifecycle stage in its history.
func (r NodeRecord) LifecycleState() Lifecycle {
	if r.Lifecycle != "" {
		return r.Lifecycle
	}
	if r.Stage == "" || r.Stage == StagePending {
		return LifecycleNew
	}
	if l, ok := LifecycleAt(r.Action, r.Stage, r.Outcome); ok && (ownsLifecycle(r.Action) || r.Action == "") {
		return l
	}
	for i := len(r.History) - 1; i >= 0; i-- {
		if l, ok := stageLifecycle[r.History[i].To]; ok {
			return l
		}
	}
	if r.MachineID == "" {
		return LifecycleNew
	}
	return "" // unknown: the history no longer reaches back to a lifecycle stage
}

// InRescue reports whether the record says the node's machine is in
// rescue mode or on its way in or out.
func (r NodeRecord) InRescue() bool {
	switch r.Stage {
	case StageRescue, StageRescueMode, StageRescueExit:
		return r.Action == ActionRescueEnter || r.Action == ActionRescueExit
	}
	return false
}

// Rebootstrapped is what Rebootstrap did. Env and UserData carry the
// node's new introspection token: they are for the node (through an
// operator) and must not be logged.
type Rebootstrapped struct {
	Node NodeRecord `json:"node"`
	// Task is the task that waits for the node's boot action reports.
	Task string `json:"task"`
	// Env is the new /etc/slipway/bootstrap.env; UserData the node's
	// cloud-config with the new token.
	Env      string `json:"bootstrap_env"`
	UserData string `json:"user_data"`
}

// Request asks for a task.
type Request struct {
	Action    Action `json:"action"`
	Filter    Filter `json:"node_filter"`
	Revision  string `json:"design_revision,omitempty"` // "" means the current revision
	Requester string `json:"requester,omitempty"`
	// Correlation is the ID of the API request that asks for the task
	// (its audit record's request_id), at most MaxCorrelationLen bytes;
	// the task and every event written for it carry it. "" for tasks
	// started outside the API (the CLI).
	Correlation string `json:"correlation_id,omitempty"`
	// Options are the action's options (decommission_nodes: erase,
	// delete; destroy_nodes: erase); nil for none (decommission.go).
	Options *TaskOptions `json:"options,omitempty"`
}

// Verb is a recovery operation on a task.
type Verb string

// Task verbs. Each is its own operation:
//   - retry: failed nodes only, from the stage that failed, with a fresh
//     retry budget;
//   - resume: nodes that had not finished (a cancelled or interrupted
//     task) continue from their last checkpoint; failed nodes stay failed;
//   - rerun: every node from the top of the workflow, adopting what the
//     provisioner already has (look-then-act skips what is done);
//   - restart-clean: every node's machine is released first, then the
//     workflow runs from the top;
//   - cancel: stop the task and release what it allocated that did not
//     reach its goal.
const (
	VerbRetry        Verb = "retry"
	VerbResume       Verb = "resume"
	VerbRerun        Verb = "rerun"
	VerbRestartClean Verb = "restart-clean"
	VerbCancel       Verb = "cancel"
)
