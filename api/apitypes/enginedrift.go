package apitypes

import (
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// DriftRecord is one open drift: one per node and kind.
type DriftRecord struct {
	Node      string           `json:"node"`
	Kind      record.DriftKind `json:"kind"`
	MachineID string           `json:"machine_id,omitempty"`
	Stage     record.Stage     `json:"stage,omitempty"` // the node record's stage
	Expected  string           `json:"expected"`
	Observed  string           `json:"observed"`
	Policy    string           `json:"policy"` // report | repair
	FirstSeen time.Time        `json:"first_seen"`
	LastSeen  time.Time        `json:"last_seen"`
	// Note says what reconciliation did about it.
	Note string `json:"note,omitempty"`
}

// ReconcileRun summarises one reconciliation run.
type ReconcileRun struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Trigger  string    `json:"trigger"` // schedule | api:... | cli
	Owned    int       `json:"owned"`
	Examined int       `json:"examined"`
	Open     int       `json:"open"`
	Detected []string  `json:"detected,omitempty"` // node/kind
	Cleared  []string  `json:"cleared,omitempty"`
	Repaired []string  `json:"repaired,omitempty"`
	Error    string    `json:"error,omitempty"`
}

// ReconcileStatus is where reconciliation stands.
type ReconcileStatus struct {
	LastRun  *ReconcileRun            `json:"last_run,omitempty"`
	NextRun  time.Time                `json:"next_run,omitzero"` // zero: not scheduled
	Interval string                   `json:"interval"`
	Running  bool                     `json:"running"`
	Open     int                      `json:"open"`
	Counts   map[record.DriftKind]int `json:"counts"`
}

// DriftResolved is what resolving a drift did.
type DriftResolved struct {
	Drift      DriftRecord       `json:"drift"`
	Resolution record.Resolution `json:"resolution"`
	Message    string            `json:"message"`
	// Task is the destroy_nodes task a release started ("" otherwise).
	Task string `json:"task,omitempty"`
}

// SweepReport is what a reconciliation run found.
type SweepReport struct {
	Time     time.Time     `json:"time"`
	Trigger  string        `json:"trigger,omitempty"`
	Owned    int           `json:"owned"`
	Examined int           `json:"examined"`
	Leaks    []Machine     `json:"leaks,omitempty"`
	Drift    []Drift       `json:"drift,omitempty"`
	Records  []DriftRecord `json:"records,omitempty"`
	Detected []string      `json:"detected,omitempty"`
	Cleared  []string      `json:"cleared,omitempty"`
	Repaired []string      `json:"repaired,omitempty"`
	Released []string      `json:"released,omitempty"`
}

// Drift is a node whose machine is not in the state its record says.
type Drift struct {
	Node      string       `json:"node"`
	MachineID string       `json:"machine_id"`
	Stage     record.Stage `json:"stage"`
	Observed  string       `json:"observed"`
}

// Machine is a provisioner machine as a reconciliation run saw it (a
// leak).
type Machine struct {
	MachineID string             `json:"machine_id"`
	Site      string             `json:"site,omitempty"`
	Node      string             `json:"node,omitempty"`
	Hostname  string             `json:"hostname,omitempty"`
	State     string             `json:"state"`
	Power     drivers.PowerState `json:"power,omitempty"`
	Owned     bool               `json:"owned"`
	OwnerNode string             `json:"owner_node,omitempty"`
	Tags      []string           `json:"tags,omitempty"`
	// KernelOptions: key=value words sorted by key, a flag bare.
	KernelOptions string `json:"kernel_options,omitempty"`
}
