package apitypes

import (
	"time"

	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Event is one entry of the engine's event log (GET /events and the
// event stream).
type Event struct {
	Seq     uint64       `json:"seq"`
	Time    time.Time    `json:"time"`
	Task    string       `json:"task,omitempty"`
	Node    string       `json:"node,omitempty"`
	Stage   record.Stage `json:"stage,omitempty"`
	Level   string       `json:"level"` // info | warn | error
	Kind    string       `json:"kind"`  // transition, retry, failed, leak, drift, task...
	Message string       `json:"message"`
	// Type is the typed name of a lifecycle milestone (record.EventTypes);
	// "" on other events.
	Type string `json:"type,omitempty"`
	// Correlation is the request ID of the API call that created the
	// event's task.
	Correlation string `json:"correlation_id,omitempty"`
	// ProvisionerWait is, on a transition event, how long (milliseconds)
	// the stage the node left waited on the provisioner or hardware.
	ProvisionerWait int64 `json:"provisioner_wait_ms,omitempty"`
}
