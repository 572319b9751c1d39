package orchestrator_test

import (
	"testing"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestOrphaned: a record is an orphan when the design lacks its node and
// its machine is still held; a released or deleted one, one without a
// machine, or one the design has, is not.
func TestOrphaned(t *testing.T) {
	d := designtest.Example(t)
	in := d.NodeNames()[0]
	for _, c := range []struct {
		name string
		rec  record.NodeRecord
		want bool
	}{
		{"deployed, gone from the design", record.NodeRecord{Name: "gone", MachineID: "m1", Stage: record.StageDeployed,
			Outcome: record.OutcomeSucceeded, Lifecycle: record.LifecycleDeployed}, true},
		{"powered since, gone from the design", record.NodeRecord{Name: "gone", MachineID: "m1", Stage: record.StagePowered,
			Action: record.ActionPowerCycle, Outcome: record.OutcomeSucceeded, Lifecycle: record.LifecycleDeployed}, true},
		{"in the design", record.NodeRecord{Name: in, MachineID: "m1", Stage: record.StageDeployed,
			Outcome: record.OutcomeSucceeded, Lifecycle: record.LifecycleDeployed}, false},
		{"released", record.NodeRecord{Name: "gone", MachineID: "m1", Stage: record.StageReleased,
			Outcome: record.OutcomeSucceeded, Lifecycle: record.LifecycleReleased}, false},
		{"deleted", record.NodeRecord{Name: "gone", Stage: record.StageDeleted,
			Outcome: record.OutcomeSucceeded, Lifecycle: record.LifecycleDeleted}, false},
		{"never had a machine", record.NodeRecord{Name: "gone", Stage: record.StagePending}, false},
	} {
		if got := orchestrator.Orphaned(d, c.rec); got != c.want {
			t.Errorf("%s: orphan %v, want %v", c.name, got, c.want)
		}
	}
	if orchestrator.Orphaned(nil, record.NodeRecord{Name: "gone", MachineID: "m1"}) {
		t.Error("an orphan without a current design")
	}
}
