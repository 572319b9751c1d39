package orchestrator

import (
	"testing"
	"time"

	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestVerbTakesAndCheckpoint: which nodes each verb selects by their
// result, and the stage each starts from (desired verb + recorded state
// -> checkpoint), without an engine.
func TestVerbTakesAndCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		v    record.Verb
		out  record.Outcome
		want bool
	}{
		{record.VerbRetry, record.OutcomeFailed, true}, {record.VerbRetry, record.OutcomeCancelled, false},
		{record.VerbResume, record.OutcomeCancelled, true}, {record.VerbResume, record.OutcomeRunning, true}, {record.VerbResume, record.OutcomeFailed, false},
		{record.VerbRerun, record.OutcomeSucceeded, true}, {record.VerbRerun, record.OutcomeManual, false},
		{record.VerbRestartClean, record.OutcomeFailed, true}, {record.Verb("bogus"), record.OutcomeFailed, false},
	} {
		if got := verbTakes(tc.v, record.NodeResult{Outcome: tc.out}); got != tc.want {
			t.Errorf("%s takes a %s node: %v, want %v", tc.v, tc.out, got, tc.want)
		}
	}
	started := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		name       string
		v          record.Verb
		action     record.Action
		stage      record.Stage // the record's
		res        record.NodeResult
		otherSince bool
		want       record.Stage
	}{
		{"retry where it failed", record.VerbRetry, record.ActionDeployNodes, record.StageConfigure, record.NodeResult{Stage: record.StageConfigure, Started: started}, false, record.StageConfigure},
		{"retry after another task", record.VerbRetry, record.ActionDeployNodes, record.StageReleased, record.NodeResult{Stage: record.StageDeploy, Started: started}, true, record.StageDeploy},
		{"retry before start", record.VerbRetry, record.ActionDeployNodes, record.StageReleased, record.NodeResult{}, true, record.StageBaseline},
		{"resume before start", record.VerbResume, record.ActionDeployNodes, record.StageReleased, record.NodeResult{}, true, record.StageBaseline},
		{"resume after compensation", record.VerbResume, record.ActionDeployNodes, record.StageReleased, record.NodeResult{Started: started}, true, record.StageDeploy},
		{"resume mid-way", record.VerbResume, record.ActionDeployNodes, record.StageCommission, record.NodeResult{Started: started}, false, record.StageCommission},
		{"rerun", record.VerbRerun, record.ActionDeployNodes, record.StageDeployed, record.NodeResult{Started: started}, false, record.StageBaseline},
		{"restart-clean releases", record.VerbRestartClean, record.ActionDeployNodes, record.StageConfigure, record.NodeResult{Started: started}, false, record.StageReleasing},
		{"restart-clean of destroy", record.VerbRestartClean, record.ActionDestroyNodes, record.StageReleased, record.NodeResult{Started: started}, false, record.StageReleasing},
		{"restart-clean of a test", record.VerbRestartClean, record.ActionTestNodes, record.StageReady, record.NodeResult{Started: started}, false, sequence(record.ActionTestNodes)[0]},
	} {
		rec := record.NodeRecord{Stage: tc.stage, Step: 3, Rounds: 2}
		verbCheckpoint(&rec, tc.v, tc.action, tc.res, sequence(tc.action), tc.otherSince)
		if rec.Stage != tc.want {
			t.Errorf("%s: stage %s, want %s", tc.name, rec.Stage, tc.want)
		}
		if tc.v != record.VerbResume && rec.Rounds != 0 {
			t.Errorf("%s: rounds %d, want a fresh 0", tc.name, rec.Rounds)
		}
	}
}
