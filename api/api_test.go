package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// fixture is the served API with the request helpers the tests share.
type fixture struct{ *apitest.Server }

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return &fixture{apitest.Start(t, apitest.WithSeed(9))}
}

func (f *fixture) do(t testing.TB, method, path, token, ctype string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, f.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (f *fixture) json(t *testing.T, method, path, token string, in, out any) int {
	t.Helper()
	var body []byte
	if in != nil {
		body, _ = json.Marshal(in)
	}
	code, b := f.do(t, method, path, token, "application/json", body)
	if out != nil && code < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return code
}

var paramRE = regexp.MustCompile(`\{([a-zA-Z_]+)\}`)

type filledRoute struct {
	api.RouteInfo
	url string
}

// routes returns every route with its path parameters filled.
func (f *fixture) routes(task string) []filledRoute {
	var out []filledRoute
	for _, r := range f.API.Routes() {
		url := paramRE.ReplaceAllStringFunc(r.Path, func(s string) string {
			switch s {
			case "{rev}":
				return "current"
			case "{name}":
				if strings.HasPrefix(r.Path, "/api/v1/secrets") {
					return "bmc-admin"
				}
				return f.Node
			case "{id}":
				if strings.HasPrefix(r.Path, "/api/v1/tokens") {
					return "0badc0de" // an ID no token has
				}
				return task
			case "{verb}":
				return "retry"
			}
			return "x"
		})
		out = append(out, filledRoute{r, url})
	}
	return out
}

func body(method, path string) (string, []byte) {
	switch {
	case method == "POST" && strings.HasSuffix(path, "/designs"), strings.HasSuffix(path, "/designs/validate"):
		return "application/json", []byte(`[{"apiVersion":"slipway/v1","kind":"Network","metadata":{"name":"n1"},"spec":{"cidr":"10.99.0.0/24"}}]`)
	case method == "POST" && strings.HasSuffix(path, "/tasks"):
		return "application/json", []byte(`{"action":"verify_site"}`)
	case method == "PUT":
		return "application/json", []byte(`{"value":"s3cr3t-value-xyz"}`)
	case method == "POST" && strings.HasSuffix(path, "/tokens"):
		return "application/json", []byte(`{"role":"viewer","name":"t"}`)
	}
	return "", nil
}

// TestAuthorizationMatrix: every route × no token × each role.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var task record.Task
	if code := f.json(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], map[string]any{"action": "validate_design"}, &task); code != http.StatusCreated {
		t.Fatalf("create task: %d", code)
	}
	if _, err := f.Engine.Wait(t.Context(), task.ID); err != nil {
		t.Fatal(err)
	}
	roles := []struct {
		token string
		role  api.Role
	}{{"", ""}, {f.Token[api.RoleViewer], api.RoleViewer}, {f.Token[api.RoleOperator], api.RoleOperator}, {f.Token[api.RoleAdmin], api.RoleAdmin}, {"tok-bogus", ""}}
	for _, r := range f.routes(task.ID) {
		if strings.HasSuffix(r.url, "/events/stream") || strings.HasSuffix(r.url, "/console") || strings.HasSuffix(r.url, "/store/backup") {
			continue // a stream; covered by TestEventStream, TestConsole, TestStoreBackupRoute (the fixture's memory store has no backup)
		}
		for _, who := range roles {
			ctype, b := body(r.Method, r.url)
			code, resp := f.do(t, r.Method, r.url, who.token, ctype, b)
			var want string
			switch {
			case r.Role == "":
				want = "open"
			case who.role == "":
				want = "401"
			case !who.role.Allows(r.Role):
				want = "403"
			default:
				want = "allowed"
			}
			var ok bool
			switch want {
			case "401":
				ok = code == http.StatusUnauthorized
			case "403":
				ok = code == http.StatusForbidden
			default:
				ok = code != http.StatusUnauthorized && code != http.StatusForbidden && code < 500
			}
			if !ok {
				t.Errorf("%s %s as %q: %d (want %s): %s", r.Method, r.url, who.token, code, want, resp)
			}
		}
	}
}

