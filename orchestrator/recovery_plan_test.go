package orchestrator

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPlanRecovery: the one table of how a stuck machine is got moving
// again, as a MAAS operator would: what each observed state plans for a
// machine this deployment allocated, and that nothing is planned that
// only an allocation allows on another's machine.
func TestPlanRecovery(t *testing.T) {
	for _, c := range []struct {
		state string
		ours  bool
		want  []RecoveryStep
		why   string // "" when the engine recovers by itself
	}{
		{"Deploying", true, []RecoveryStep{RecAbort, RecRelease}, ""},
		{"Deploying", false, nil, "did not allocate it"},
		{"Disk erasing", true, []RecoveryStep{RecAbort, RecRelease}, ""},
		{"Commissioning", false, []RecoveryStep{RecAbort}, ""},
		{"Testing", true, []RecoveryStep{RecAbort}, ""},
		{"Broken", true, []RecoveryStep{RecMarkFixed, RecRelease}, ""},
		{"Broken", false, nil, "mark it fixed"},
		{"Failed deployment", true, []RecoveryStep{RecMarkBroken, RecMarkFixed, RecRelease}, ""},
		{"Failed releasing", true, []RecoveryStep{RecMarkBroken, RecMarkFixed, RecRelease}, ""},
		{"Failed deployment", false, nil, "release-manual"},
		{"Allocated", true, []RecoveryStep{RecRelease}, ""},
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
		step  RecoveryStep
		state string
		want  bool
	}{
		{RecAbort, "Allocated", true}, {RecAbort, "Deploying", false},
		{RecMarkBroken, "Broken", true}, {RecMarkBroken, "Failed deployment", false},
		{RecMarkFixed, "Ready", true}, {RecMarkFixed, "Broken", false},
		{RecRelease, "Ready", true}, {RecRelease, "Releasing", false},
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
		rec  NodeRecord
		want Lifecycle
	}{
		{"no record", NodeRecord{}, LifecycleNew},
		{"deployed", NodeRecord{Action: ActionDeployNodes, Stage: StageDeployed, Outcome: OutcomeSucceeded}, LifecycleDeployed},
		{"powered after a deploy", NodeRecord{Action: ActionPowerCycle, Stage: StagePowered, Outcome: OutcomeSucceeded, MachineID: "m",
			History: []Transition{{From: StageBootstrap, To: StageDeployed}, {From: StagePower, To: StagePowered}}}, LifecycleDeployed},
		{"verified after a prepare", NodeRecord{Action: ActionVerifyNodes, Stage: StageVerified, Outcome: OutcomeSucceeded, MachineID: "m",
			History: []Transition{{From: StageCommission, To: StageReady}, {From: StageVerify, To: StageVerified}}}, LifecycleReady},
		{"destroyed", NodeRecord{Action: ActionDestroyNodes, Stage: StageReleased, Outcome: OutcomeSucceeded}, LifecycleReleased},
		{"deploy failed", NodeRecord{Action: ActionDeployNodes, Stage: StageDeploy, Outcome: OutcomeFailed}, LifecycleFailed},
		{"verified only", NodeRecord{Action: ActionVerifyNodes, Stage: StageVerified, Outcome: OutcomeSucceeded}, LifecycleNew},
		{"recorded", NodeRecord{Lifecycle: LifecycleDeployed, Action: ActionPowerOff, Stage: StagePowered}, LifecycleDeployed},
	} {
		if got := c.rec.LifecycleState(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if _, ok := LifecycleAt(ActionPowerCycle, StagePower, OutcomeRunning); ok {
		t.Error("a power task changes the lifecycle")
	}
	if _, ok := LifecycleAt(ActionVerifyNodes, StageVerified, OutcomeFailed); ok {
		t.Error("a failed verify changes the lifecycle")
	}
}
