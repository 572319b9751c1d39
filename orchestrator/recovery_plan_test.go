package orchestrator

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestPlanRecovery: the one table of how a stuck machine is got moving
// again, as a MAAS operator would: what each observed state plans for a
// machine this deployment allocated, and that nothing is planned that
// only an allocation allows on another's machine.
func TestPlanRecovery(t *testing.T) {
	for _, c := range []struct {
		state string
		ours  bool
		want  []record.RecoveryStep
		why   string // "" when the engine recovers by itself
	}{
		{"Deploying", true, []record.RecoveryStep{record.RecAbort, record.RecRelease}, ""},
		{"Deploying", false, nil, "did not allocate it"},
		{"Disk erasing", true, []record.RecoveryStep{record.RecAbort, record.RecRelease}, ""},
		{"Commissioning", false, []record.RecoveryStep{record.RecAbort}, ""},
		{"Testing", true, []record.RecoveryStep{record.RecAbort}, ""},
		{"Broken", true, []record.RecoveryStep{record.RecMarkFixed, record.RecRelease}, ""},
		{"Broken", false, nil, "mark it fixed"},
		{"Failed deployment", true, []record.RecoveryStep{record.RecMarkBroken, record.RecMarkFixed, record.RecRelease}, ""},
		{"Failed releasing", true, []record.RecoveryStep{record.RecMarkBroken, record.RecMarkFixed, record.RecRelease}, ""},
		{"Failed deployment", false, nil, "release-manual"},
		{"Allocated", true, []record.RecoveryStep{record.RecRelease}, ""},
		{"Ready", true, nil, ""},
		{"New", false, nil, ""},
		{"Missing", true, nil, "no recovery for"},
		{"Rescue mode", true, nil, "no recovery for"},
	} {
		steps, why := planRecovery(c.state, c.ours)
		if diff := cmp.Diff(c.want, steps); diff != "" {
			t.Errorf("%s (ours %v): steps (-want +got):\n%s", c.state, c.ours, diff)
		}
		if (c.why == "") != (why == "") || !strings.Contains(why, c.why) {
			t.Errorf("%s (ours %v): gives up with %q, want %q", c.state, c.ours, why, c.why)
		}
		if why != "" && !strings.Contains(why, "release-manual") {
			t.Errorf("%s: %q does not tell the operator the next step", c.state, why)
		}
	}
}

// TestStepReached: a step asked again after a crash, or refused because
// the machine is already past it, counts as done.
func TestStepReached(t *testing.T) {
	for _, c := range []struct {
		step  record.RecoveryStep
		state string
		want  bool
	}{
		{record.RecAbort, "Allocated", true}, {record.RecAbort, "Deploying", false},
		{record.RecMarkBroken, "Broken", true}, {record.RecMarkBroken, "Failed deployment", false},
		{record.RecMarkFixed, "Ready", true}, {record.RecMarkFixed, "Broken", false},
		{record.RecRelease, "Ready", true}, {record.RecRelease, "Releasing", false},
	} {
		if got := stepReached(c.step, c.state); got != c.want {
			t.Errorf("%s at %s: %v, want %v", c.step, c.state, got, c.want)
		}
	}
}

// TestLifecycleState: a record of the previous version (a stage only)
// gets its lifecycle derived on read; power and verify results do not
// hide a deployed node.
func TestLifecycleState(t *testing.T) {
	for _, c := range []struct {
		name string
		rec  record.NodeRecord
		want record.Lifecycle
	}{
		{"no record", record.NodeRecord{}, record.LifecycleNew},
		{"deployed", record.NodeRecord{Action: record.ActionDeployNodes, Stage: record.StageDeployed, Outcome: record.OutcomeSucceeded}, record.LifecycleDeployed},
		{"powered after a deploy", record.NodeRecord{Action: record.ActionPowerCycle, Stage: record.StagePowered, Outcome: record.OutcomeSucceeded, MachineID: "m",
			History: []record.Transition{{From: record.StageBootstrap, To: record.StageDeployed}, {From: record.StagePower, To: record.StagePowered}}}, record.LifecycleDeployed},
		{"verified after a prepare", record.NodeRecord{Action: record.ActionVerifyNodes, Stage: record.StageVerified, Outcome: record.OutcomeSucceeded, MachineID: "m",
			History: []record.Transition{{From: record.StageCommission, To: record.StageReady}, {From: record.StageVerify, To: record.StageVerified}}}, record.LifecycleReady},
		{"destroyed", record.NodeRecord{Action: record.ActionDestroyNodes, Stage: record.StageReleased, Outcome: record.OutcomeSucceeded}, record.LifecycleReleased},
		{"deploy failed", record.NodeRecord{Action: record.ActionDeployNodes, Stage: record.StageDeploy, Outcome: record.OutcomeFailed}, record.LifecycleFailed},
		{"verified only", record.NodeRecord{Action: record.ActionVerifyNodes, Stage: record.StageVerified, Outcome: record.OutcomeSucceeded}, record.LifecycleNew},
		{"recorded", record.NodeRecord{Lifecycle: record.LifecycleDeployed, Action: record.ActionPowerOff, Stage: record.StagePowered}, record.LifecycleDeployed},
	} {
		if got := c.rec.LifecycleState(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if _, ok := record.LifecycleAt(record.ActionPowerCycle, record.StagePower, record.OutcomeRunning); ok {
		t.Error("a power task changes the lifecycle")
	}
	if _, ok := record.LifecycleAt(record.ActionVerifyNodes, record.StageVerified, record.OutcomeFailed); ok {
		t.Error("a failed verify changes the lifecycle")
	}
}
