package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/server"
	"github.com/slipway-dev/slipway/sim/lab"
)

// TestServe runs `serve` against the lab's MAAS: the first admin token is
// written 0600, the API answers with it (and refuses without), a task runs
// through the API, a secret is stored encrypted and only its name returns.
func TestServe(t *testing.T) {
	t.Parallel()
	lb, err := lab.Start(t.Context(), lab.Config{Design: designtest.Example(t), TimeScale: 0.001, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	info := lb.Info()
	dir, state, cfg := serveLabState(t, info)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"serve", "--config", cfg, "--state", state, "--listen", addr, "--introspection-listen", "127.0.0.1:0", "--plugin-dir", dir}, &bytes.Buffer{}, &stderr)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exit %d: %s", code, stderr.String())
		}
	}()
	tokFile := filepath.Join(dir, "state", "admin.token")
	var tok string
	for i := 0; i < 100; i++ {
		if b, err := os.ReadFile(tokFile); err == nil && len(b) > 0 {
			tok = strings.TrimSpace(string(b))
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if tok == "" {
		t.Fatalf("no admin token file: %s", stderr.String())
	}
	if st, _ := os.Stat(tokFile); st.Mode().Perm() != 0o600 {
		t.Errorf("admin token file mode %v", st.Mode().Perm())
	}
	base := "http://" + addr
	call := func(method, path, token, body string) (int, string) {
		t.Helper()
		var resp *http.Response
		for i := 0; i < 50; i++ {
			req, _ := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			req.Header.Set("Content-Type", "application/json")
			if resp, err = http.DefaultClient.Do(req); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		if _, err := b.ReadFrom(resp.Body); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b.String()
	}
	if code, _ := call("GET", "/healthz", "", ""); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
	if code, b := call("GET", "/readyz", "", ""); code != 200 {
		t.Fatalf("readyz: %d %s", code, b)
	}
	if code, _ := call("GET", "/api/v1/tasks", "", ""); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	code, b := call("POST", "/api/v1/tasks", tok, `{"action":"prepare_site"}`)
	if code != 201 {
		t.Fatalf("POST /tasks: %d %s", code, b)
	}
	var task struct{ ID, Status string }
	if err := json.Unmarshal([]byte(b), &task); err != nil {
		t.Fatalf("POST /tasks answer: %v: %s", err, b)
	}
	for i := 0; i < 200 && task.Status != "succeeded"; i++ {
		time.Sleep(50 * time.Millisecond)
		_, b = call("GET", "/api/v1/tasks/"+task.ID, tok, "")
		_ = json.Unmarshal([]byte(b), &task) // checked below by its status
	}
	if task.Status != "succeeded" {
		t.Fatalf("prepare_site over the API: %s", b)
	}
	const value = "an-encrypted-bmc-password"
	if code, b := call("PUT", "/api/v1/secrets/bmc-admin", tok, `{"value":"`+value+`"}`); code != 200 {
		t.Fatalf("PUT secret: %d %s", code, b)
	}
	if _, b := call("GET", "/api/v1/secrets", tok, ""); !strings.Contains(b, "bmc-admin") || strings.Contains(b, value) {
		t.Fatalf("GET secrets: %s", b)
	}
	code, b = call("POST", "/api/v1/tokens", tok, `{"role":"viewer","name":"dash"}`)
	var created struct{ Token string }
	if err := json.Unmarshal([]byte(b), &created); err != nil || code != 201 || created.Token == "" {
		t.Fatalf("POST /tokens: %d %s", code, b)
	}
	if code, _ := call("POST", "/api/v1/tasks", created.Token, `{"action":"verify_site"}`); code != 403 {
		t.Fatalf("viewer creating a task: %d", code)
	}
	code, b = call("GET", "/metrics", "", "")
	if code != 200 || !strings.Contains(b, "slipway_driver_call_duration_seconds") || !strings.Contains(b, "slipway_http_requests_total") {
		t.Fatalf("metrics: %d", code)
	}
	promtoolCheck(t, b)
	if _, b := call("GET", "/api/v1/audit", tok, ""); !strings.Contains(b, `"outcome":"denied"`) {
		t.Fatalf("audit lacks the denied call: %s", b)
	}
	raw, _ := os.ReadFile(state)
	if bytes.Contains(raw, []byte(value)) || bytes.Contains(raw, []byte(tok)) {
		t.Fatal("the state file holds a secret or a token in clear")
	}
	if !strings.Contains(stderr.String(), "introspection API on 127.0.0.1:") {
		t.Errorf("serve did not start the introspection API: %s", stderr.String())
	}
	if st, err := os.Stat(filepath.Join(dir, "state", "introspection.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("introspection key: %v %v", err, st)
	}
	if strings.Contains(stderr.String(), tok) {
		t.Fatal("the token appears on stderr")
	}
	serveLocalCommands(t, state, task.ID)
}

// serveLocalCommands: while serve holds the state database, the CLI's
// commands without --server talk to it over the socket beside the
// database (0600), as the local OS user, with no token; the audit names
// that user.
func serveLocalCommands(t *testing.T, state, taskID string) {
	t.Helper()
	sock := server.LocalSocket(state)
	if st, err := os.Stat(sock); err != nil || st.Mode().Type() != os.ModeSocket || st.Mode().Perm() != 0o600 {
		t.Fatalf("local socket %s: %v %v", sock, err, st)
	}
	code, out, errs := cli(t, "tasks", "--state", state)
	if code != 0 || !strings.Contains(out, taskID) {
		t.Fatalf("tasks while serve holds the database: exit %d: %s %s", code, out, errs)
	}
	serveLocalCredentials(t, state)
	node := designtest.Example(t).NodeNames()[0]
	if code, _, errs := cli(t, "mark-manual-intervention", node, "--reason", "local socket", "--state", state); code != 0 {
		t.Fatalf("mark-manual-intervention through the local socket: exit %d: %s", code, errs)
	}
	code, out, errs = cli(t, "audit", "-o", "json", "--state", state)
	var recs []struct {
		Path string
		Who  struct{ ID, Name string }
	}
	if err := json.Unmarshal([]byte(out), &recs); code != 0 || err != nil {
		t.Fatalf("audit through the local socket: exit %d %v: %s", code, err, errs)
	}
	found := false
	for _, r := range recs {
		if strings.HasSuffix(r.Path, "/mark-manual-intervention") {
			found = r.Who.Name == server.LocalRequester()
		}
	}
	if !found {
		t.Errorf("the audit does not name the local user %s for the node verb: %+v", server.LocalRequester(), recs)
	}
}

// serveLocalCredentials: token and secret commands are API clients too:
// while serve holds the database they create, list and revoke tokens and
// store secrets through its socket, with the serve's own key.
func serveLocalCredentials(t *testing.T, state string) {
	t.Helper()
	code, out, errs := cli(t, "token", "create", "--role", "viewer", "--name", "local", "-o", "json", "--state", state)
	var tok struct{ Token, ID string }
	if err := json.Unmarshal([]byte(out), &tok); code != 0 || err != nil || tok.Token == "" {
		t.Fatalf("token create through the local socket: exit %d %v: %s %s", code, err, out, errs)
	}
	code, out, errs = cli(t, "token", "list", "--state", state)
	if code != 0 || !strings.Contains(out, tok.ID) || !strings.Contains(out, "LAST USED") {
		t.Fatalf("token list through the local socket: exit %d: %s %s", code, out, errs)
	}
	if code, _, errs := cli(t, "token", "revoke", tok.Token, "--state", state); code != exitUsage || strings.Contains(errs, tok.Token) {
		t.Fatalf("token revoke given a token (not an ID): exit %d: %s", code, errs)
	}
	if code, _, errs := cli(t, "token", "revoke", tok.ID, "--state", state); code != 0 {
		t.Fatalf("token revoke through the local socket: exit %d: %s", code, errs)
	}
	code, _, errs = cliIn(t, strings.NewReader("local-secret-value"), "secret", "set", "local-one", "--state", state)
	if code != 0 {
		t.Fatalf("secret set through the local socket: exit %d: %s", code, errs)
	}
	if code, out, errs := cli(t, "secret", "list", "--state", state); code != 0 || !strings.Contains(out, "local-one") {
		t.Fatalf("secret list through the local socket: exit %d: %s %s", code, out, errs)
	}
	code, _, errs = cliIn(t, strings.NewReader("v"), "secret", "set", "other", "--key-file", filepath.Join(t.TempDir(), "k"), "--state", state)
	if code != exitUsage || !strings.Contains(errs, "its own key") {
		t.Fatalf("secret set --key-file to a serve: exit %d: %s", code, errs)
	}
}
