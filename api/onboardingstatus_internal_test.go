package api

import (
	"context"
	"testing"

	"github.com/slipway-dev/slipway/onboarding"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestOnboardingStatusOfMixedNodes: a batch's status from its nodes'
// lifecycles once its task ended (and the task's while it runs).
func TestOnboardingStatusOfMixedNodes(t *testing.T) {
	rec := onboarding.Record{Request: onboarding.Request{Rows: []onboarding.Row{{Hostname: "a"}, {Hostname: "b"}}}}
	cases := []struct {
		task record.TaskStatus
		a, b record.Lifecycle // "" : no record yet
		want string
	}{
		{record.TaskRunning, record.LifecycleDeployed, record.LifecycleFailed, "running"},
		{record.TaskFailed, record.LifecycleDeployed, record.LifecycleDeployed, "succeeded"},
		{record.TaskFailed, record.LifecycleDeployed, record.LifecycleFailed, "partially_succeeded"},
		{record.TaskSucceeded, record.LifecycleDeployed, record.LifecycleDeploying, "running"},
		{record.TaskSucceeded, record.LifecycleReleased, record.LifecycleDeleted, "released"},
		{record.TaskFailed, record.LifecycleCancelled, record.LifecycleFailed, "failed"},
		{record.TaskCancelled, record.LifecycleCancelled, "", "cancelled"},
		{record.TaskFailed, "", "", "failed"},
	}
	for _, c := range cases {
		lookup := func(_ context.Context, name string) (record.NodeRecord, bool, error) {
			l := map[string]record.Lifecycle{"a": c.a, "b": c.b}[name]
			return record.NodeRecord{Name: name, Lifecycle: l}, l != "", nil
		}
		got, err := onboardingStatus(t.Context(), rec, c.task, lookup)
		if err != nil || got != c.want {
			t.Errorf("task %s, nodes %q %q: %q %v, want %q", c.task, c.a, c.b, got, err, c.want)
		}
	}
}