// TestAuditEveryMutatingRoute: each mutating call, allowed or refused,
// leaves exactly one audit record naming who, what and the outcome.
func TestAuditEveryMutatingRoute(t *testing.T) {
	t.Parallel()
	// More refusals a minute than the default sampling records: one per
	// audited route here.
	f := &fixture{apitest.Start(t, apitest.WithSeed(9), apitest.WithConfig(func(c *api.Config) { c.AuditRefusalsPerAddress = 1000 }))}
	var task record.Task
	f.json(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], map[string]any{"action": "validate_design"}, &task)
	if _, err := f.Engine.Wait(t.Context(), task.ID); err != nil {
		t.Fatal(err)
	}
	for _, r := range f.routes(task.ID) {
		if strings.HasSuffix(r.url, "/events/stream") || strings.HasSuffix(r.url, "/console") {
			continue // streams: TestEventStream, TestConsole
		}
		before, _ := f.Store.LastSeq(t.Context(), "audit")
		for _, tok := range []string{f.Token[api.RoleAdmin], ""} {
			ctype, b := body(r.Method, r.url)
			f.do(t, r.Method, r.url, tok, ctype, b)
		}
		after, _ := f.Store.LastSeq(t.Context(), "audit")
		want := uint64(0)
		if r.Mutating || r.Audited {
			want = 2
		}
		if after-before != want {
			t.Errorf("%s %s: %d audit records for 2 calls, want %d", r.Method, r.url, after-before, want)
		}
	}
	var page api.AuditPage
	if code := f.json(t, "GET", "/api/v1/audit", f.Token[api.RoleAdmin], nil, &page); code != 200 || len(page.Items) == 0 {
		t.Fatalf("audit: %d, %d records", code, len(page.Items))
	}
	for _, r := range page.Items {
		if r.RequestID == "" || r.Method == "" || r.Remote == "" || r.Status == 0 || r.Outcome == "" {
			t.Errorf("incomplete audit record %+v", r)
		}
		if r.Outcome == "denied" && r.Status != 401 && r.Status != 403 {
			t.Errorf("denied with status %d", r.Status)
		}
	}
}

// TestOpenAPICoversEveryRoute: the document served at /openapi.json
// lists every route the router serves, and nothing else.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if code := f.json(t, "GET", "/openapi.json", "", nil, &doc); code != 200 {
		t.Fatalf("openapi.json: %d", code)
	}
	documented := map[string]bool{}
	for p, item := range doc.Paths {
		for m := range item {
			documented[strings.ToUpper(m)+" "+p] = true
		}
	}
	served := map[string]bool{}
	for _, r := range f.API.Served() {
		served[r] = true
		if !documented[r] {
			t.Errorf("the router serves %s; the document does not list it", r)
		}
	}
	for r := range documented {
		if !served[r] {
			t.Errorf("the document lists %s; the router does not serve it", r)
		}
	}
	if len(served) < 30 {
		t.Errorf("only %d routes served: %v", len(served), served)
	}
}

// TestSecretsNeverLeak: a stored secret's value is in no response and no
// log line.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const value = "hunter2-very-secret-value"
	if code := f.json(t, "PUT", "/api/v1/secrets/bmc-admin", f.Token[api.RoleAdmin], map[string]string{"value": value}, nil); code != 200 {
		t.Fatalf("put secret: %d", code)
	}
	var all []byte
	for _, p := range []string{"/api/v1/secrets", "/api/v1/audit", "/api/v1/events", "/metrics"} {
		_, b := f.do(t, "GET", p, f.Token[api.RoleAdmin], "", nil)
		all = append(all, b...)
	}
	if bytes.Contains(all, []byte(value)) {
		t.Errorf("the secret's value appears in a response")
	}
	logs := f.LogText()
	if strings.Contains(logs, value) {
		t.Errorf("the secret's value appears in the logs")
	}
	for role, tok := range f.Token {
		if strings.Contains(logs, tok) {
			t.Errorf("the %s token appears in the logs", role)
		}
	}
	var names []api.SecretInfo
	f.json(t, "GET", "/api/v1/secrets", f.Token[api.RoleAdmin], nil, &names)
	if !slices.ContainsFunc(names, func(n api.SecretInfo) bool { return n.Name == "bmc-admin" }) {
		t.Errorf("secret names: %+v", names)
	}
}

