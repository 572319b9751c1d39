package orchestrator_test

import (
	"testing"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestRestartCleanOfPowerCycleKeepsTheDeployment: restart-clean of a
// power_cycle task runs it again from its top without releasing the
// deployed machine first (a power action acts on the machine as it is,
// like rescue and tests): the lab keeps it Deployed and the node stays
// deployed. Found by the randomized lifecycle runs (seed 502: the
// machines were released, Ready in the lab, their nodes still read
// deployed).
func TestRestartCleanOfPowerCycleKeepsTheDeployment(t *testing.T) {
	t.Parallel()
	node := "r02-gpu01"
	env, e := prepared(t, designtest.Example(t), nil)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: dcNodes(node), Requester: "test"}, record.TaskSucceeded)
	task, _ := run(t, e, record.Request{Action: record.ActionPowerCycle, Filter: dcNodes(node), Requester: "test"}, record.TaskSucceeded)
	res := applyVerb(t, e, task.ID, record.VerbRestartClean, record.TaskSucceeded)
	if r := res[node]; r.Stage != record.StagePowered {
		t.Errorf("%s after restart-clean of its power cycle: %s at %s (%q), want succeeded at powered", node, r.Outcome, r.Stage, r.Reason)
	}
	if m, _ := dcMachine(env, node); m.Status != "Deployed" {
		t.Errorf("%s: lab status %q after restart-clean of a power cycle, want Deployed (not released)", node, m.Status)
	}
	recs, err := e.Nodes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Name == node && r.LifecycleState() != record.LifecycleDeployed {
			t.Errorf("%s: lifecycle %q, want deployed", node, r.LifecycleState())
		}
	}
}
