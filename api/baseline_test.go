package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestApplyBaselineOverTheAPI: apply_baseline with dry_run through POST
// /api/v1/tasks records the example GPU node's plan, which GET
// /api/v1/nodes/{name} shows, and the node's lab BMC gets no update; the
// options reboot and dry_run are refused (400) for another action.
func TestApplyBaselineOverTheAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const gpu = "r01-gpu01"
	one := map[string]any{"sets": []any{map[string]any{"names": []string{gpu}}}}
	var task record.Task
	if code := f.json(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], map[string]any{"action": "apply_baseline", "node_filter": one,
		"options": map[string]any{"dry_run": true}}, &task); code != http.StatusCreated || task.Options == nil || !task.Options.DryRun {
		t.Fatalf("POST /tasks apply_baseline dry_run: %d %+v", code, task.Options)
	}
	if _, err := f.Engine.Wait(t.Context(), task.ID); err != nil {
		t.Fatal(err)
	}
	var n apitypes.NodeDetail
	if code := f.json(t, "GET", "/api/v1/nodes/"+gpu, f.Token[api.RoleViewer], nil, &n); code != http.StatusOK || n.Record == nil {
		t.Fatalf("GET /nodes/%s: %d", gpu, code)
	}
	b := n.Record.Baseline
	if b == nil || !b.DryRun || b.Task != task.ID || len(b.Plan) == 0 {
		t.Fatalf("the node's baseline over the API: %+v", b)
	}
	found := false
	for _, c := range b.Plan {
		found = found || c.Kind == "firmware" && c.Item == "bios" && c.Want == "2.19.1"
	}
	if !found {
		t.Errorf("plan %+v: no BIOS firmware change to 2.19.1", b.Plan)
	}
	if u := f.Env.Lab.Machine(gpu).Redfish().Updates(); u.SimpleUpdates != 0 {
		t.Errorf("a dry run updated the BMC: %+v", u)
	}
	for _, body := range []string{`{"action":"deploy_nodes","options":{"reboot":true}}`, `{"action":"power_cycle","options":{"dry_run":true}}`} {
		code, out := f.do(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], "application/json", []byte(body))
		if code != http.StatusBadRequest || !strings.Contains(string(out), "apply_baseline only") {
			t.Errorf("POST /tasks %s: %d %s, want 400 naming apply_baseline", body, code, out)
		}
	}
}
