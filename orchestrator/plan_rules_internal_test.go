package orchestrator

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

func planTestNode() *drivers.Node {
	return &drivers.Node{NodeRef: drivers.NodeRef{Name: "n1"}, Hostname: "n1",
		Platform:   drivers.Platform{Image: "jammy", Kernel: "ga-22.04", KernelParams: map[string]string{"console": "ttyS1"}},
		Tags:       []string{"a", "b"},
		OwnerData:  map[string]string{"team": "x"},
		Interfaces: []drivers.Interface{{Name: "bond0", Link: drivers.Link{Name: "data", BondMode: "802.3ad"}}},
		Storage:    drivers.Storage{VolumeGroups: []drivers.VolumeGroup{{Name: "vg0"}}}}
}

func deployedRec() record.NodeRecord {
	return record.NodeRecord{Name: "n1", MachineID: "m1", Observed: "Deployed", Lifecycle: record.LifecycleDeployed,
		Stage: record.StageDeployed, Outcome: record.OutcomeSucceeded}
}

func changed(f func(n *drivers.Node)) *drivers.Node {
	n := planTestNode()
	f(n)
	return n
}

// TestClassify: each rule of the plan, a case it applies to and one next
// to it that it does not.
func TestClassify(t *testing.T) {
	released := deployedRec()
	released.Lifecycle, released.Stage, released.Observed = record.LifecycleReleased, record.StageReleased, "Ready"
	failedDep := deployedRec()
	failedDep.Observed, failedDep.Lifecycle = "Failed deployment", record.LifecycleFailed
	ready := deployedRec()
	ready.Observed, ready.Lifecycle, ready.Stage = "Ready", record.LifecycleReady, record.StageReady
	repairAll := func(string) bool { return true }
	cases := []struct {
		name string
		in   planInput
		want record.PlanAction
		says string // in the reasons
	}{
		{"removed, machine held", planInput{Old: planTestNode(), Rec: deployedRec(), Erase: "quick"}, record.PlanRelease, "removed from the design | its machine stays as it is, reported as orphan drift, until `orchestrator destroy --node n1` releases it (erase quick)"},
		{"removed, machine released", planInput{Old: planTestNode(), Rec: released}, record.PlanNone, "removed from the design; no machine held: nothing to release"},
		{"moved to another site", planInput{Old: planTestNode(), New: planTestNode(), OldSite: "a", NewSite: "b", Rec: deployedRec()}, record.PlanRelease, "moved from site a to site b"},
		{"moved, machine released", planInput{Old: planTestNode(), New: planTestNode(), OldSite: "a", NewSite: "b", Rec: released}, record.PlanNew, "was released"},
		{"same site", planInput{Old: planTestNode(), New: planTestNode(), OldSite: "a", NewSite: "a", Rec: deployedRec()}, record.PlanNone, ""},
		{"no record", planInput{New: planTestNode(), Rec: record.NodeRecord{Name: "n1", Stage: record.StagePending}}, record.PlanNew, "no machine yet"},
		{"released machine", planInput{Old: planTestNode(), New: planTestNode(), Rec: released}, record.PlanNew, "was released"},
		{"provisioner does not know it", planInput{Old: planTestNode(), New: planTestNode(), Rec: deployedRec(), Observed: &drivers.MachinePlan{Node: "n1"}}, record.PlanNew, "does not know machine m1"},
		{"provisioner knows it", planInput{Old: planTestNode(), New: planTestNode(), Rec: deployedRec(), Observed: &drivers.MachinePlan{Node: "n1", Found: true, Now: drivers.Machine{MachineID: "m1", State: "Deployed"}}}, record.PlanNone, ""},
		{"failed deployment", planInput{Old: planTestNode(), New: planTestNode(), Rec: failedDep}, record.PlanRedeploy, "Failed deployment"},
		{"series changed", planInput{Old: planTestNode(), New: changed(func(n *drivers.Node) { n.Platform.Image = "noble" }), Rec: deployedRec()}, record.PlanRedeploy, "image: update platform (jammy ga-22.04 → noble ga-22.04)"},
		{"kernel changed", planInput{Old: planTestNode(), New: changed(func(n *drivers.Node) { n.Platform.Kernel = "hwe-22.04" }), Rec: deployedRec()}, record.PlanRedeploy, "`orchestrator redeploy --node n1`"},
		{"storage changed, deployed", planInput{Old: planTestNode(), New: changed(func(n *drivers.Node) { n.Storage.VolumeGroups[0].Name = "vg1" }), Rec: deployedRec()}, record.PlanRedeploy, "storage changed on a machine past Ready"},
		{"storage changed, Ready", planInput{Old: planTestNode(), New: changed(func(n *drivers.Node) { n.Storage.VolumeGroups[0].Name = "vg1" }), Rec: ready}, record.PlanNew, "configures it (1 change(s))"},
		{"machine cannot take the design", planInput{Old: planTestNode(), New: planTestNode(), Rec: ready, Observed: &drivers.MachinePlan{Node: "n1", Found: true,
			Now: drivers.Machine{MachineID: "m1", State: "Ready"}, Changes: []drivers.PlannedChange{{Part: drivers.PartInterfaces, Op: "error", Object: "bond0", Detail: "no NIC at 0000:3b:00.0"}}}},
			record.PlanNew, "the provisioner cannot take the design: interfaces bond0: no NIC at 0000:3b:00.0; configuring the machine fails until the design or the machine changes"},
		{"machine takes the design", planInput{Old: planTestNode(), New: planTestNode(), Rec: ready, Observed: &drivers.MachinePlan{Node: "n1", Found: true,
			Now: drivers.Machine{MachineID: "m1", State: "Ready"}, Changes: []drivers.PlannedChange{{Part: drivers.PartInterfaces, Op: "create", Object: "bond0"}}}},
			record.PlanNew, "configures it (1 change(s))"},
		{"bond changed, deployed", planInput{Old: planTestNode(), New: changed(func(n *drivers.Node) { n.Interfaces[0].Link.BondMode = "active-backup" }), Rec: deployedRec()}, record.PlanRedeploy, "interfaces changed on a machine past Ready, which the provisioner does not change in place: update interfaces (interfaces: ~bond0)"},
		{"tags changed, report", planInput{Old: planTestNode(), New: changed(func(n *drivers.Node) { n.Tags = append(n.Tags, "c") }), Rec: deployedRec()}, record.PlanConfigure, "drift will be reported"},
		{"tag removed, repair", planInput{Old: planTestNode(), New: changed(func(n *drivers.Node) { n.Tags = n.Tags[:1] }), Rec: deployedRec(), Repairs: repairAll}, record.PlanConfigure, "tags: neither deploy nor the reconciliation makes this change on a deployed machine (delete b)"},
		{"kernel params changed, repair", planInput{Old: planTestNode(), New: changed(func(n *drivers.Node) { n.Platform.KernelParams["quiet"] = "true" }), Rec: deployedRec(), Repairs: repairAll}, record.PlanConfigure, "the reconciliation repairs it"},
		{"owner data changed", planInput{Old: planTestNode(), New: changed(func(n *drivers.Node) { n.OwnerData["team"] = "y" }), Rec: deployedRec(), Repairs: repairAll}, record.PlanConfigure, "applied at the next redeploy"},
		{"planner: image", planInput{Old: planTestNode(), New: planTestNode(), Rec: deployedRec(), Observed: &drivers.MachinePlan{Found: true, Now: drivers.Machine{State: "Deployed"},
			Changes: []drivers.PlannedChange{{Part: drivers.PartImage, Op: "update", Object: "os"}}}}, record.PlanRedeploy, "image: update os"},
		{"planner: tags only", planInput{Old: planTestNode(), New: changed(func(n *drivers.Node) { n.Platform.Image = "noble" }), Rec: deployedRec(), Observed: &drivers.MachinePlan{Found: true, Now: drivers.Machine{State: "Deployed"},
			Changes: []drivers.PlannedChange{{Part: drivers.PartTags, Op: "create", Object: "c"}}}}, record.PlanConfigure, "tags: drift will be reported"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.Name = "n1"
			got := classify(c.in)
			if got.Action != c.want {
				t.Fatalf("action %s, want %s (reasons %q)", got.Action, c.want, got.Reasons)
			}
			if all := strings.Join(got.Reasons, " | "); !strings.Contains(all, c.says) {
				t.Fatalf("reasons %q do not say %q", all, c.says)
			}
		})
	}
}

