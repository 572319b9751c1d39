package design

import (
	"sort"
	"strings"
	"time"
)

// RuleLifecycle checks the Site's lifecycle settings: retry budgets
// within their bounds, timeouts of known stages with durations that
// parse and lie within their bounds.
const RuleLifecycle = "lifecycle"

// Bounds of the lifecycle settings. A retry budget above MaxRetries
// keeps a broken machine cycling for hours; a stage timeout below
// MinStageTimeout ends stages that are still making progress, one above
// MaxStageTimeout leaves a stuck node unnoticed for more than a day.
const (
	MaxRetries      = 10
	MinStageTimeout = time.Minute
	MaxStageTimeout = 24 * time.Hour
)

// TimeoutStages are the workflow stages whose timeout the Site may set
// (the engine's stage names).
var TimeoutStages = []string{"verify", "baseline", "oob-prepare", "identify", "commission", "as-built", "configure", "images", "deploy",
	"bootstrap", "releasing", "power", "deleting", "rescue", "rescue-exit", "testing"}

// Erase policies a Site, host profile or node may name.
const (
	EraseNone   = "none"
	EraseQuick  = "quick"
	EraseSecure = "secure"
)

func (v *validator) lifecycle() {
	s := v.d.Site
	if s == nil {
		return
	}
	name, l := s.Metadata.Name, &s.Spec.Lifecycle
	for _, f := range []struct {
		field string
		n     *int
		pos   Pos
	}{{"commissionRetries", l.CommissionRetries, l.CommissionRetriesPos}, {"deployRetries", l.DeployRetries, l.DeployRetriesPos}} {
		if f.n != nil && (*f.n < 0 || *f.n > MaxRetries) {
			v.r.errorf(RuleLifecycle, KindSite, name, orPos(f.pos, l.Pos), "lifecycle.%s %d is outside 0..%d", f.field, *f.n, MaxRetries)
		}
	}
	keys := make([]string, 0, len(l.Timeouts))
	for k := range l.Timeouts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		pos := orPos(l.TimeoutKeys[k], orPos(l.TimeoutsPos, l.Pos))
		if !contains(TimeoutStages, k) {
			v.r.errorf(RuleLifecycle, KindSite, name, pos, "lifecycle.timeouts.%.40s: no such stage; use one of %s", k, strings.Join(TimeoutStages, ", "))
			continue
		}
		d, err := time.ParseDuration(l.Timeouts[k])
		switch {
		case err != nil:
			v.r.errorf(RuleLifecycle, KindSite, name, pos, "lifecycle.timeouts.%s: %.40q is not a duration (write e.g. 40m or 1h30m)", k, l.Timeouts[k])
		case d < MinStageTimeout || d > MaxStageTimeout:
			v.r.errorf(RuleLifecycle, KindSite, name, pos, "lifecycle.timeouts.%s: %s is outside %s..%s", k, d, MinStageTimeout, MaxStageTimeout)
		}
	}
	v.baselinePolicy(name, l) // validate_baseline.go
}

func orPos(p, def Pos) Pos {
	if p.IsSet() {
		return p
	}
	return def
}

// EraseOf is the erase policy of a node's releases: the node's own (or
// its host profile chain's), else the Site's; "" when none is set (the
// server driver's default).
func (d *Design) EraseOf(n *Node) string {
	if n != nil && n.Spec.Erase != "" {
		return n.Spec.Erase
	}
	if d.Site != nil {
		return d.Site.Spec.Lifecycle.Erase
	}
	return ""
}

// StageTimeout is the Site's timeout of a workflow stage; false when the
// Site sets none (or one that does not parse: validation rejected it).
func (d *Design) StageTimeout(stage string) (time.Duration, bool) {
	if d.Site == nil {
		return 0, false
	}
	s, ok := d.Site.Spec.Lifecycle.Timeouts[stage]
	if !ok {
		return 0, false
	}
	t, err := time.ParseDuration(s)
	if err != nil || t < MinStageTimeout || t > MaxStageTimeout {
		return 0, false
	}
	return t, true
}

// DeployRetries is the Site's deployment retry budget; false when unset.
func (d *Design) DeployRetries() (int, bool) {
	if d.Site == nil || d.Site.Spec.Lifecycle.DeployRetries == nil {
		return 0, false
	}
	return min(max(*d.Site.Spec.Lifecycle.DeployRetries, 0), MaxRetries), true
}

// CommissionRetries is the Site's commissioning retry budget; false when
// unset.
func (d *Design) CommissionRetries() (int, bool) {
	if d.Site == nil || d.Site.Spec.Lifecycle.CommissionRetries == nil {
		return 0, false
	}
	return min(max(*d.Site.Spec.Lifecycle.CommissionRetries, 0), MaxRetries), true
}
