package design

import (
	"sort"
	"strings"
	"time"
)

// RuleReconciliation checks the Site's reconciliation settings: an
// interval that parses and lies within its bounds, policies of known
// drift kinds with a known action, and no automatic repair of the kinds
// that have none.
const RuleReconciliation = "reconciliation"

// Reconciliation is how often the orchestrator's server compares the
// provisioner with the design, and what it does with each kind of drift.
type Reconciliation struct {
	// Interval between two runs (a Go duration: 10m, 1h); "" leaves the
	// server's own setting (sweepInterval, default 10m).
	Interval string `json:"interval,omitempty"`
	// Policy per drift kind: report (the default: a drift record and an
	// event) or repair (the design's state is put back as well).
	Policy map[string]string `json:"policy,omitempty"`

	Pos         Pos            `json:"-"`
	IntervalPos Pos            `json:"-" pos:"interval"`
	PolicyPos   Pos            `json:"-" pos:"policy"`
	PolicyKeys  map[string]Pos `json:"-" pos:"policy.*"`
}

// Reconciliation policies.
const (
	PolicyReport = "report"
	PolicyRepair = "repair"
)

// DriftKinds are the kinds of drift a reconciliation finds (the
// orchestrator's names). ReportOnlyDrift are those it never repairs by
// itself: a status drift is put back by a task (deploy or destroy), an
// orphan (a deployed node the design no longer has) by an operator's
// decision. A switchport drift is a deployed node's switch port changed
// behind the engine's back (repair configures its ports again). A
// firmware or bios drift is a deployed node whose firmware versions or
// BIOS settings in effect differ from its hardware profile's baseline
// (repair submits an apply_baseline task of the node).
var (
	DriftKinds      = []string{"status", "hostname", "tags", "power", "owner", "kernel-options", "leak", "orphan", "switchport", "firmware", "bios"}
	ReportOnlyDrift = []string{"status", "orphan"}
)

// Bounds of the reconciliation interval: more often than every minute
// loads the provisioner for nothing, less often than daily leaves drift
// unseen for too long.
const (
	MinReconcileInterval = time.Minute
	MaxReconcileInterval = 24 * time.Hour
)

func (v *validator) reconciliation() {
	s := v.d.Site
	if s == nil {
		return
	}
	name, r := s.Metadata.Name, &s.Spec.Reconciliation
	if r.Interval != "" {
		pos := posOr(r.IntervalPos, r.Pos)
		d, err := time.ParseDuration(r.Interval)
		switch {
		case err != nil:
			v.r.errorf(RuleReconciliation, KindSite, name, pos, "reconciliation.interval: %.40q is not a duration (write e.g. 10m or 1h)", r.Interval)
		case d < MinReconcileInterval || d > MaxReconcileInterval:
			v.r.errorf(RuleReconciliation, KindSite, name, pos, "reconciliation.interval: %s is outside %s..%s", d, MinReconcileInterval, MaxReconcileInterval)
		}
	}
	keys := make([]string, 0, len(r.Policy))
	for k := range r.Policy {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		pos := posOr(r.PolicyKeys[k], posOr(r.PolicyPos, r.Pos))
		val := r.Policy[k]
		switch {
		case !contains(DriftKinds, k):
			v.r.errorf(RuleReconciliation, KindSite, name, pos, "reconciliation.policy.%.40s: no such drift kind; use one of %s", k, strings.Join(DriftKinds, ", "))
		case val != PolicyReport && val != PolicyRepair:
			v.r.errorf(RuleReconciliation, KindSite, name, pos, "reconciliation.policy.%s: %.40q is not a policy; use report or repair", k, val)
		case val == PolicyRepair && contains(ReportOnlyDrift, k):
			v.r.errorf(RuleReconciliation, KindSite, name, pos, "reconciliation.policy.%s: %s drift is never repaired automatically (a task or an operator puts it back); use report", k, k)
		}
	}
}

// ReconcileInterval is the Site's reconciliation interval; false when it
// sets none (or one that does not parse).
func (d *Design) ReconcileInterval() (time.Duration, bool) {
	if d == nil || d.Site == nil || d.Site.Spec.Reconciliation.Interval == "" {
		return 0, false
	}
	i, err := time.ParseDuration(d.Site.Spec.Reconciliation.Interval)
	return i, err == nil && i > 0
}

// DriftPolicy is the Site's policy for a kind of drift: report unless the
// Site says repair (never repair for ReportOnlyDrift).
func (d *Design) DriftPolicy(kind string) string {
	if d == nil || d.Site == nil || contains(ReportOnlyDrift, kind) {
		return PolicyReport
	}
	if d.Site.Spec.Reconciliation.Policy[kind] == PolicyRepair {
		return PolicyRepair
	}
	return PolicyReport
}

func posOr(p, def Pos) Pos {
	if p.IsSet() {
		return p
	}
	return def
}
