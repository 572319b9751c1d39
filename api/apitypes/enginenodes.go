package apitypes

import (
	"time"

	"github.com/slipway-dev/slipway/orchestrator/record"
)

// NodeRecord is the engine's view of one node (its workflow): the
// checkpoint, the lease, the provisioner machine, the intent in flight.
// Lifecycle is where the machine is in its life; LastTask, Action, Stage
// and Outcome are the result of the last task that drove the node.
type NodeRecord struct {
	Name      string `json:"name"`
	MachineID string `json:"machine_id,omitempty"`
	Observed  string `json:"observed,omitempty"` // provisioner state last seen
	// ObservedPower is the power state the provisioner last reported.
	ObservedPower string           `json:"observed_power,omitempty"`
	Lifecycle     record.Lifecycle `json:"lifecycle,omitempty"`
	// Task holds the node's lease ("" when free).
	Task     string         `json:"task,omitempty"`
	LastTask string         `json:"last_task,omitempty"`
	Action   record.Action  `json:"action,omitempty"`
	Stage    record.Stage   `json:"stage"`
	Step     int            `json:"step,omitempty"`
	Outcome  record.Outcome `json:"outcome,omitempty"`
	Attempts int            `json:"attempts,omitempty"` // failed calls in this stage
	Total    int            `json:"total_attempts,omitempty"`
	// Rounds counts failed deployments released and retried.
	Rounds          int     `json:"rounds,omitempty"`
	Deployment      int     `json:"deployment,omitempty"`
	DeploymentEnded bool    `json:"deployment_ended,omitempty"`
	Intent          *Intent `json:"intent,omitempty"`
	// AllocatedBy is who holds the machine: a task, "adopted",
	// "in-service" or "" (no one).
	AllocatedBy    string    `json:"allocated_by,omitempty"`
	Class          string    `json:"class,omitempty"`
	Reason         string    `json:"reason,omitempty"`
	PXEBeforePower bool      `json:"pxe_before_power,omitempty"`
	Frozen         bool      `json:"frozen,omitempty"`
	FrozenWhy      string    `json:"frozen_reason,omitempty"`
	StageStart     time.Time `json:"stage_started,omitzero"`
	BudgetFrom     time.Time `json:"budget_from,omitzero"`
	// Recovery is the recovery of the node's machine in progress, nil
	// when none.
	Recovery *Recovery    `json:"recovery,omitempty"`
	NextAt   time.Time    `json:"next_at,omitzero"`
	Updated  time.Time    `json:"updated,omitzero"`
	History  []Transition `json:"history,omitempty"`
}

// Intent is a provisioner mutation the engine is about to make.
type Intent struct {
	Op   string    `json:"op"` // deploy | release
	Task string    `json:"task"`
	At   time.Time `json:"at"`
}

// Transition is one entry of a node's workflow history.
type Transition struct {
	At      time.Time    `json:"at"`
	Task    string       `json:"task,omitempty"`
	From    record.Stage `json:"from"`
	To      record.Stage `json:"to"`
	Message string       `json:"message,omitempty"`
}

// Recovery is a recovery of a node's machine in progress.
type Recovery struct {
	Trigger  string                `json:"trigger"`  // what started it
	Observed string                `json:"observed"` // the machine's state the plan was made for
	Steps    []record.RecoveryStep `json:"steps"`
	Done     int                   `json:"done"` // steps completed
	Then     string                `json:"then"` // fail | continue
	Started  time.Time             `json:"started"`
}

// Rebootstrapped is the answer of POST /nodes/{name}/rebootstrap. Env and
// UserData carry the node's new introspection token.
type Rebootstrapped struct {
	Node NodeRecord `json:"node"`
	// Task waits for the node's boot action reports.
	Task     string `json:"task"`
	Env      string `json:"bootstrap_env"`
	UserData string `json:"user_data"`
}

// AsBuiltRecord is a node's last as-built check.
type AsBuiltRecord struct {
	Node      string `json:"node"`
	MachineID string `json:"machine_id,omitempty"`
	// Inventory is the digest of the inventory checked.
	Inventory  string    `json:"inventory"`
	Checked    time.Time `json:"checked"`
	Mismatches []string  `json:"mismatches,omitempty"`
	// Accepted is an operator's acceptance of one inventory, nil when none.
	Accepted *HardwareAcceptance `json:"accepted,omitempty"`
}

// HardwareAcceptance is an operator's acceptance of a machine as built.
type HardwareAcceptance struct {
	Inventory  string    `json:"inventory"` // the digest accepted
	MachineID  string    `json:"machine_id,omitempty"`
	By         string    `json:"by"`
	At         time.Time `json:"at"`
	Mismatches []string  `json:"mismatches"` // what was accepted
}
