package orchestrator_test

import (
	"testing"

	"github.com/slipway-dev/slipway/internal/testsite"
	"github.com/slipway-dev/slipway/orchestrator"
)

// TestOrphaned: a record is an orphan when the design lacks its node and
// its machine is still held; a released or deleted one, one without a
// machine, or one the design has, is not.
func TestOrphaned(t *testing.T) {
	d := testsite.Example(t)
	in := d.NodeNames()[0]
	for _, c := range []struct {
		name string
		rec  orchestrator.NodeRecord
		want bool
	}{
		{"deployed, gone from the design", orchestrator.NodeRecord{Name: "gone", MachineID: "m1", Stage: orchestrator.StageDeployed,
			Outcome: orchestrator.OutcomeSucceeded, Lifecycle: orchestrator.LifecycleDeployed}, true},
		{"powered since, gone from the design", orchestrator.NodeRecord{Name: "gone", MachineID: "m1", Stage: orchestrator.StagePowered,
			Action: orchestrator.ActionPowerCycle, Outcome: orchestrator.OutcomeSucceeded, Lifecycle: orchestrator.LifecycleDeployed}, true},
		{"in the design", orchestrator.NodeRecord{Name: in, MachineID: "m1", Stage: orchestrator.StageDeployed,
			Outcome: orchestrator.OutcomeSucceeded, Lifecycle: orchestrator.LifecycleDeployed}, false},
		{"released", orchestrator.NodeRecord{Name: "gone", MachineID: "m1", Stage: orchestrator.StageReleased,
			Outcome: orchestrator.OutcomeSucceeded, Lifecycle: orchestrator.LifecycleReleased}, false},
		{"deleted", orchestrator.NodeRecord{Name: "gone", Stage: orchestrator.StageDeleted,
			Outcome: orchestrator.OutcomeSucceeded, Lifecycle: orchestrator.LifecycleDeleted}, false},
		{"never had a machine", orchestrator.NodeRecord{Name: "gone", Stage: orchestrator.StagePending}, false},
	} {
		if got := orchestrator.Orphaned(d, c.rec); got != c.want {
			t.Errorf("%s: orphan %v, want %v", c.name, got, c.want)
		}
	}
	if orchestrator.Orphaned(nil, orchestrator.NodeRecord{Name: "gone", MachineID: "m1"}) {
		t.Error("an orphan without a current design")
	}
}
