package labrun_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/labrun"
	"github.com/slipway-dev/slipway/internal/testsite"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// TestAuditCountsFromTheLab: a boot action with signaling off that fails
// does not stop the engine (it does not wait for that report), so the
// engine counts every node deployed; the lab's audit counts the machine
// whose agent reported the failure as failed. (The audit used to count
// machines with an OS installed: all of them.)
func TestAuditCountsFromTheLab(t *testing.T) {
	d := testsite.Example(t)
	bad := d.NodeNames()[0]
	env, err := labrun.Start(t.Context(), labrun.Options{Design: d, Store: memory.New(), TimeScale: 0.001, Seed: 7,
		BootstrapFail: map[string]string{bad: "motd-addresses"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	e, err := env.Engine(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	for _, a := range []orchestrator.Action{orchestrator.ActionPrepareSite, orchestrator.ActionDeployNodes} {
		if task := runTask(t, e, a); task.Status != orchestrator.TaskSucceeded {
			t.Fatalf("%s: %s (%s)", a, task.Status, task.Message)
		}
	}
	a, err := env.Audit(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	if a.Deployed != len(d.Nodes)-1 || !slices.Equal(a.Failed, []string{bad}) || len(a.Stuck) != 0 {
		t.Errorf("audit: %d deployed (want %d), failed %v (want [%s]), stuck %v", a.Deployed, len(d.Nodes)-1, a.Failed, bad, a.Stuck)
	}
	installed := 0 // the old audit's "deployed"
	for _, m := range env.Lab.Machines() {
		if m.OS() != "" {
			installed++
		}
	}
	if installed != len(d.Nodes) {
		t.Errorf("%d machines have an OS installed, want all %d (the old count would call them deployed)", installed, len(d.Nodes))
	}
	if len(a.Leaked) != 0 || a.DuplicateDeploys != 0 || a.Floor <= 0 {
		t.Errorf("audit: leaked %v, %d duplicate deploys, floor %v", a.Leaked, a.DuplicateDeploys, a.Floor)
	}
}

func runTask(t *testing.T, e *orchestrator.Engine, a orchestrator.Action) orchestrator.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	task, err := e.Submit(ctx, orchestrator.Request{Action: a, Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	task, err = e.Wait(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	return task
}
