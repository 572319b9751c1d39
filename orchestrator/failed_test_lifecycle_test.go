package orchestrator_test

import (
	"testing"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
)

// TestFailedTestOfDeployedNode: test_nodes on a deployed node whose tests
// fail leaves its machine Failed testing (MAAS's status, no longer
// Deployed): the node's lifecycle reads failed, as its machine is, not
// deployed (found by the lifecycle runs, seed 1034: a deployed node read
// deployed while the lab showed Failed testing). A passing test of a
// deployed node leaves it deployed.
func TestFailedTestOfDeployedNode(t *testing.T) {
	t.Parallel()
	good, bad := "r02-gpu01", "r02-gpu02"
	d := designtest.Example(t)
	env, e := prepared(t, d, &maas.Faults{Machines: map[string]maas.MachineFaults{bad: {FailTesting: 1}}})
	sel := dcNodes(good, bad)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: sel, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionTestNodes, Filter: sel, Requester: "test"}, record.TaskPartiallySucceeded)
	for node, want := range map[string]struct {
		lab       string
		lifecycle record.Lifecycle
	}{good: {"Deployed", record.LifecycleDeployed}, bad: {"Failed testing", record.LifecycleFailed}} {
		m, _ := dcMachine(env, node)
		rec := nodeRecord(t, e, node)
		if m.Status != want.lab || rec.LifecycleState() != want.lifecycle {
			t.Errorf("%s: lab %q, lifecycle %q (observed %q); want lab %q, lifecycle %q", node, m.Status, rec.LifecycleState(), rec.Observed, want.lab, want.lifecycle)
		}
	}
}
