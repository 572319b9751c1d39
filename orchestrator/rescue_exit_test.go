package orchestrator_test

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestRescueExitOfNodeNotDeployed: rescue_exit of a node whose machine
// is neither in rescue mode nor deployed (prepared: Ready) fails at
// rescue-exit saying so,
// and neither the lab's machine nor the node's lifecycle changes. Found
// by the randomized lifecycle runs (seeds 414 and 416: a released node's
// rescue exit "succeeded" and the node read deployed on a Ready machine).
func TestRescueExitOfNodeNotDeployed(t *testing.T) {
	t.Parallel()
	node := "r02-gpu01"
	env, e := prepared(t, designtest.Example(t), nil)
	run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: dcNodes(node), Requester: "test"}, record.TaskSucceeded)
	_, res := run(t, e, record.Request{Action: record.ActionRescueExit, Filter: dcNodes(node), Requester: "test"}, record.TaskFailed)
	if r := res[0]; r.Stage != record.StageRescueExit || !strings.Contains(r.Reason, "neither in rescue mode nor deployed") {
		t.Errorf("%s: rescue_exit of a ready node: %s at %s (%q), want failed at rescue-exit saying it is neither in rescue mode nor deployed", node, r.Outcome, r.Stage, r.Reason)
	}
	if m, _ := dcMachine(env, node); m.Status != "Ready" {
		t.Errorf("%s: lab status %q after a refused rescue exit, want Ready", node, m.Status)
	}
	recs, err := e.Nodes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Name == node && r.LifecycleState() != record.LifecycleReady {
			t.Errorf("%s: lifecycle %q after a refused rescue exit, want ready (its machine is Ready in the lab)", node, r.LifecycleState())
		}
	}
}
