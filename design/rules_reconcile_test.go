package design_test

import "testing"

// reconcileSite is the base Site with a reconciliation section appended.
func reconcileSite(lines string) edit {
	return rep(siteF, "      kernel: ga-22.04\n", "      kernel: ga-22.04\n  reconciliation:\n"+lines)
}

// The reconciliation rule's cases: the Site's interval and drift policies.
var reconcileCases = []ruleCase{
	{rule: "reconciliation", name: "interval that is not a duration",
		edits: []edit{reconcileSite("    interval: often # @rc-int\n")},
		want:  []exp{fail("reconciliation", "Site", "lab", siteF+"@rc-int", `reconciliation.interval: "often" is not a duration`)}},
	{rule: "reconciliation", name: "interval below a minute",
		edits: []edit{reconcileSite("    interval: 5s # @rc-short\n")},
		want:  []exp{fail("reconciliation", "Site", "lab", siteF+"@rc-short", "5s is outside 1m0s..24h0m0s")}},
	{rule: "reconciliation", name: "policy of an unknown drift kind",
		edits: []edit{reconcileSite("    policy:\n      tag: repair # @rc-kind\n")},
		want:  []exp{fail("reconciliation", "Site", "lab", siteF+"@rc-kind", "reconciliation.policy.tag: no such drift kind")}},
	{rule: "reconciliation", name: "policy that is neither report nor repair",
		edits: []edit{reconcileSite("    policy:\n      power: fix # @rc-val\n")},
		want:  []exp{fail("reconciliation", "Site", "lab", siteF+"@rc-val", `"fix" is not a policy; use report or repair`)}},
	{rule: "reconciliation", name: "orphans are never repaired automatically",
		edits: []edit{reconcileSite("    policy:\n      orphan: repair # @rc-orphan\n")},
		want:  []exp{fail("reconciliation", "Site", "lab", siteF+"@rc-orphan", "orphan drift is never repaired automatically")}},
	{rule: "reconciliation", name: "ok: interval and policies within bounds",
		edits: []edit{reconcileSite("    interval: 10m\n    policy: {tags: repair, power: report, leak: repair, orphan: report, kernel-options: repair, switchport: repair, firmware: repair, bios: report}\n")}},
}

func init() { ruleCases = append(ruleCases, reconcileCases...) }

// The Site's settings are read back as set; without them the engine's
// defaults hold (report everything, its own interval).
func TestReconciliationSettings(t *testing.T) {
	f := baseDesign.clone()
	reconcileSite("    interval: 15m\n    policy: {tags: repair, leak: repair}\n")(t, f)
	d, fs := buildRoots(t, f)
	checkFindings(t, f, fs, nil)
	if i, ok := d.ReconcileInterval(); !ok || i.Minutes() != 15 {
		t.Errorf("ReconcileInterval() = %s, %v; want 15m, true", i, ok)
	}
	for kind, want := range map[string]string{"tags": "repair", "leak": "repair", "power": "report", "orphan": "report", "status": "report"} {
		if got := d.DriftPolicy(kind); got != want {
			t.Errorf("DriftPolicy(%s) = %s, want %s", kind, got, want)
		}
	}
	plain, _ := buildRoots(t, baseDesign)
	if _, ok := plain.ReconcileInterval(); ok {
		t.Error("ReconcileInterval set without a reconciliation section")
	}
	if got := plain.DriftPolicy("tags"); got != "report" {
		t.Errorf("DriftPolicy(tags) without a section = %s, want report", got)
	}
}
