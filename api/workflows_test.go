package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestDecommissionWorkflows: storage-cleanup and decommission of a
// deployed node run as decommission_nodes tasks and show as workflows;
// the lab's MAAS, not the engine, says what became of the machine
// (released and kept, then deleted); the verbs are the task's and the
// node's.
func TestDecommissionWorkflows(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.Token[api.RoleAdmin]
	var task record.Task
	if code := f.json(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], map[string]any{"action": "prepare_site"}, &task); code != http.StatusCreated {
		t.Fatalf("prepare_site: %d", code)
	}
	wait(t, f, task.ID)
	if code := f.json(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], map[string]any{"action": "deploy_nodes",
		"node_filter": map[string]any{"sets": []map[string]any{{"names": []string{f.Node}}}}}, &task); code != http.StatusCreated {
		t.Fatalf("deploy: %d", code)
	}
	wait(t, f, task.ID)
	machineStatus := func() (string, bool) {
		for _, r := range f.Env.Lab.Regions() {
			for _, m := range r.MAAS.Machines() {
				if m.Hostname == f.Node {
					return m.Status, true
				}
			}
		}
		return "", false
	}
	if st, _ := machineStatus(); st != "Deployed" {
		t.Fatalf("after deploy the lab says %q", st)
	}

	if code := f.json(t, "POST", "/api/v1/admin/nodes/"+f.Node+"/storage-cleanup", f.Token[api.RoleOperator], nil, nil); code != http.StatusForbidden {
		t.Errorf("storage-cleanup as an operator: %d", code)
	}
	var w apitypes.Workflow
	if code := f.json(t, "POST", "/api/v1/admin/nodes/"+f.Node+"/storage-cleanup", admin, nil, &w); code != http.StatusCreated ||
		w.Kind != "storage-cleanup" || w.Task.Options == nil || w.Task.Options.Erase != "secure" || w.Task.Options.Delete {
		t.Fatalf("storage-cleanup: %d %+v", code, w)
	}
	wait(t, f, w.ID)
	if st, ok := machineStatus(); !ok || st != "Ready" {
		t.Fatalf("after storage-cleanup the lab says %q (present %v), want Ready", st, ok)
	}
	var page apitypes.Page[apitypes.Workflow]
	if code := f.json(t, "GET", "/api/v1/admin/decommissions", admin, nil, &page); code != 200 || page.Total != 1 || page.Items[0].ID != w.ID {
		t.Fatalf("list: %d %+v", code, page)
	}
	if code := f.json(t, "GET", "/api/v1/admin/decommissions/"+task.ID, admin, nil, nil); code != http.StatusNotFound {
		t.Errorf("a deploy task as a decommission: %d", code)
	}
	if code := f.json(t, "POST", "/api/v1/admin/decommissions/"+w.ID+"/explode", admin, nil, nil); code != http.StatusNotFound {
		t.Errorf("an unknown verb: %d", code)
	}
	var d apitypes.Workflow
	if code := f.json(t, "POST", "/api/v1/admin/nodes/"+f.Node+"/decommission", admin, map[string]string{"erase": "quick"}, &d); code != http.StatusCreated ||
		d.Kind != "decommission" || !d.Task.Options.Delete {
		t.Fatalf("decommission: %d %+v", code, d)
	}
	wait(t, f, d.ID)
	if st, ok := machineStatus(); ok {
		t.Fatalf("after decommission the lab still has the machine (%s)", st)
	}
	var got apitypes.Workflow
	if code := f.json(t, "POST", "/api/v1/admin/decommissions/"+d.ID+"/rerun", admin, nil, &got); code != http.StatusAccepted || got.ID != d.ID {
		t.Errorf("rerun: %d %+v", code, got)
	}
}

// wait waits for a task to end.
func wait(t *testing.T, f *fixture, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if got, err := f.Engine.Wait(ctx, id); err != nil || got.Status != record.TaskSucceeded {
		t.Fatalf("task %s: %s %s %v", id, got.Status, got.Message, err)
	}
}
