package orchestrator_test

import (
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// TestCancelWhileMachineCreated cancels a first deploy while MAAS has
// created the node's machine (which it commissions at once) and its
// answer is still on the way: the cancel must not lose the machine, whose
// commissioning it then aborts (MAAS returns a first commissioning to
// New), rather than leave it commissioning unknown to the engine.
func TestCancelWhileMachineCreated(t *testing.T) {
	t.Parallel()
	// Creates (POST without an op) answer 0.3 s after they are carried out.
	faults := &maas.Faults{Ops: map[string]maas.OpFaults{"POST read": {AnswerLatency: 300 * time.Millisecond}}}
	// At 0.01 the lab commissions for 3 s: the cancel lands within it.
	env, err := labrun.Start(t.Context(), labrun.Options{Design: designtest.Example(t), Store: memory.New(), TimeScale: 0.01, Faults: faults, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	task, err := e.Submit(t.Context(), record.Request{Action: record.ActionDeployNodes, Filter: onlyNodes(cancelNode), Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	waitLab(t, env, e, task.ID, "Commissioning") // created: its answer is held for 0.3 s
	if got := nodeRecord(t, e, cancelNode); got.MachineID != "" {
		t.Fatalf("%s: the engine knows machine %s already: the create's answer was not held", cancelNode, got.MachineID)
	}
	cancelAndWait(t, e, task.ID)
	if got := labStatus(t, env, cancelNode).StatusName; got != "New" {
		t.Errorf("machine of %s is %s in the lab after the cancel, want New (its commissioning aborted)", cancelNode, got)
	}
	rec := nodeRecord(t, e, cancelNode)
	if rec.MachineID == "" || rec.Outcome != record.OutcomeCancelled || rec.Task != "" {
		t.Errorf("%s: machine %q, outcome %s, lease %q after the cancel, want the machine known, cancelled and free", cancelNode, rec.MachineID, rec.Outcome, rec.Task)
	}
}
