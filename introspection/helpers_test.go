package introspection

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/httpx"
	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// testKey is the token key of the tests.
var testKey = bytes.Repeat([]byte{0x5a}, KeyLen)

const testURL = "http://10.11.0.1:8701"

// testSecret resolves the example's secrets.
func testSecret(_ context.Context, name string) (string, error) {
	if name == "kubeadm-join-token" {
		return "abcdef.0123456789abcdef", nil
	}
	return "", fmt.Errorf("secret %q is not set", name)
}

// env is a server over the example design, stored as a revision.
type env struct {
	t    testing.TB
	st   *memory.Store
	d    *design.Design
	rev  string
	srv  *Server
	logs *testtool.SyncBuffer
}

// inventory stores what commissioning found on a node's machine, as the
// engine does.
func (e *env) inventory(node string, inv drivers.Inventory) {
	e.t.Helper()
	op, err := orchestrator.InventoryOp(node, inv)
	if err == nil {
		_, err = e.st.Write(context.Background(), op)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

func newEnv(t testing.TB, tune ...func(*Config)) *env {
	t.Helper()
	e := &env{t: t, st: memory.New(), logs: &testtool.SyncBuffer{}}
	e.d = designtest.Example(t)
	e.rev = e.store(e.d)
	cfg := Config{Store: e.st, URL: testURL, Key: testKey, Secret: testSecret,
		Log: zerolog.New(e.logs).Level(zerolog.DebugLevel)}
	for _, f := range tune {
		f(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	return e
}

// store applies d as a revision and returns its ID.
func (e *env) store(d *design.Design) string {
	e.t.Helper()
	raw, id, err := d.Canonical()
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.st.PutRevision(context.Background(), statestore.Revision{ID: id, Design: raw, Counts: d.Counts()}); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// issue runs UserData for the node and deployment and returns the token.
func (e *env) issue(node, deployment string) string {
	e.t.Helper()
	return e.issueWith(e.d, node, deployment)
}

func (e *env) issueWith(d *design.Design, node, deployment string) string {
	e.t.Helper()
	ud, err := e.srv.UserData(context.Background(), d, node, deployment)
	if err != nil {
		e.t.Fatal(err)
	}
	tok := e.srv.Token(node, deployment)
	if !bytes.Contains(ud, []byte(tok)) {
		e.t.Fatalf("user data of %s does not carry its token", node)
	}
	return tok
}

// resp is a recorded answer.
type resp struct {
	code int
	hdr  http.Header
	body []byte
}

func (r resp) problem(t testing.TB) httpx.Problem {
	t.Helper()
	var p httpx.Problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("status %d, body %q: not problem details: %v", r.code, r.body, err)
	}
	return p
}

// do sends a request to the handler. tok "" sends no Authorization header.
func (e *env) do(method, path, tok string, body []byte, hdr ...string) resp {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	req.RemoteAddr = "127.0.0.1:40000"
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	return resp{code: rec.Code, hdr: rec.Header(), body: rec.Body.Bytes()}
}

// self fetches /v1/self.
func (e *env) self(tok string) Self {
	e.t.Helper()
	r := e.do("GET", "/v1/self", tok, nil)
	if r.code != 200 {
		e.t.Fatalf("GET /v1/self: %d %s", r.code, r.body)
	}
	var s Self
	if err := json.Unmarshal(r.body, &s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

// report posts a boot action report.
func (e *env) report(tok, action, status, msg string) resp {
	e.t.Helper()
	b, _ := json.Marshal(ReportRequest{Status: status, Message: msg})
	return e.do("POST", "/v1/self/actions/"+action, tok, b)
}

// signalling returns the signalling boot actions that target node.
func signalling(d *design.Design, node string) []string {
	var out []string
	for _, a := range d.BootActionsFor(d.Nodes[node]) {
		if d.BootActions[a].Spec.Signaling {
			out = append(out, a)
		}
	}
	return out
}

// notTargeting returns a boot action that does not target node ("" if all do).
func notTargeting(d *design.Design, node string) string {
	for name, a := range d.BootActions {
		if !a.Spec.NodeFilter.Matches(d.Nodes[node]) {
			return name
		}
	}
	return ""
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
