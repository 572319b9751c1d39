package apitypes

import "time"

// Plan is what applying a design (To) over the current one (From) and
// then deploying it would do (POST /designs/plan, GET
// /designs/{rev}/plan, and the answer of an apply). Nodes come
// destructive first, then by action and name; Destructive says those in
// words.
type Plan struct {
	From string `json:"from,omitempty"` // the current revision ("" none)
	To   string `json:"to"`             // the planned revision's content address
	// Approve is what POST /designs?approve= takes to apply this plan's
	// destructive actions: a digest of To and of those actions, so it
	// approves what was shown and nothing else ("" when none need it).
	Approve string    `json:"approve,omitempty"`
	Created time.Time `json:"created"`
	// Observed says the provisioner was read; when false, Notes say why
	// and the plan comes from the designs and the engine's records.
	Observed    bool           `json:"observed"`
	Notes       []string       `json:"notes,omitempty"`
	Destructive []string       `json:"destructive,omitempty"`
	Counts      map[string]int `json:"counts"` // nodes per action: release, redeploy, new, configure, none
	Nodes       []NodePlan     `json:"nodes"`
	Sites       []SitePlan     `json:"sites,omitempty"`
	// Changed says the plan changes anything (the exit status 2 of
	// `orchestrator plan`).
	Changed bool `json:"changed,omitempty"`
	// NodesOmitted counts the nodes a stored plan leaves out (it keeps
	// the first, destructive first, within its size bound); Counts count
	// them all.
	NodesOmitted int `json:"nodes_omitted,omitempty"`
}

// NodePlan is one node's part of a plan.
type NodePlan struct {
	Node    string          `json:"node"`
	Site    string          `json:"site,omitempty"`
	Action  string          `json:"action"` // release | redeploy | new | configure | none
	Machine string          `json:"machine,omitempty"`
	State   string          `json:"state,omitempty"`   // the provisioner's state now
	Reasons []string        `json:"reasons,omitempty"` // why the action
	Changes []PlannedChange `json:"changes,omitempty"`
	Erase   string          `json:"erase,omitempty"` // what a release does to the disks
}

// PlannedChange is one provisioner object that changes: Op is create,
// update or delete.
type PlannedChange struct {
	Part   string `json:"part"`
	Op     string `json:"op"`
	Object string `json:"object"`
	Detail string `json:"detail,omitempty"`
}

// SitePlan is what preparing one site changes, in the provisioner and in
// the site records.
type SitePlan struct {
	Site    string          `json:"site"`
	Changes []PlannedChange `json:"changes,omitempty"`
	Records []string        `json:"records,omitempty"`
}

// PlanSummary is a stored plan in brief (GET /designs).
type PlanSummary struct {
	Counts      map[string]int `json:"counts"`
	Destructive int            `json:"destructive"` // destructive actions
	Changed     bool           `json:"changed"`
}
