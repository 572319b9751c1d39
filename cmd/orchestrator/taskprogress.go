package main

import (
	"time"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/internal/progress"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// progressStages are the deploy workflow's stages in the order a task's
// progress shows them.
var progressStages = []record.Stage{record.StagePending, record.StageOOBPrepare, record.StageIdentify,
	record.StageCommission, record.StageAsBuilt, record.StageConfigure, record.StageDeploy, record.StageBootstrap,
	record.StageDeployed}

// snapshot counts a task's nodes in each stage, for the progress that
// tasks --follow draws (the demo draws its own, labrun/demo, from the
// engine's records).
func snapshot(res []apitypes.NodeResult, elapsed time.Duration) progress.Snapshot {
	count := map[record.Stage]int{}
	s := progress.Snapshot{Total: len(res), Elapsed: elapsed}
	for _, r := range res {
		switch r.Outcome {
		case record.OutcomeSucceeded:
			s.Done++
			count[r.Stage]++
		case record.OutcomeFailed, record.OutcomeCancelled, record.OutcomeManual:
			s.Failed = append(s.Failed, progress.Failure{Node: r.Node, Stage: string(r.Stage), Reason: r.Reason})
		default:
			count[r.Stage]++
		}
	}
	for _, st := range progressStages {
		s.Stages = append(s.Stages, progress.Stage{Name: string(st), Count: count[st]})
	}
	return s
}
