package record

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// DriftKind is what differs between the provisioner and the design or
// the engine's records.
type DriftKind string

// Drift kinds (design.DriftKinds names them for the Site's policy).
const (
	// DriftStatus: a settled node's machine is not in the state its
	// record says (released, broken or gone behind the engine's back).
	DriftStatus DriftKind = "status"
	// DriftHostname: a deployed machine's hostname is not the design's.
	DriftHostname DriftKind = "hostname"
	// DriftTags: a deployed machine lacks tags the design gives it.
	DriftTags DriftKind = "tags"
	// DriftPower: a deployed machine is powered off.
	DriftPower DriftKind = "power"
	// DriftOwner: this orchestrator's ownership marker on a deployed
	// machine is gone or names another node.
	DriftOwner DriftKind = "owner"
	// DriftKernelOptions: a deployed machine boots with other kernel
	// parameters than the design's.
	DriftKernelOptions DriftKind = "kernel-options"
	// DriftLeak: a machine carries this orchestrator's marker and no
	// node record claims it.
	DriftLeak DriftKind = "leak"
	// DriftOrphan: a node's machine is deployed and the current design
	// no longer has the node.
	DriftOrphan DriftKind = "orphan"
	// DriftSwitchport: a deployed node's switch port is not configured
	// as the design says (changed on the switch behind the engine's
	// back).
	DriftSwitchport DriftKind = "switchport"
	// DriftFirmware: a deployed node's firmware inventory (as its BMC
	// reports it) runs another version than its hardware profile's
	// firmware baseline.
	DriftFirmware DriftKind = "firmware"
	// DriftBIOS: a deployed node's BIOS settings in effect differ from
	// its hardware profile's bios.attributes.
	DriftBIOS DriftKind = "bios"
)

// DriftKinds lists the kinds in the order reports show them.
var DriftKinds = []DriftKind{DriftStatus, DriftHostname, DriftTags, DriftPower, DriftOwner, DriftKernelOptions, DriftLeak, DriftOrphan, DriftSwitchport, DriftFirmware, DriftBIOS}

// ParseDriftKind checks a drift kind's name.
func ParseDriftKind(s string) (DriftKind, error) {
	if slices.Contains(DriftKinds, DriftKind(s)) {
		return DriftKind(s), nil
	}
	return "", fmt.Errorf("unknown drift kind %.40q: use one of %s", s, joinKinds())
}

func joinKinds() string {
	out := make([]string, len(DriftKinds))
	for i, k := range DriftKinds {
		out[i] = string(k)
	}
	return strings.Join(out, ", ")
}

// Resolution is an operator's answer to a drift.
type Resolution string

// Resolutions.
const (
	// ResolveAccept takes the observed state: the record is dropped and
	// the same observation is not reported again (for status drift, the
	// node is adopted: its record takes the machine's state).
	ResolveAccept Resolution = "accept"
	// ResolveRepair puts back what the design says (hostname, tags,
	// kernel parameters, power, ownership marker; a leak is released).
	ResolveRepair Resolution = "repair"
	// ResolveRelease gives the machine back: a leak is released, a
	// node's machine is destroyed by a destroy_nodes task.
	ResolveRelease Resolution = "release"
)

// Resolutions lists the resolutions.
var Resolutions = []Resolution{ResolveAccept, ResolveRepair, ResolveRelease}

// ParseResolution checks a resolution's name.
func ParseResolution(s string) (Resolution, error) {
	if slices.Contains(Resolutions, Resolution(s)) {
		return Resolution(s), nil
	}
	return "", fmt.Errorf("unknown resolution %.40q: use accept, repair or release", s)
}

// DriftRecord is one drift: one per node and kind, however many runs
// see it (LastSeen moves); it is dropped when the drift is gone.
type DriftRecord struct {
	Node      string    `json:"node"`
	Kind      DriftKind `json:"kind"`
	MachineID string    `json:"machine_id,omitempty"`
	Stage     Stage     `json:"stage,omitempty"` // the node record's stage
	Expected  string    `json:"expected"`
	Observed  string    `json:"observed"`
	Policy    string    `json:"policy"` // report | repair (the Site's)
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// Note says what reconciliation did about it: why an automatic
	// repair failed, what the operator may do.
	Note string `json:"note,omitempty"`
}

func (d DriftRecord) Key() string { return DriftKey(d.Node, d.Kind) }

func DriftKey(node string, kind DriftKind) string { return node + "/" + string(kind) }

// ReconcileRun summarises one reconciliation run.
type ReconcileRun struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Trigger  string    `json:"trigger"` // schedule | api:... | cli
	Owned    int       `json:"owned"`   // machines carrying this orchestrator's marker
	Examined int       `json:"examined"`
	Open     int       `json:"open"` // drift records after the run
	// Detected, Cleared and Repaired name drift as node/kind.
	Detected []string `json:"detected,omitempty"`
	Cleared  []string `json:"cleared,omitempty"`
	Repaired []string `json:"repaired,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// ReconcileStatus is where reconciliation stands.
type ReconcileStatus struct {
	LastRun  *ReconcileRun     `json:"last_run,omitempty"`
	NextRun  time.Time         `json:"next_run,omitzero"` // zero: not scheduled (the engine does not run)
	Interval string            `json:"interval"`          // between scheduled runs, e.g. 10m0s
	Running  bool              `json:"running"`
	Open     int               `json:"open"`
	Counts   map[DriftKind]int `json:"counts"`
}

// DriftResolved is what resolving a drift did.
type DriftResolved struct {
	Drift      DriftRecord `json:"drift"`
	Resolution Resolution  `json:"resolution"`
	Message    string      `json:"message"`
	// Task is the destroy_nodes task a release started ("" otherwise).
	Task string `json:"task,omitempty"`
}

// SweepReport is what a reconciliation run found (reconcile.go).
type SweepReport struct {
	Time     time.Time         `json:"time"`
	Trigger  string            `json:"trigger,omitempty"`
	Owned    int               `json:"owned"`    // machines carrying this orchestrator's marker
	Examined int               `json:"examined"` // node records whose machine was looked at
	Leaks    []drivers.Machine `json:"leaks,omitempty"`
	// Drift lists the nodes whose machine is not in the state their
	// record says (the status drift of Records).
	Drift []Drift `json:"drift,omitempty"`
	// Records are the open drift records after the run, every kind.
	Records []DriftRecord `json:"records,omitempty"`
	// Detected, Cleared and Repaired name drift (node/kind) first seen,
	// gone, and repaired under the Site's policy in this run.
	Detected []string `json:"detected,omitempty"`
	Cleared  []string `json:"cleared,omitempty"`
	Repaired []string `json:"repaired,omitempty"`
	// Released lists leaked machines released under the leak repair
	// policy (or the engine's ReleaseLeaks).
	Released []string `json:"released,omitempty"`
}

// Drift is a node whose machine is not in the state its record says.
type Drift struct {
	Node      string `json:"node"`
	MachineID string `json:"machine_id"`
	Stage     Stage  `json:"stage"`
	Observed  string `json:"observed"`
}
