package main

import (
	"time"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/internal/progress"
	"github.com/slipway-dev/slipway/labrun/demo"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// snapshot counts a task's nodes in each stage, for the progress that
// tasks --follow draws: the demo's count (demo.Snapshot) of the results
// as the API answered them.
func snapshot(res []apitypes.NodeResult, elapsed time.Duration) progress.Snapshot {
	recs := make([]record.NodeResult, len(res))
	for i, r := range res {
		recs[i] = record.NodeResult(r)
	}
	return demo.Snapshot(recs, elapsed)
}
