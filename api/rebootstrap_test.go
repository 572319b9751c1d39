package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// POST /nodes/{name}/rebootstrap: admins only (the answer carries the
// node's new token, which gets the node's rendered secrets); the answer
// has the new bootstrap environment and the task that waits for the
// node's reports again; the call is audited, and the token is in no audit
// record, event or log line.
func TestRebootstrap(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	url := "/api/v1/nodes/" + f.Node + "/rebootstrap"
	if code, b := f.do(t, "POST", url, f.Token[api.RoleAdmin], "", nil); code != http.StatusConflict {
		t.Errorf("before any deployment: %d %s", code, b)
	}
	var dep record.Task
	for _, a := range []string{"prepare_site", "deploy_nodes"} {
		var task record.Task
		code := f.json(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], map[string]any{"action": a,
			"node_filter": map[string]any{"sets": []any{map[string]any{"names": []string{f.Node}}}}}, &task)
		if code != http.StatusCreated {
			t.Fatalf("POST /tasks %s: %d", a, code)
		}
		if got, err := f.Engine.Wait(t.Context(), task.ID); err != nil || got.Status != record.TaskSucceeded {
			t.Fatalf("task %s: %s %v", a, got.Status, err)
		}
		dep = task
	}
	for _, tok := range []string{f.Token[api.RoleOperator], f.Token[api.RoleViewer]} {
		if code, _ := f.do(t, "POST", url, tok, "", nil); code != http.StatusForbidden {
			t.Errorf("rebootstrap as a non-admin: %d, want 403", code)
		}
	}
	before, _ := f.Store.LastSeq(t.Context(), "audit")
	var out record.Rebootstrapped
	if code := f.json(t, "POST", url, f.Token[api.RoleAdmin], nil, &out); code != http.StatusOK {
		t.Fatalf("rebootstrap as admin: %d", code)
	}
	_, tok, ok := strings.Cut(out.Env, "SLIPWAY_TOKEN='")
	tok, _, _ = strings.Cut(tok, "'")
	if !ok || !strings.HasPrefix(tok, "sni_") || !strings.Contains(out.UserData, tok) || out.Task != dep.ID ||
		out.Node.Stage != record.StageBootstrap {
		t.Fatalf("answer: task %q (want %s), stage %s, a token in the env: %v", out.Task, dep.ID, out.Node.Stage, ok)
	}
	if after, _ := f.Store.LastSeq(t.Context(), "audit"); after-before != 1 {
		t.Errorf("%d audit records for one rebootstrap, want 1", after-before)
	}
	var seen strings.Builder
	for _, p := range []string{"/api/v1/audit", "/api/v1/events", "/api/v1/nodes/" + f.Node, "/api/v1/tasks/" + dep.ID} {
		code, b := f.do(t, "GET", p, f.Token[api.RoleAdmin], "", nil)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", p, code)
		}
		seen.Write(b)
	}
	if !strings.Contains(seen.String(), "rebootstrap by api:admin") {
		t.Error("no event names the rebootstrap")
	}
	if strings.Contains(seen.String(), tok) || strings.Contains(f.LogText(), tok) {
		t.Error("the node's new token is in the audit log, an event, the node's record or the API's log")
	}
}
