package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestTaskOptionsOverTheAPI: the lifecycle actions and their options go
// through POST /api/v1/tasks; options an action does not take, unknown
// options and unknown erase modes are refused (400) before a task is
// stored; the OpenAPI document lists the actions as the engine has them
// and the options' schema.
func TestTaskOptionsOverTheAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	one := map[string]any{"sets": []any{map[string]any{"names": []string{f.Node}}}}
	for _, a := range []string{"prepare_site", "deploy_nodes"} {
		var task record.Task
		if code := f.json(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], map[string]any{"action": a, "node_filter": one}, &task); code != http.StatusCreated {
			t.Fatalf("POST /tasks %s: %d", a, code)
		}
		if _, err := f.Engine.Wait(t.Context(), task.ID); err != nil {
			t.Fatal(err)
		}
	}
	var task record.Task
	code := f.json(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], map[string]any{"action": "decommission_nodes", "node_filter": one,
		"options": map[string]any{"erase": "quick", "delete": true}}, &task)
	if code != http.StatusCreated || task.Options == nil || task.Options.Erase != "quick" || !task.Options.Delete {
		t.Fatalf("POST /tasks decommission_nodes with options: %d %+v", code, task.Options)
	}
	if _, err := f.Engine.Wait(t.Context(), task.ID); err != nil {
		t.Fatal(err)
	}
	var got api.TaskDetail
	f.json(t, "GET", "/api/v1/tasks/"+task.ID, f.Token[api.RoleViewer], nil, &got)
	if got.Status != record.TaskSucceeded || len(got.Results) != 1 || got.Results[0].Stage != record.StageDeleted {
		t.Fatalf("decommission task: %s %s %+v", got.Status, got.Message, got.Results)
	}
	for _, body := range []string{
		`{"action":"deploy_nodes","options":{"erase":"quick"}}`,
		`{"action":"destroy_nodes","options":{"delete":true}}`,
		`{"action":"decommission_nodes","options":{"erase":"wipe"}}`,
		`{"action":"decommission_nodes","options":{"shred":true}}`,
	} {
		code, b := f.do(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], "application/json", []byte(body))
		if code != http.StatusBadRequest || !strings.Contains(string(b), `"detail"`) {
			t.Errorf("POST /tasks %s: %d %s, want 400", body, code, b)
		}
	}
	var doc map[string]any
	if code := f.json(t, "GET", "/openapi.json", "", nil, &doc); code != 200 {
		t.Fatalf("openapi.json: %d", code)
	}
	body := doc["paths"].(map[string]any)["/api/v1/tasks"].(map[string]any)["post"].(map[string]any)["requestBody"].(map[string]any)
	props := body["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)["properties"].(map[string]any)
	var enum []string
	for _, a := range props["action"].(map[string]any)["enum"].([]any) {
		enum = append(enum, a.(string))
	}
	for _, a := range record.Actions {
		if !slices.Contains(enum, string(a)) {
			t.Errorf("the OpenAPI action enum %v lacks %s", enum, a)
		}
	}
	if _, ok := props["options"]; !ok {
		t.Errorf("the OpenAPI body of POST /tasks has no options")
	}
}