// TestTaskFlow: apply, a deploy task over the API, its results, events.
func TestTaskFlow(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, a := range []string{"prepare_site", "deploy_nodes"} {
		var task record.Task
		code := f.json(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], map[string]any{"action": a,
			"node_filter": map[string]any{"sets": []any{map[string]any{"names": []string{f.Node}}}}}, &task)
		if code != http.StatusCreated {
			t.Fatalf("POST /tasks %s: %d", a, code)
		}
		if _, err := f.Engine.Wait(t.Context(), task.ID); err != nil {
			t.Fatal(err)
		}
		var got api.TaskDetail
		f.json(t, "GET", "/api/v1/tasks/"+task.ID, f.Token[api.RoleViewer], nil, &got)
		if got.Status != record.TaskSucceeded {
			t.Fatalf("task %s: %s %s", a, got.Status, got.Message)
		}
		if !strings.HasPrefix(got.Requester, "api:operator") {
			t.Errorf("requester %q", got.Requester)
		}
	}
	var nodes api.Page[api.NodeSummary]
	f.json(t, "GET", "/api/v1/nodes?stage=deployed", f.Token[api.RoleViewer], nil, &nodes)
	if nodes.Total != 1 || nodes.Items[0].Name != f.Node || nodes.Items[0].MachineID == "" {
		t.Fatalf("deployed nodes: %+v", nodes)
	}
	var nd api.NodeDetail
	f.json(t, "GET", "/api/v1/nodes/"+f.Node, f.Token[api.RoleViewer], nil, &nd)
	if nd.Design == nil || nd.Record == nil || len(nd.Events) == 0 {
		t.Fatalf("node detail incomplete: %+v", nd)
	}
	// Invalid requests are problems, not 500s.
	for _, c := range []struct{ body string }{{`{"action":"nope"}`}, {`{"action":"deploy_nodes","node_filter":{"sets":[{"names":["ghost"]}]}}`}, {`{"bad":1}`}, {`[`}} {
		code, b := f.do(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], "application/json", []byte(c.body))
		if code < 400 || code >= 500 || !strings.Contains(string(b), `"detail"`) {
			t.Errorf("POST /tasks %s: %d %s", c.body, code, b)
		}
	}
}

// TestDesignUpload: a JSON list of documents with an error gives 422 with
// the findings; validate reports without storing.
func TestDesignUpload(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	bad := `[{"apiVersion":"slipway/v1","kind":"Network","metadata":{"name":"n1"},"spec":{"cidr":"10.99.0.1/24"}}]`
	code, b := f.do(t, "POST", "/api/v1/designs", f.Token[api.RoleOperator], "application/json", []byte(bad))
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(b), "documents.yaml") {
		t.Fatalf("invalid design: %d %s", code, b)
	}
	code, b = f.do(t, "POST", "/api/v1/designs/validate", f.Token[api.RoleViewer], "application/json", []byte(bad))
	if code != 200 || !strings.Contains(string(b), `"valid":false`) {
		t.Fatalf("validate: %d %s", code, b)
	}
	code, b = f.do(t, "POST", "/api/v1/designs", f.Token[api.RoleOperator], "text/plain", []byte("x"))
	if code != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain design: %d %s", code, b)
	}
}

// TestEventStream: the SSE stream sends stored events with their IDs.
func TestEventStream(t *testing.T) {
	f := newFixture(t)
	var task record.Task
	f.json(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], map[string]any{"action": "validate_design"}, &task)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.URL+"/api/v1/events/stream?task="+task.ID, nil)
	req.Header.Set("Authorization", "Bearer "+f.Token[api.RoleViewer])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	buf := make([]byte, 4096)
	var got strings.Builder
	for !strings.Contains(got.String(), "task succeeded") {
		n, err := resp.Body.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("stream ended before the task's end: %v\n%s", err, got.String())
		}
	}
	if !strings.Contains(got.String(), "id: ") || !strings.Contains(got.String(), "event: task") {
		t.Errorf("stream: %s", got.String())
	}
}

// FuzzRequestBodies: no body makes a mutating route answer 500.
func FuzzRequestBodies(f *testing.F) {
	for _, s := range []string{`{}`, `{"action":"deploy_nodes"}`, `[]`, `[{}]`, `{"value":""}`, `{"role":"admin"}`, "\x1f\x8b",
		`{"node_filter":{"type":"x"}}`, `null`, `{"action":"power_on","node_filter":{"sets":[{"labels":{"a":"b"}}]}}`, `[{"kind":"Node"}]`} {
		for i := range 8 {
			f.Add(uint8(i), s)
		}
	}
	fx := newFixture(f)
	var targets []filledRoute
	for _, r := range fx.routes("no-such-task") {
		if r.Mutating && r.Method != "DELETE" {
			targets = append(targets, r)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body string) {
		r := targets[int(which)%len(targets)]
		ctype := "application/json"
		if strings.HasPrefix(body, "\x1f\x8b") {
			ctype = "application/gzip"
		}
		code, b := fx.do(t, r.Method, r.url, fx.Token[api.RoleAdmin], ctype, []byte(body))
		if code >= 500 {
			t.Fatalf("%s %s with %q: %d %s", r.Method, r.url, body, code, b)
		}
	})
}
