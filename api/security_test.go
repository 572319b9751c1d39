package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/statestore"
)

// request sends a request with extra headers and returns the response
// (its body read) and the body.
func (f *fixture) request(t testing.TB, method, path, token string, hdr map[string]string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, f.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// auditAfter returns the raw audit records after seq.
func (f *fixture) auditAfter(t testing.TB, seq uint64) []statestore.LogEntry {
	t.Helper()
	es, err := f.Store.ReadLog(t.Context(), "audit", seq, 0)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func (f *fixture) lastAudit(t testing.TB) uint64 {
	t.Helper()
	n, err := f.Store.LastSeq(t.Context(), "audit")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// metric sums the samples of a metric in the /metrics answer.
func (f *fixture) metric(t *testing.T, name string) float64 {
	t.Helper()
	_, b := f.do(t, "GET", "/metrics", "", "", nil)
	sum := 0.0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// F2: a flood of unauthenticated mutating calls with huge request IDs
// and paths grows the audit log by a bounded number of bounded records;
// every answer carries a request ID of the server's, never the client's.
func TestUnauthenticatedFloodIsBounded(t *testing.T) {
	// Not parallel: its refusals must land in one minute (the sampler's
	// window); beside other tests on a loaded machine they took longer.
	f := newFixture(t)
	before := f.lastAudit(t)
	huge := strings.Repeat("A", 256<<10)
	const calls = 60
	ids := map[string]bool{}
	for i := range calls {
		path := "/api/v1/tasks"
		if i%2 == 1 {
			path = "/api/v1/tasks/" + strings.Repeat("x", 64<<10) + "/retry"
		}
		resp, b := f.request(t, "POST", path, "", map[string]string{"X-Request-Id": huge}, strings.NewReader(`{"action":"verify_site"}`))
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("call %d: %d %.200s", i, resp.StatusCode, b)
		}
		id := resp.Header.Get("X-Request-Id")
		var p api.Problem
		_ = json.Unmarshal(b, &p)
		if id == "" || len(id) > 64 || id == huge || p.RequestID != id {
			t.Fatalf("call %d: request ID %.80q (problem's %.80q): want one of the server's", i, id, p.RequestID)
		}
		ids[id] = true
	}
	if len(ids) != calls {
		t.Errorf("%d distinct request IDs for %d calls", len(ids), calls)
	}
	es := f.auditAfter(t, before)
	size := 0
	for _, e := range es {
		size += len(e.Value)
		if len(e.Value) > api.MaxAuditRecordBytes {
			t.Errorf("audit record %d is %d bytes (max %d)", e.Seq, len(e.Value), api.MaxAuditRecordBytes)
		}
		if bytes.Contains(e.Value, []byte("AAAAAAAA")) {
			t.Errorf("audit record %d holds the client's request ID", e.Seq)
		}
	}
	if len(es) > api.DefaultAuditRefusalsPerAddress || size > 32<<10 {
		t.Errorf("%d unauthenticated calls left %d audit records of %d bytes: want at most %d records", calls, len(es), size, api.DefaultAuditRefusalsPerAddress)
	}
	if n := f.metric(t, "slipway_http_unauthenticated_total"); n < calls {
		t.Errorf("slipway_http_unauthenticated_total %v, want ≥ %d", n, calls)
	}
	if n := f.metric(t, "slipway_audit_refusals_dropped_total"); int(n) != calls-len(es) {
		t.Errorf("slipway_audit_refusals_dropped_total %v, want %d", n, calls-len(es))
	}
}

// F2: a short client request ID of a safe charset is kept beside the
// server's in the audit record and the log line, never echoed; others are
// dropped.
func TestClientRequestID(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, c := range []struct{ sent, kept string }{
		{"ci-run-42.7:a_b", "ci-run-42.7:a_b"}, {strings.Repeat("a", 65), ""}, {"has space", ""}, {`x"y`, ""}, {"", ""},
	} {
		before := f.lastAudit(t)
		resp, _ := f.request(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], map[string]string{"X-Request-Id": c.sent}, strings.NewReader(`{"action":"nope"}`))
		id := resp.Header.Get("X-Request-Id")
		if resp.StatusCode != http.StatusBadRequest || id == "" || (c.sent != "" && strings.Contains(id, c.sent)) {
			t.Fatalf("sent %q: %d, request ID %q", c.sent, resp.StatusCode, id)
		}
		es := f.auditAfter(t, before)
		if len(es) != 1 {
			t.Fatalf("sent %q: %d audit records", c.sent, len(es))
		}
		var rec map[string]any
		_ = json.Unmarshal(es[0].Value, &rec)
		got, _ := rec["client_request_id"].(string)
		if rec["request_id"] != id || got != c.kept {
			t.Errorf("sent %q: audit record %s: want request_id %q, client_request_id %q", c.sent, es[0].Value, id, c.kept)
		}
		logged := strings.Contains(f.LogText(), `"client_request_id":"`+c.sent+`"`)
		if c.kept != "" && !logged || c.kept == "" && c.sent != "" && strings.Contains(f.LogText(), c.sent) {
			t.Errorf("sent %q: logged %v", c.sent, logged)
		}
	}
}

// F2: every field of an audit record is bounded, whatever the path or the
// error's detail holds.
func TestAuditRecordsAreBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	before := f.lastAudit(t)
	op := f.Token[api.RoleOperator]
	name := strings.Repeat(`<&"\`, 8000)
	if resp, b := f.request(t, "POST", "/api/v1/nodes/"+url.PathEscape(name)+"/adopt", op, nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("adopt of a long name: %d %.200s", resp.StatusCode, b)
	}
	field := strings.Repeat("<", 100<<10)
	if resp, b := f.request(t, "POST", "/api/v1/tasks", op, nil, strings.NewReader(`{"`+field+`":1}`)); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("an unknown long field: %d %.200s", resp.StatusCode, b)
	}
	es := f.auditAfter(t, before)
	if len(es) != 2 {
		t.Fatalf("%d audit records, want 2", len(es))
	}
	for _, e := range es {
		if len(e.Value) > api.MaxAuditRecordBytes || !json.Valid(e.Value) {
			t.Errorf("audit record %d: %d bytes (max %d): %.300s", e.Seq, len(e.Value), api.MaxAuditRecordBytes, e.Value)
		}
	}
}

// F2: GET /audit pages by records and by bytes, with a cursor to the next
// page; a record stored before the bounds existed is bounded when read.
func TestAuditPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	start := f.lastAudit(t)
	// Records at their bounds (about 1.3 KiB each), so that a page of
	// 1,000 is over 1 MiB.
	f64 := strings.Repeat("f", 64)
	rec := map[string]any{"time": time.Now().UTC(), "request_id": f64, "client_request_id": f64, "method": "POST", "route": "/api/v1/tasks",
		"who": map[string]string{"id": f64, "name": f64, "role": "admin"}, "remote": f64,
		"path": "/api/v1/tasks/" + strings.Repeat("p", 300), "status": 401, "outcome": "denied", "detail": strings.Repeat("d", 600)}
	raw, _ := json.Marshal(rec)
	rec["request_id"] = strings.Repeat("L", 1<<20) // as stored before the bound
	legacy, _ := json.Marshal(rec)
	const n = 2000
	for i := 0; i < n; i += 100 {
		var ops []statestore.Op
		for j := range 100 {
			v := raw
			if i+j == 500 {
				v = legacy
			}
			ops = append(ops, statestore.Append("audit", v))
		}
		if _, err := f.Store.Write(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	type page struct {
		Items []api.AuditRecord `json:"items"`
		Next  uint64            `json:"next"`
		More  bool              `json:"more"`
	}
	var got []uint64
	since, pages := start, 0
	for {
		code, b := f.do(t, "GET", fmt.Sprintf("/api/v1/audit?since=%d", since), f.Token[api.RoleAdmin], "", nil)
		var p page
		if err := json.Unmarshal(b, &p); code != 200 || err != nil {
			t.Fatalf("GET /audit?since=%d: %d %v: %.200s", since, code, err, b)
		}
		pages++
		if pages == 1 && (len(p.Items) >= api.MaxAuditPageRecords || !p.More) {
			t.Errorf("first page: %d records of %d bytes, more %v: want it cut by its size", len(p.Items), len(b), p.More)
		}
		if len(b) > api.MaxAuditPageBytes || len(p.Items) > api.MaxAuditPageRecords || len(p.Items) == 0 && p.More {
			t.Fatalf("page %d: %d bytes, %d records, more %v", pages, len(b), len(p.Items), p.More)
		}
		for _, r := range p.Items {
			got = append(got, r.Seq)
			if len(r.RequestID) > 64 {
				t.Errorf("record %d: request ID of %d bytes", r.Seq, len(r.RequestID))
			}
		}
		if len(p.Items) > 0 && p.Next != p.Items[len(p.Items)-1].Seq {
			t.Fatalf("page %d: next %d, last record %d", pages, p.Next, p.Items[len(p.Items)-1].Seq)
		}
		if !p.More {
			break
		}
		since = p.Next
	}
	// The admin's GETs are not audited: the log holds the n records and
	// whatever the fixture wrote before.
	if len(got) != n || pages < 3 {
		t.Fatalf("%d records in %d pages, want %d in 3 or more (1 MiB a page)", len(got), pages, n)
	}
	for i, s := range got {
		if s != start+uint64(i)+1 {
			t.Fatalf("record %d has seq %d, want %d: a page skipped or repeated records", i, s, start+uint64(i)+1)
		}
	}
	var p page
	if code := f.json(t, "GET", fmt.Sprintf("/api/v1/audit?since=%d&limit=5", start), f.Token[api.RoleAdmin], nil, &p); code != 200 || len(p.Items) != 5 || !p.More || p.Next != start+5 {
		t.Fatalf("limit=5: %d, %d records, more %v, next %d", code, len(p.Items), p.More, p.Next)
	}
}

// F7: a mutating call refused for its body's size is audited, once.
func TestOversizeBodyIsAudited(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	big := bytes.Repeat([]byte(" "), 2<<20)
	for _, c := range []struct {
		method, path string
		chunked      bool
	}{{"POST", "/api/v1/tasks", false}, {"POST", "/api/v1/tasks", true}, {"PUT", "/api/v1/secrets/x", false}, {"POST", "/api/v1/tokens", false}} {
		before := f.lastAudit(t)
		var body io.Reader = bytes.NewReader(big)
		if c.chunked {
			body = io.MultiReader(bytes.NewReader(big)) // no length: sent chunked
		}
		resp, b := f.request(t, c.method, c.path, f.Token[api.RoleAdmin], nil, body)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s %s (chunked %v): %d %.200s", c.method, c.path, c.chunked, resp.StatusCode, b)
		}
		es := f.auditAfter(t, before)
		if len(es) != 1 {
			t.Errorf("%s %s (chunked %v): %d audit records, want 1", c.method, c.path, c.chunked, len(es))
			continue
		}
		var r api.AuditRecord
		_ = json.Unmarshal(es[0].Value, &r)
		if r.Status != http.StatusRequestEntityTooLarge || r.Outcome != "failed" || r.Who.Role != api.RoleAdmin {
			t.Errorf("%s %s: audit record %+v", c.method, c.path, r)
		}
	}
	// Without a token the body is not read: 401, not 413.
	if resp, b := f.request(t, "POST", "/api/v1/tasks", "", nil, bytes.NewReader(big)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an oversize POST without a token: %d %.200s", resp.StatusCode, b)
	}
}

// F8: a bad token name is the caller's mistake: 400 with a problem detail.
func TestTokenNameRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, name := range []string{strings.Repeat("n", 65), "bad\x01name", "line\nbreak", "tab\there"} {
		body, _ := json.Marshal(map[string]string{"role": "viewer", "name": name})
		code, b := f.do(t, "POST", "/api/v1/tokens", f.Token[api.RoleAdmin], "application/json", body)
		var p api.Problem
		if err := json.Unmarshal(b, &p); code != http.StatusBadRequest || err != nil || !strings.Contains(p.Detail, "name") {
			t.Errorf("name %q: %d %s", name, code, b)
		}
	}
	body, _ := json.Marshal(map[string]string{"role": "viewer", "name": strings.Repeat("n", 64)})
	if code, b := f.do(t, "POST", "/api/v1/tokens", f.Token[api.RoleAdmin], "application/json", body); code != http.StatusCreated {
		t.Errorf("a 64-byte name: %d %s", code, b)
	}
}

// F9: the manual-intervention verbs refuse a node that is not in the
// current design, and leave no record of it.
func TestManualVerbsUnknownNode(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	op := f.Token[api.RoleOperator]
	for _, verb := range []string{"mark-manual-intervention", "release-manual"} {
		code, b := f.do(t, "POST", "/api/v1/nodes/ghost-node/"+verb, op, "application/json", []byte(`{"reason":"x"}`))
		if code != http.StatusNotFound || !strings.Contains(string(b), "ghost-node") {
			t.Errorf("%s of a node not in the design: %d %s", verb, code, b)
		}
	}
	if _, err := f.Engine.Node(t.Context(), "ghost-node"); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Errorf("a record of the unknown node: %v", err)
	}
	for _, verb := range []string{"mark-manual-intervention", "release-manual"} {
		if code, b := f.do(t, "POST", "/api/v1/nodes/"+f.Node+"/"+verb, op, "", nil); code != http.StatusOK {
			t.Errorf("%s of %s: %d %s", verb, f.Node, code, b)
		}
	}
}

// F11: a task's node filter is bounded, and names a node the design does
// not have for no action.
func TestTaskFilterBounds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	op := f.Token[api.RoleOperator]
	names := func(n int, prefix string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%d", prefix, i)
		}
		return out
	}
	set := func(k string, v any) map[string]any { return map[string]any{k: v} }
	sets := func(ss ...map[string]any) map[string]any { return map[string]any{"sets": ss} }
	many := make([]map[string]any, 17)
	for i := range many {
		many[i] = set("names", []string{f.Node})
	}
	ghosts := append(names(15, "ghost"), f.Node)
	long := strings.Repeat("x", 254)
	cases := []struct {
		what   string
		body   map[string]any
		code   int
		detail []string
		not    []string
	}{
		{"17 sets", map[string]any{"action": "deploy_nodes", "node_filter": sets(many...)}, 400, []string{"17 sets"}, nil},
		{"10,001 names", map[string]any{"action": "deploy_nodes", "node_filter": sets(set("names", names(10001, "n")))}, 400, []string{"10001 names"}, nil},
		{"a long name", map[string]any{"action": "deploy_nodes", "node_filter": sets(set("names", []string{long}))}, 400, []string{"254 bytes"}, nil},
		{"a long label key", map[string]any{"action": "deploy_nodes", "node_filter": sets(set("labels", map[string]string{long: "v"}))}, 400, []string{"254 bytes"}, nil},
		{"a long label value", map[string]any{"action": "deploy_nodes", "node_filter": sets(set("labels", map[string]string{"k": long}))}, 400, []string{"254 bytes"}, nil},
		{"a long tag", map[string]any{"action": "deploy_nodes", "node_filter": sets(set("tags", []string{long}))}, 400, []string{"254 bytes"}, nil},
		{"65 tags", map[string]any{"action": "deploy_nodes", "node_filter": sets(set("tags", names(65, "t")))}, 400, []string{"65 tags"}, nil},
		{"65 racks", map[string]any{"action": "deploy_nodes", "node_filter": sets(set("racks", names(65, "r")))}, 400, []string{"65 racks"}, nil},
		{"unknown names", map[string]any{"action": "deploy_nodes", "node_filter": sets(set("names", ghosts))}, 422,
			[]string{"15 nodes", "ghost0", "ghost9", "5 more"}, []string{"ghost14", f.Node + ","}},
		{"unknown names, site action", map[string]any{"action": "prepare_site", "node_filter": sets(set("names", []string{"ghost"}))}, 422, []string{"ghost"}, nil},
		{"unknown names, intersection", map[string]any{"action": "verify_site", "node_filter": map[string]any{"type": "intersection",
			"sets": []any{set("racks", []string{"r01"}), set("names", []string{"ghost"})}}}, 422, []string{"ghost"}, nil},
	}
	for _, c := range cases {
		body, _ := json.Marshal(c.body)
		code, b := f.do(t, "POST", "/api/v1/tasks", op, "application/json", body)
		if code != c.code {
			t.Errorf("%s: %d %.300s, want %d", c.what, code, b, c.code)
			continue
		}
		var p api.Problem
		_ = json.Unmarshal(b, &p)
		for _, s := range c.detail {
			if !strings.Contains(p.Detail, s) {
				t.Errorf("%s: detail %q lacks %q", c.what, p.Detail, s)
			}
		}
		for _, s := range c.not {
			if strings.Contains(p.Detail, s) {
				t.Errorf("%s: detail %q has %q", c.what, p.Detail, s)
			}
		}
	}
	body := []byte(`{"action":"deploy_nodes","design_revision":"` + strings.Repeat("a", 600<<10) + `"}`)
	if code, b := f.do(t, "POST", "/api/v1/tasks", op, "application/json", body); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a 600 KiB task body: %d %.200s", code, b)
	}
	ts, _ := f.Engine.Tasks(t.Context())
	if len(ts) != 0 {
		t.Errorf("%d tasks stored from refused requests", len(ts))
	}
}

// F12: the last admin token can't be revoked.
func TestLastAdminToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var toks []api.Principal
	f.json(t, "GET", "/api/v1/tokens", f.Token[api.RoleAdmin], nil, &toks)
	first := ""
	for _, p := range toks {
		if p.Role == api.RoleAdmin {
			first = p.ID
		}
	}
	code, b := f.do(t, "DELETE", "/api/v1/tokens/"+first, f.Token[api.RoleAdmin], "", nil)
	var p api.Problem
	_ = json.Unmarshal(b, &p)
	if code != http.StatusConflict || !strings.Contains(p.Detail, "create another admin token first") {
		t.Fatalf("revoke of the last admin token: %d %s", code, b)
	}
	var second struct {
		api.Principal
		Token string `json:"token"`
	}
	if code := f.json(t, "POST", "/api/v1/tokens", f.Token[api.RoleAdmin], map[string]string{"role": "admin", "name": "second"}, &second); code != http.StatusCreated {
		t.Fatalf("create a second admin: %d", code)
	}
	if code, b := f.do(t, "DELETE", "/api/v1/tokens/"+first, second.Token, "", nil); code != http.StatusNoContent {
		t.Fatalf("revoke of an admin token with another left: %d %s", code, b)
	}
	if code, b := f.do(t, "DELETE", "/api/v1/tokens/"+second.ID, second.Token, "", nil); code != http.StatusConflict {
		t.Fatalf("revoke of the now last admin token: %d %s", code, b)
	}
}

// A token given where its ID belongs (DELETE /tokens/{token}) is refused
// without being written to the audit log or repeated in the answer.
func TestRevokeGivenATokenKeepsItOutOfTheAudit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var tok struct {
		api.Principal
		Token string `json:"token"`
	}
	if code := f.json(t, "POST", "/api/v1/tokens", f.Token[api.RoleAdmin], map[string]string{"role": "viewer", "name": "pasted"}, &tok); code != http.StatusCreated {
		t.Fatalf("create token: %d", code)
	}
	code, b := f.do(t, "DELETE", "/api/v1/tokens/"+tok.Token, f.Token[api.RoleAdmin], "", nil)
	if code != http.StatusNotFound || strings.Contains(string(b), tok.Token) {
		t.Fatalf("revoke given the token itself: %d %s", code, b)
	}
	_, audit := f.do(t, "GET", "/api/v1/audit", f.Token[api.RoleAdmin], "", nil)
	if !strings.Contains(string(audit), "token.revoke") || strings.Contains(string(audit), tok.Token) {
		t.Fatalf("the audit log holds the token given as an ID (or no revoke record): %s", audit)
	}
}

// F14: the apply history's keys are camelCase, like the rest of the API.
func TestDesignListKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	code, b := f.do(t, "GET", "/api/v1/designs", f.Token[api.RoleViewer], "", nil)
	var hist []map[string]any
	if err := json.Unmarshal(b, &hist); code != 200 || err != nil || len(hist) == 0 {
		t.Fatalf("GET /designs: %d %v %s", code, err, b)
	}
	for _, k := range []string{"id", "created", "applied", "roots", "counts", "seq"} {
		if _, ok := hist[0][k]; !ok {
			t.Errorf("GET /designs: no %q in %s", k, b)
		}
	}
	for k := range hist[0] {
		if k != strings.ToLower(k[:1])+k[1:] {
			t.Errorf("GET /designs has the PascalCase key %q", k)
		}
	}
}

// F5: a stream ends soon after its token is revoked, and at its maximum
// lifetime.
func TestStreamEndsWhenTokenRevoked(t *testing.T) {
	f := &fixture{apitest.Start(t, apitest.WithSeed(9), apitest.WithConfig(func(c *api.Config) {
		c.StreamRecheck = 50 * time.Millisecond
	}))}
	var tok struct {
		api.Principal
		Token string `json:"token"`
	}
	if code := f.json(t, "POST", "/api/v1/tokens", f.Token[api.RoleAdmin], map[string]string{"role": "viewer", "name": "watcher"}, &tok); code != 201 {
		t.Fatalf("create token: %d", code)
	}
	ended := openStream(t, f, tok.Token)
	if code, b := f.do(t, "DELETE", "/api/v1/tokens/"+tok.ID, f.Token[api.RoleAdmin], "", nil); code != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", code, b)
	}
	revoked := time.Now()
	select {
	case <-ended:
		t.Logf("the stream ended %v after the revoke", time.Since(revoked))
	case <-time.After(3 * time.Second):
		t.Fatal("the stream of a revoked token still runs 3 s after the revoke")
	}
	if code, _ := f.do(t, "GET", "/api/v1/events/stream", tok.Token, "", nil); code != http.StatusUnauthorized {
		t.Errorf("a new stream with the revoked token: %d", code)
	}
}

func TestStreamMaxLifetime(t *testing.T) {
	f := &fixture{apitest.Start(t, apitest.WithSeed(9), apitest.WithConfig(func(c *api.Config) {
		c.StreamMaxLifetime = 300 * time.Millisecond
	}))}
	start := time.Now()
	ended := openStream(t, f, f.Token[api.RoleViewer])
	select {
	case <-ended:
		if d := time.Since(start); d < 300*time.Millisecond {
			t.Errorf("the stream ended after %v, before its lifetime", d)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the stream still runs 3 s into a lifetime of 300 ms")
	}
}

// openStream opens the event stream, waits for its first bytes and
// returns a channel closed when the server ends it.
func openStream(t *testing.T, f *fixture, token string) <-chan struct{} {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", f.URL+"/api/v1/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", resp, err)
	}
	buf := make([]byte, 1)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() {
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		close(ended)
	}()
	return ended
}
