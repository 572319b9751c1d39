package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/statestore"
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
)

// DriftKinds lists the kinds in the order reports show them.
var DriftKinds = []DriftKind{DriftStatus, DriftHostname, DriftTags, DriftPower, DriftOwner, DriftKernelOptions, DriftLeak, DriftOrphan}

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

func (d DriftRecord) key() string { return driftKey(d.Node, d.Kind) }

func driftKey(node string, kind DriftKind) string { return node + "/" + string(kind) }

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

// Collections of reconciliation.
const (
	collDrift     = "drift"          // node/kind → DriftRecord
	collAccepted  = "drift_accepted" // node/kind → the observed value an operator accepted
	collReconcile = "reconciliation" // "last" → ReconcileRun
)

func (r records) drift(ctx context.Context) (map[string]DriftRecord, error) {
	return listMap[DriftRecord](ctx, r, collDrift, "drift record")
}

func (r records) accepted(ctx context.Context) (map[string]string, error) {
	return listMap[string](ctx, r, collAccepted, "accepted drift")
}

// listMap is every record of coll by key.
func listMap[T any](ctx context.Context, r records, coll, what string) (map[string]T, error) {
	out := map[string]T{}
	if err := listRecords(ctx, r.s, coll, "", what, func(k string, v T) { out[k] = v }); err != nil {
		return nil, err
	}
	return out, nil
}

func (b *batch) del(coll, key string) { b.ops = append(b.ops, statestore.Delete(coll, key)) }

// Drift lists the open drift records, by node then kind.
func (e *Engine) Drift(ctx context.Context) ([]DriftRecord, error) {
	m, err := e.rec.drift(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]DriftRecord, 0, len(m))
	for _, d := range m {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return slices.Index(DriftKinds, out[i].Kind) < slices.Index(DriftKinds, out[j].Kind)
	})
	return out, nil
}

// ReconcileStatus reports the last run, the next and the open drift.
func (e *Engine) ReconcileStatus(ctx context.Context) (ReconcileStatus, error) {
	st := ReconcileStatus{Counts: map[DriftKind]int{}}
	var last ReconcileRun
	switch err := e.rec.getJSON(ctx, collReconcile, "last", &last); {
	case err == nil:
		st.LastRun = &last
	case !errors.Is(err, ErrNotFound):
		return st, err
	}
	e.recon.mu.Lock()
	st.NextRun, st.Running = e.recon.next, e.recon.running
	e.recon.mu.Unlock()
	st.Interval = e.reconcileInterval(ctx).String()
	if e.cfg.SweepInterval < 0 {
		st.Interval = "none (at start only)"
	}
	ds, err := e.rec.drift(ctx)
	if err != nil {
		return st, err
	}
	for _, d := range ds {
		st.Counts[d.Kind]++
	}
	st.Open = len(ds)
	return st, nil
}

// reconcileInterval is the current design's reconciliation interval,
// else the engine's SweepInterval.
func (e *Engine) reconcileInterval(ctx context.Context) time.Duration {
	if d := e.currentDesign(ctx); d != nil {
		if i, ok := d.ReconcileInterval(); ok {
			return i
		}
	}
	return e.cfg.SweepInterval
}

// currentDesign is the current design revision, nil when there is none
// (or it can't be read).
func (e *Engine) currentDesign(ctx context.Context) *design.Design {
	rev, err := statestore.CurrentID(ctx, e.cfg.Store)
	if err != nil {
		return nil
	}
	d, _, err := e.design(ctx, rev)
	if err != nil {
		return nil
	}
	return d
}
