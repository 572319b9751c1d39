package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// wantAction is the audit action of each mutating route of the table; a
// route missing here (a new one) must still name an action.
var wantAction = map[string]string{
	"POST /api/v1/designs":                               "design.apply",
	"POST /api/v1/nodes/{name}/adopt":                    "node.adopt",
	"POST /api/v1/nodes/{name}/mark-manual-intervention": "node.mark-manual-intervention",
	"POST /api/v1/nodes/{name}/release-manual":           "node.release-manual",
	"POST /api/v1/nodes/{name}/rebootstrap":              "node.rebootstrap",
	"POST /api/v1/nodes/{name}/console/input":            "node.console.input",
	"POST /api/v1/tasks":                                 "task.create",
	"POST /api/v1/tasks/{id}/{verb}":                     "task.retry",
	"PUT /api/v1/secrets/{name}":                         "secret.put",
	"DELETE /api/v1/secrets/{name}":                      "secret.delete",
	"POST /api/v1/tokens":                                "token.create",
	"DELETE /api/v1/tokens/{id}":                         "token.revoke",
}

// TestAuditNamesWhatWasDone: each mutating route's audit record names its
// action and what it acted on (targets or the task), never a secret's
// value; a task's record carries the request ID its events correlate to.
func TestAuditNamesWhatWasDone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var task record.Task
	f.json(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], map[string]any{"action": "validate_design"}, &task)
	if _, err := f.Engine.Wait(t.Context(), task.ID); err != nil {
		t.Fatal(err)
	}
	mutating := 0
	for _, r := range f.routes(task.ID) {
		if !r.Mutating {
			continue
		}
		mutating++
		key := r.Method + " " + r.Path
		before, _ := f.Store.LastSeq(t.Context(), "audit")
		ctype, b := body(r.Method, r.url)
		code, _ := f.do(t, r.Method, r.url, f.Token[api.RoleAdmin], ctype, b)
		recs, err := f.Store.ReadLog(t.Context(), "audit", before, 10)
		if err != nil || len(recs) != 1 {
			t.Fatalf("%s: %d audit records, %v", key, len(recs), err)
		}
		if strings.Contains(string(recs[0].Value), "s3cr3t-value-xyz") {
			t.Errorf("%s: the audit record holds the secret's value: %s", key, recs[0].Value)
		}
		var rec api.AuditRecord
		if err := json.Unmarshal(recs[0].Value, &rec); err != nil {
			t.Fatal(err)
		}
		want, known := wantAction[key]
		switch {
		case known && rec.Action != want:
			t.Errorf("%s (%d): action %q, want %q", key, code, rec.Action, want)
		case rec.Action == "":
			t.Errorf("%s (%d): the audit record names no action: %s", key, code, recs[0].Value)
		}
		// A design refused for its findings has no revision to name.
		refusedDesign := key == "POST /api/v1/designs" && code == http.StatusUnprocessableEntity
		if len(rec.Targets) == 0 && rec.Task == "" && !refusedDesign {
			t.Errorf("%s (%d): the audit record names no target and no task: %s", key, code, recs[0].Value)
		}
		if rec.TargetCount < len(rec.Targets) {
			t.Errorf("%s: targetCount %d for %d targets", key, rec.TargetCount, len(rec.Targets))
		}
		// What the route's parameters name is among the targets.
		for _, p := range []string{"{name}", "{id}"} {
			if !strings.Contains(r.Path, p) || strings.HasPrefix(r.Path, "/api/v1/tasks/") {
				continue
			}
			seg := strings.Split(r.url, "/")
			idx := slices.Index(strings.Split(r.Path, "/"), p)
			if idx >= 0 && !slices.Contains(rec.Targets, seg[idx]) {
				t.Errorf("%s: targets %v do not name %q", key, rec.Targets, seg[idx])
			}
		}
		if strings.HasPrefix(r.Path, "/api/v1/tasks/") && rec.Task != task.ID {
			t.Errorf("%s: task %q, want %s", key, rec.Task, task.ID)
		}
	}
	if mutating < len(wantAction) {
		t.Errorf("%d mutating routes, want at least %d", mutating, len(wantAction))
	}

	// A node task: its record names the action, the task, its nodes (the
	// first 8 and their count), and its request ID is the task's
	// correlation ID.
	code, raw := f.do(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], "application/json", []byte(`{"action":"verify_nodes"}`))
	if code != http.StatusCreated {
		t.Fatalf("verify_nodes: %d %s", code, raw)
	}
	var vt record.Task
	if err := json.Unmarshal(raw, &vt); err != nil {
		t.Fatal(err)
	}
	var page api.AuditPage
	f.json(t, "GET", "/api/v1/audit", f.Token[api.RoleAdmin], nil, &page)
	i := slices.IndexFunc(page.Items, func(r api.AuditRecord) bool { return r.Task == vt.ID && r.Action == "task.create" })
	if i < 0 {
		t.Fatalf("no audit record for task %s", vt.ID)
	}
	rec := page.Items[i]
	if rec.Verb != "verify_nodes" || rec.TargetCount != len(vt.Nodes) || len(rec.Targets) != min(8, len(vt.Nodes)) || rec.Targets[0] != vt.Nodes[0] {
		t.Errorf("task record: verb %q, targets %v (%d), want verify_nodes and %d nodes", rec.Verb, rec.Targets, rec.TargetCount, len(vt.Nodes))
	}
	if vt.Correlation == "" || vt.Correlation != rec.RequestID {
		t.Errorf("task correlation %q, its audit record's request ID %q", vt.Correlation, rec.RequestID)
	}
	if _, err := f.Engine.Wait(t.Context(), vt.ID); err != nil {
		t.Fatal(err)
	}
}
