package server

import (
	"errors"
	"testing"

	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestHAEngineRefusesNotRun: a mutating call reaching a replica whose
// engine is not running is refused as unavailable and not run, so the API
// marks it safe to send again.
func TestHAEngineRefusesNotRun(t *testing.T) {
	h := &haEngine{}
	_, err := h.Submit(t.Context(), record.Request{Action: record.ActionDeployNodes})
	var nr interface {
		Unavailable() bool
		NotRun() bool
	}
	if !errors.As(err, &nr) || !nr.Unavailable() || !nr.NotRun() {
		t.Fatalf("Submit on a replica not leading: %v", err)
	}
}
