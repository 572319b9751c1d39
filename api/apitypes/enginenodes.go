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
	Recovery *Recovery `json:"recovery,omitempty"`
	// Baseline is the node's last baseline plan (the differences from its
	// hardware profile's firmware, BIOS and RAID baseline) and how far
	// applying it got; nil before the first.
	Baseline *Baseline    `json:"baseline,omitempty"`
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

// Baseline is a node's baseline plan (the differences between its
// machine and its hardware profile's firmware, BIOS and RAID baseline)
// and how far applying it got.
type Baseline struct {
	Task    string           `json:"task,omitempty"`
	Planned time.Time        `json:"planned,omitzero"`
	Plan    []BaselineChange `json:"plan,omitempty"`
	// Reboot: applying the plan needs a system reset.
	Reboot  bool             `json:"reboot,omitempty"`
	DryRun  bool             `json:"dry_run,omitempty"`
	Updates []FirmwareUpdate `json:"updates,omitempty"`
	// BIOS: the settings to stage; Staged: they were.
	BIOS      map[string]string `json:"bios,omitempty"`
	Staged    bool              `json:"bios_staged,omitempty"`
	Volumes   []VolumeBuild     `json:"volumes,omitempty"`
	ResetAt   time.Time         `json:"reset_at,omitzero"`
	ResetDone bool              `json:"reset_done,omitempty"`
	Verified  time.Time         `json:"verified,omitzero"`
}

// BaselineChange is one difference: kind firmware (item: the component,
// target: the BMC's inventory items), bios (item: the attribute) or raid
// (item: the volume).
type BaselineChange struct {
	Kind   string `json:"kind"`
	Item   string `json:"item"`
	Target string `json:"target,omitempty"`
	Have   string `json:"have"`
	Want   string `json:"want"`
}

// FirmwareUpdate is one firmware update of a plan: its BMC task (handle)
// once started, its last progress, whether it is done.
type FirmwareUpdate struct {
	Component string    `json:"component"`
	Version   string    `json:"version"`
	Targets   []string  `json:"targets"`
	SHA256    string    `json:"sha256"`
	Started   time.Time `json:"started,omitzero"`
	Handle    string    `json:"handle,omitempty"`
	Progress  string    `json:"progress,omitempty"`
	Seen      time.Time `json:"seen,omitzero"`
	Done      bool      `json:"done,omitempty"`
}

// VolumeBuild is one RAID volume of a plan.
type VolumeBuild struct {
	Name    string    `json:"name"`
	Started time.Time `json:"started,omitzero"`
	Done    bool      `json:"done,omitempty"`
}
