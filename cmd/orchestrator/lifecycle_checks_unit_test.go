package main

import (
	"slices"
	"strings"
	"testing"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestLifecycleChecksCatch: each invariant of the lifecycle runs reports
// a lab state that breaks it, and passes one that does not (the checks
// can fail; no lab needed).
func TestLifecycleChecksCatch(t *testing.T) {
	r := &lrRun{t: t, names: []string{"a", "b"}, deployed: map[string]bool{}, taskNodes: map[string][]string{}}
	nodes := map[string]apitypes.NodeSummary{
		"a": {Name: "a", MachineID: "m1", Lifecycle: record.LifecycleDeployed},
		"b": {Name: "b", MachineID: "m2", Lifecycle: record.LifecycleReleased},
	}
	byID := map[string]simMachine{"m1": {SystemID: "m1", Hostname: "a", StatusName: "Deployed"}, "m2": {SystemID: "m2", Hostname: "b", StatusName: "Ready"}}
	release := []simEvent{{ID: 1, Node: "m2", Hostname: "b", Type: "Releasing"}}
	v := lrView{nodes: nodes, byID: byID, events: release}
	if got := r.checkReleases(lrOp{Kind: lrDestroy, Nodes: []string{"b"}}, nodes, v); len(got) != 0 {
		t.Errorf("a destroy of b released b's machine: %v", got)
	}
	for _, op := range []lrOp{{Kind: lrTest, Nodes: []string{"b"}}, {Kind: lrDestroy, Nodes: []string{"a"}}, {Kind: lrDestroy, Nodes: []string{"b"}, Invalid: true}} {
		if got := r.checkReleases(op, nodes, v); len(got) != 1 {
			t.Errorf("%s: a release of b's machine gave %v, want one violation", op, got)
		}
	}
	quick := lrOp{Kind: lrDestroy, Nodes: []string{"b"}, Erase: "quick"}
	if got := r.checkErase(quick, nodes, v); len(got) != 1 {
		t.Errorf("%s released b's machine without erasing it: %v", quick, got)
	}
	v.events = append([]simEvent{{ID: 0, Node: "m2", Type: "Erasing disks", Description: "disk erasing started (quick)"}}, release...)
	if got := r.checkErase(quick, nodes, v); len(got) != 0 {
		t.Errorf("%s erased, then released: %v", quick, got)
	}
	if got := r.checkErase(lrOp{Kind: lrDestroy, Nodes: []string{"b"}, Erase: "none"}, nodes, v); len(got) != 1 {
		t.Errorf("a destroy with erase none erased: %v", got)
	}
	deploys := lrView{events: []simEvent{{ID: 2, Node: "m1", Type: "Deploying"}, {ID: 3, Node: "m1", Type: "Deployed"}, {ID: 4, Node: "m1", Type: "Deploying"}}}
	if got := r.checkDeploys(deploys); len(got) != 1 || !strings.Contains(got[0], "duplicate deploy") {
		t.Errorf("two deploys of m1 without a failure between: %v", got)
	}
	clear(r.deployed)
	deploys.events = slices.Insert(deploys.events, 2, simEvent{ID: 5, Node: "m1", Type: "Failed deployment"})
	if got := r.checkDeploys(deploys); len(got) != 0 {
		t.Errorf("a deploy after a failed deployment: %v", got)
	}
	clear(r.deployed)
	deploys.events[2].Type = "Failed testing"
	if got := r.checkDeploys(deploys); len(got) != 0 {
		t.Errorf("a deploy after the deployed machine's tests failed: %v", got)
	}
	checkClaimsAndLifecycles(t, r, nodes, byID)
}

func checkClaimsAndLifecycles(t *testing.T, r *lrRun, nodes map[string]apitypes.NodeSummary, byID map[string]simMachine) {
	if got := r.checkLifecycles(lrView{nodes: nodes, byID: byID}); len(got) != 0 {
		t.Errorf("agreeing lifecycles: %v", got)
	}
	twice := map[string]apitypes.NodeSummary{"a": nodes["a"], "b": {Name: "b", MachineID: "m1", Lifecycle: record.LifecycleDeployed}}
	if got := r.checkClaims(lrView{nodes: twice, byID: map[string]simMachine{"m1": byID["m1"]}}); len(got) != 1 {
		t.Errorf("m1 claimed by a and b: %v", got)
	}
	stale := map[string]apitypes.NodeSummary{"a": nodes["a"], "b": {Name: "b", MachineID: "m2", Lifecycle: record.LifecycleDeploying}}
	if got := r.checkLifecycles(lrView{nodes: stale, byID: byID}); len(got) != 1 {
		t.Errorf("b deploying with nothing running: %v", got)
	}
	released := map[string]simMachine{"m1": {SystemID: "m1", StatusName: "Ready"}, "m2": byID["m2"]}
	if got := r.checkLifecycles(lrView{nodes: nodes, byID: released}); len(got) != 1 {
		t.Errorf("a deployed on a Ready machine: %v", got)
	}
	if lifecycleAgrees(record.LifecycleCancelled, simMachine{StatusName: "Deployed"}, true) {
		t.Error("a cancelled node on a Deployed machine agrees")
	}
}
