package record

import (
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// PlanAction is what applying a design and then deploying it does to one
// node's machine.
type PlanAction string

// Plan actions, from the most to the least destructive.
const (
	// PlanRelease: the machine goes back to the pool (the node left the
	// design or moved to another site), its disks erased as the Site's
	// erase policy says. Destructive.
	PlanRelease PlanAction = "release"
	// PlanRedeploy: the deployed machine must be released and deployed
	// again (another OS, series or kernel; interfaces or storage changed
	// on a machine past Ready). Destructive.
	PlanRedeploy PlanAction = "redeploy"
	// PlanNew: a machine is allocated, commissioned, configured and
	// deployed for the node.
	PlanNew PlanAction = "new"
	// PlanConfigure: the machine keeps running; provisioner objects
	// change in place (tags, kernel options, hostname, owner data; on a
	// machine not yet deployed, interfaces and storage too).
	PlanConfigure PlanAction = "configure"
	// PlanNone: nothing changes.
	PlanNone PlanAction = "none"
)

// PlanActions lists the actions in the order a plan shows them.
var PlanActions = []PlanAction{PlanRelease, PlanRedeploy, PlanNew, PlanConfigure, PlanNone}

// Destructive says whether the action takes a running machine away.
func (a PlanAction) Destructive() bool { return a == PlanRelease || a == PlanRedeploy }

// NodePlan is one node's part of a plan.
type NodePlan struct {
	Node    string     `json:"node"`
	Site    string     `json:"site,omitempty"`
	Action  PlanAction `json:"action"`
	Machine string     `json:"machine,omitempty"` // the provisioner's ID, when known
	State   string     `json:"state,omitempty"`   // the provisioner's state now
	// Reasons say why the action (for redeploy: "OS ubuntu/jammy →
	// ubuntu/noble", "storage layout changed on a deployed machine";
	// for release: "removed from the design", "moved to site b";
	// with the erase the release does).
	Reasons []string `json:"reasons,omitempty"`
	// Changes are the provisioner objects that change.
	Changes []drivers.PlannedChange `json:"changes,omitempty"`
	// Erase is what a release does to the disks (none, quick, secure).
	Erase string `json:"erase,omitempty"`
}

// SitePlan is what preparing one site changes: in the provisioner
// (fabrics, VLANs, subnets, ranges, DHCP, routes) and in the site
// records (the design's Site, Network and NetworkLink documents).
type SitePlan struct {
	Site    string                  `json:"site"`
	Changes []drivers.PlannedChange `json:"changes,omitempty"`
	Records []string                `json:"records,omitempty"` // changed documents: "Network oob: cidr 10.0.0.0/24 → 10.0.1.0/24"
}

// Plan is what applying a design (To) over the current one (From) and
// then deploying would do. Nodes come destructive first, then by action
// and name; Destructive repeats those in words, for a refusal or a
// review.
type Plan struct {
	From    string    `json:"from,omitempty"` // the current revision ("" none)
	To      string    `json:"to"`             // the planned revision's content address
	Created time.Time `json:"created"`
	// Observed says the provisioner was read; when false, Notes say why
	// and the plan comes from the designs and the engine's records.
	Observed    bool               `json:"observed"`
	Notes       []string           `json:"notes,omitempty"`
	Destructive []string           `json:"destructive,omitempty"`
	Counts      map[PlanAction]int `json:"counts"`
	Nodes       []NodePlan         `json:"nodes"`
	Sites       []SitePlan         `json:"sites,omitempty"`
}

// Changed says whether the plan changes anything (the exit status 2 of
// `plan`).
func (p *Plan) Changed() bool {
	for a, n := range p.Counts {
		if a != PlanNone && n > 0 {
			return true
		}
	}
	for _, s := range p.Sites {
		if len(s.Changes) > 0 || len(s.Records) > 0 {
			return true
		}
	}
	return false
}
