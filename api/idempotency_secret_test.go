package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// keyed sends a call with an Idempotency-Key and answers its status, the
// Idempotency-Replayed header and the body.
func (f *fixture) keyed(t *testing.T, method, path, token, key, body string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, f.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(api.IdempotencyHeader, key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get(api.ReplayedHeader), b
}

// storeHolds reports each record of the state store (every collection the
// idempotency middleware writes) whose bytes hold s.
func (f *fixture) storeHolds(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	for _, coll := range []string{"idempotency", "idempotency-expiry"} {
		recs, err := f.Store.List(t.Context(), coll, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if strings.Contains(r.Key, s) || bytes.Contains(r.Value, []byte(s)) {
				out = append(out, coll+"/"+r.Key)
			}
		}
	}
	return out
}

// TestRebootstrapAnswerNotKept (issue 33 re-audit): the answer of POST
// /nodes/{name}/rebootstrap holds the node's new introspection token; a
// retry with the same Idempotency-Key is told the call was made (409),
// never given the token again, and no idempotency record holds it.
func TestRebootstrapAnswerNotKept(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
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
	}
	url, admin := "/api/v1/nodes/"+f.Node+"/rebootstrap", f.Token[api.RoleAdmin]
	code, _, b := f.keyed(t, "POST", url, admin, "audit-rb-1", "")
	var out record.Rebootstrapped
	if code != http.StatusOK || json.Unmarshal(b, &out) != nil {
		t.Fatalf("rebootstrap: %d %s", code, b)
	}
	_, tok, _ := strings.Cut(out.Env, "SLIPWAY_TOKEN='")
	tok, _, _ = strings.Cut(tok, "'")
	if !strings.HasPrefix(tok, "sni_") {
		t.Fatalf("no node token in the answer's env %q", out.Env)
	}
	if held := f.storeHolds(t, tok); len(held) > 0 {
		t.Errorf("the node's token is kept in the state store: %v", held)
	}
	code, replayed, b2 := f.keyed(t, "POST", url, admin, "audit-rb-1", "")
	if code != http.StatusConflict || replayed != "" || bytes.Contains(b2, []byte("sni_")) {
		t.Errorf("the rebootstrap again with its key: %d (replayed %q) %.300s, want 409 without a token", code, replayed, b2)
	}
}
