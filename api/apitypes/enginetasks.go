package apitypes

import (
	"time"

	"github.com/slipway-dev/slipway/orchestrator/record"
)

// The engine's records as the API shows them. Each type here mirrors a
// struct of orchestrator/record field for field and JSON name for JSON
// name, but is the API's own: the server converts at its edge (package
// api, fromrecord.go), so a change to a stored record does not change the
// wire unless the conversion is changed too. The scalar vocabularies
// (record.Action, Stage, Outcome, Lifecycle, TaskStatus, DriftKind,
// Resolution, RecoveryStep, Verb) are shared: see docs/architecture.md,
// "Three contracts, three sets of types".

// Task is one request to act on the site or on a set of nodes.
type Task struct {
	ID        string            `json:"id"`
	Action    record.Action     `json:"action"`
	Filter    Filter            `json:"node_filter"`
	Revision  string            `json:"design_revision"`
	Requester string            `json:"requester"`
	Status    record.TaskStatus `json:"status"`
	Nodes     []string          `json:"nodes,omitempty"` // selected when the task was created
	Message   string            `json:"message,omitempty"`
	Created   time.Time         `json:"created"`
	Started   time.Time         `json:"started,omitzero"`
	Finished  time.Time         `json:"finished,omitzero"`
	// Cancel: the task was asked to stop and compensate.
	Cancel bool `json:"cancel,omitempty"`
	// Correlation is the request ID (the audit record's request_id) of
	// the API call that created the task; its events carry it too.
	Correlation string `json:"correlation_id,omitempty"`
	// Options are the action's options, nil when none.
	Options *TaskOptions `json:"options,omitempty"`
}

// NodeResult is one node's result within a task.
type NodeResult struct {
	Node     string         `json:"node"`
	Stage    record.Stage   `json:"stage"`
	Outcome  record.Outcome `json:"outcome"`
	Attempts int            `json:"attempts"` // failed driver calls, all stages
	Class    string         `json:"class,omitempty"`
	Reason   string         `json:"reason,omitempty"`
	Started  time.Time      `json:"started,omitzero"`
	Finished time.Time      `json:"finished,omitzero"`
}

// Filter selects nodes: a node matches a set when it meets all of the
// set's criteria; the sets combine as a union (the default) or an
// intersection. No sets: every node.
type Filter struct {
	Type string       `json:"type,omitempty"` // union | intersection
	Sets []NodeFilter `json:"sets,omitempty"`
}

// NodeFilter is one set of a Filter: names, labels, tags, racks, sites.
type NodeFilter struct {
	Names  []string          `json:"names,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Tags   []string          `json:"tags,omitempty"`
	Racks  []string          `json:"racks,omitempty"`
	Sites  []string          `json:"sites,omitempty"`
}

// TaskOptions are an action's options (decommission_nodes: erase,
// delete; destroy_nodes: erase; apply_baseline: reboot, dry_run).
type TaskOptions struct {
	// Erase overrides the design's erase policy (none | quick | secure;
	// "" keeps the design's).
	Erase string `json:"erase,omitempty"`
	// Delete removes the machine from the provisioner once released
	// (decommission_nodes only).
	Delete bool `json:"delete,omitempty"`
	// Reboot lets apply_baseline reboot deployed nodes whose plan needs
	// a reset when the Site's lifecycle.baseline.reboots is deny.
	Reboot bool `json:"reboot,omitempty"`
	// DryRun: apply_baseline records each node's plan (its record's
	// baseline, and an event) and changes nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// Site and Image narrow sync_images to one Site and one Image
	// document ("": all the design's).
	Site  string `json:"site,omitempty"`
	Image string `json:"image,omitempty"`
}
