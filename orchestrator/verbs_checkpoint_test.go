package orchestrator

import (
	"testing"
	"time"
)

// TestVerbTakesAndCheckpoint: which nodes each verb selects by their
// result, and the stage each starts from (desired verb + recorded state
// -> checkpoint), without an engine.
func TestVerbTakesAndCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		v    Verb
		out  Outcome
		want bool
	}{
		{VerbRetry, OutcomeFailed, true}, {VerbRetry, OutcomeCancelled, false},
		{VerbResume, OutcomeCancelled, true}, {VerbResume, OutcomeRunning, true}, {VerbResume, OutcomeFailed, false},
		{VerbRerun, OutcomeSucceeded, true}, {VerbRerun, OutcomeManual, false},
		{VerbRestartClean, OutcomeFailed, true}, {Verb("bogus"), OutcomeFailed, false},
	} {
		if got := verbTakes(tc.v, NodeResult{Outcome: tc.out}); got != tc.want {
			t.Errorf("%s takes a %s node: %v, want %v", tc.v, tc.out, got, tc.want)
		}
	}
	started := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		name       string
		v          Verb
		action     Action
		stage      Stage // the record's
		res        NodeResult
		otherSince bool
		want       Stage
	}{
		{"retry where it failed", VerbRetry, ActionDeployNodes, StageConfigure, NodeResult{Stage: StageConfigure, Started: started}, false, StageConfigure},
		{"retry after another task", VerbRetry, ActionDeployNodes, StageReleased, NodeResult{Stage: StageDeploy, Started: started}, true, StageDeploy},
		{"retry before start", VerbRetry, ActionDeployNodes, StageReleased, NodeResult{}, true, StageOOBPrepare},
		{"resume before start", VerbResume, ActionDeployNodes, StageReleased, NodeResult{}, true, StageOOBPrepare},
		{"resume after compensation", VerbResume, ActionDeployNodes, StageReleased, NodeResult{Started: started}, true, StageDeploy},
		{"resume mid-way", VerbResume, ActionDeployNodes, StageCommission, NodeResult{Started: started}, false, StageCommission},
		{"rerun", VerbRerun, ActionDeployNodes, StageDeployed, NodeResult{Started: started}, false, StageOOBPrepare},
		{"restart-clean releases", VerbRestartClean, ActionDeployNodes, StageConfigure, NodeResult{Started: started}, false, StageReleasing},
		{"restart-clean of destroy", VerbRestartClean, ActionDestroyNodes, StageReleased, NodeResult{Started: started}, false, StageReleasing},
		{"restart-clean of a test", VerbRestartClean, ActionTestNodes, StageReady, NodeResult{Started: started}, false, sequence(ActionTestNodes)[0]},
	} {
		rec := NodeRecord{Stage: tc.stage, Step: 3, Rounds: 2}
		verbCheckpoint(&rec, tc.v, tc.action, tc.res, sequence(tc.action), tc.otherSince)
		if rec.Stage != tc.want {
			t.Errorf("%s: stage %s, want %s", tc.name, rec.Stage, tc.want)
		}
		if tc.v != VerbResume && rec.Rounds != 0 {
			t.Errorf("%s: rounds %d, want a fresh 0", tc.name, rec.Rounds)
		}
	}
}
