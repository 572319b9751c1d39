package apitypes

import "time"

// TaskTimeline is where a task's time goes (GET /tasks/{id}/timeline),
// computed from the task's events: how many of its nodes were in each
// stage over time, and how long each stage took its nodes, split into
// the wait on the provisioner or hardware and Slipway's own time.
type TaskTimeline struct {
	Task   string    `json:"task"`
	Status string    `json:"status"`
	Nodes  int       `json:"nodes"` // the task's nodes: every point's counts sum to it
	Start  time.Time `json:"start"` // x = 0: when the task started (created, while queued)
	// End is the last point's time: when the task finished, else now.
	End time.Time `json:"end"`
	// Series names the counts of each point, in the order the nodes first
	// reached them: queued (no event of the node in the task yet), the
	// stages, then failed, cancelled and manual-intervention (a node's
	// outcome in the task when it ended at a stage short of its goal).
	Series []string        `json:"series"`
	Points []TimelinePoint `json:"points"` // at most 120, evenly spaced from Start to End
	// Stages are the stages the task's nodes left, in Series order.
	Stages []StageTimes `json:"stages"`
	// Complete is false when the answer stopped reading the event log
	// at its bound: ask again for the rest.
	Complete bool `json:"complete"`
	// Truncated: the task has more nodes than the answer follows (its
	// first 100,000 are counted).
	Truncated bool `json:"truncated,omitempty"`
}

// TimelinePoint is the count of the task's nodes in each series at a
// time.
type TimelinePoint struct {
	At     float64 `json:"at_s"`   // seconds since Start
	Counts []int   `json:"counts"` // one per Series
}

// StageTimes are the durations of one stage over the nodes that left it
// in the task (a node that went through it twice counts twice).
type StageTimes struct {
	Stage string `json:"stage"`
	Done  int    `json:"done"` // stage runs that ended (the node moved on)
	// Total is the stage's time, from the node entering it to leaving it.
	Total Percentiles `json:"total"`
	// Provisioner is the part spent waiting on the provisioner (MAAS) or
	// the hardware: from the provisioner's first in-progress answer to the
	// end of the wait that saw the machine's phase end.
	Provisioner Percentiles `json:"provisioner"`
	// Slipway is the rest: queueing for limits, configure calls, store
	// writes, the engine's own work.
	Slipway Percentiles `json:"slipway"`
}

// Percentiles of a duration, in seconds.
type Percentiles struct {
	P50 float64 `json:"p50_s"`
	P95 float64 `json:"p95_s"`
}
