package orchestrator_test

import (
	"context"
	"testing"

	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// runToCrash starts an engine with cfg on ctx, submits req and waits
// until the test's crash point cancels ctx (a simulated crash: the
// engine's context ends); the task must not finish first. It returns the
// engine (for the caller to Close) and the task, to resume on a new one.
func runToCrash(ctx context.Context, t *testing.T, cfg orchestrator.Config, req record.Request) (*orchestrator.Engine, record.Task) {
	t.Helper()
	e1, err := orchestrator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	task, err := e1.Submit(ctx, req)
	if err != nil {
		e1.Close()
		t.Fatal(err)
	}
	if _, err := e1.Wait(ctx, task.ID); err == nil {
		e1.Close()
		t.Fatal("the task finished: the crash point was never reached")
	}
	return e1, task
}