// TestSortPlan: destructive first, then by action and name; counts and
// the destructive list in words.
func TestSortPlan(t *testing.T) {
	p := record.Plan{Counts: map[record.PlanAction]int{}, Nodes: []record.NodePlan{
		{Node: "a", Action: record.PlanNone}, {Node: "z", Action: record.PlanRelease, Erase: "quick", Reasons: []string{"removed"}},
		{Node: "c", Action: record.PlanConfigure}, {Node: "b", Action: record.PlanRedeploy, Reasons: []string{"image: x"}},
		{Node: "d", Action: record.PlanNew}, {Node: "a2", Action: record.PlanRedeploy, Reasons: []string{"image: y"}},
	}}
	sortPlan(&p)
	var order []string
	for _, n := range p.Nodes {
		order = append(order, n.Node)
	}
	if got := strings.Join(order, ","); got != "z,a2,b,d,c,a" {
		t.Fatalf("order %s", got)
	}
	if got := strings.Join(p.Destructive, "; "); got != "release z (removed; erase quick); redeploy a2 (image: y); redeploy b (image: x)" {
		t.Fatalf("destructive: %s", got)
	}
	if p.Counts[record.PlanRedeploy] != 2 || p.Counts[record.PlanNone] != 1 || !p.Changed() {
		t.Fatalf("counts %v", p.Counts)
	}
}
