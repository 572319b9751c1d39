package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestNodesLifecycleAndLastTask: GET /api/v1/nodes shows a node's
// lifecycle apart from its last task's result: after a deploy and a
// power_cycle the node is deployed, its last action power_cycle at
// stage powered; ?lifecycle= filters on it. Adopt takes a machine in its
// body, bounded, and an unknown machine is a 404 naming it.
func TestNodesLifecycleAndLastTask(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, a := range []string{"prepare_site", "deploy_nodes", "power_cycle"} {
		var task record.Task
		code := f.json(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], map[string]any{"action": a,
			"node_filter": map[string]any{"sets": []any{map[string]any{"names": []string{f.Node}}}}}, &task)
		if code != http.StatusCreated {
			t.Fatalf("POST /tasks %s: %d", a, code)
		}
		if _, err := f.Engine.Wait(t.Context(), task.ID); err != nil {
			t.Fatal(err)
		}
	}
	var nodes api.Page[api.NodeSummary]
	f.json(t, "GET", "/api/v1/nodes?lifecycle=deployed", f.Token[api.RoleViewer], nil, &nodes)
	if nodes.Total != 1 {
		t.Fatalf("deployed nodes: %+v", nodes)
	}
	n := nodes.Items[0]
	if n.Name != f.Node || n.Lifecycle != record.LifecycleDeployed || n.Action != record.ActionPowerCycle ||
		n.Stage != record.StagePowered || n.Outcome != record.OutcomeSucceeded || n.LastTask == "" {
		t.Errorf("node: %+v, want lifecycle deployed, last action power_cycle at powered, succeeded", n)
	}
	f.json(t, "GET", "/api/v1/nodes?lifecycle=released", f.Token[api.RoleViewer], nil, &nodes)
	if nodes.Total != 0 {
		t.Errorf("released nodes: %+v", nodes)
	}

	code, b := f.do(t, "POST", "/api/v1/nodes/"+f.Node+"/adopt", f.Token[api.RoleOperator], "application/json",
		[]byte(`{"machine":"`+strings.Repeat("x", 300)+`"}`))
	if code != http.StatusBadRequest {
		t.Errorf("adopt with a 300-byte machine ID: %d %s", code, b)
	}
	code, b = f.do(t, "POST", "/api/v1/nodes/"+f.Node+"/adopt", f.Token[api.RoleOperator], "application/json", []byte(`{"machine":"nosuch"}`))
	if code == http.StatusOK || code >= 500 || !strings.Contains(string(b), "nosuch") {
		t.Errorf("adopt of an unknown machine: %d %s", code, b)
	}
}
