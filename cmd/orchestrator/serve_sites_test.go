package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/server"
	"github.com/slipway-dev/slipway/sim/lab"
)

// serveProc is a running `serve` and its API.
type serveProc struct {
	base, tok string
	stderr    *bytes.Buffer
	stop      func() int
}

// maasKeyEnvs numbers the variables maasKeyEnv sets.
var maasKeyEnvs atomic.Int64

// maasKeyEnv puts key in an environment variable of this process named
// for the calling test alone (SLIPWAY_TEST_MAAS_KEY_<n>, removed at its
// cleanup) and returns the name: the in-process serves of parallel tests
// each read their own lab's key (t.Setenv would forbid t.Parallel).
func maasKeyEnv(t *testing.T, key string) string {
	t.Helper()
	name := fmt.Sprintf("SLIPWAY_TEST_MAAS_KEY_%d", maasKeyEnvs.Add(1))
	if err := os.Setenv(name, key); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Unsetenv(name) })
	return name
}

// serveLabState applies the example (with roots layered over it) to a
// state file beside a serve configuration, the first Site pointed at the
// lab's MAAS with its key from the environment (maasKeyEnv, listed in the
// configuration's secretRefs): what a test's `serve` starts from.
func serveLabState(t *testing.T, info lab.Info, roots ...string) (dir, state, cfg string) {
	t.Helper()
	keyEnv := maasKeyEnv(t, info.APIKey)
	dir = t.TempDir()
	layer := filepath.Join(dir, "layer")
	if err := os.MkdirAll(layer, 0o755); err != nil {
		t.Fatal(err)
	}
	body := "apiVersion: slipway/v1\nkind: Site\nmetadata: {name: lab}\nspec:\n  maas: {url: \"" + info.MAASURL + "\", apiKey: \"env:" + keyEnv + "\"}\n"
	if err := os.WriteFile(filepath.Join(layer, "site.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	state = filepath.Join(dir, "state", "slipway.db")
	args := append(append([]string{"apply", "--state", state, exampleSite}, roots...), layer)
	if code, out, errs := cli(t, args...); code != 0 {
		t.Fatalf("apply: %d %s %s", code, out, errs)
	}
	// serve resolves env: references only when its configuration lists them.
	cfg = filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte("secretRefs: {env: ["+keyEnv+"]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, state, cfg
}

func startServe(t *testing.T, cfg, state, dir string, extra ...string) *serveProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	p := &serveProc{base: "http://" + addr, stderr: &bytes.Buffer{}}
	go func() {
		// The introspection API on a free port unless extra names one (the
		// last flag wins): its default, :8701, is one port for all tests.
		done <- run(ctx, append([]string{"serve", "--config", cfg, "--state", state, "--listen", addr, "--plugin-dir", dir,
			"--introspection-listen", "127.0.0.1:0"}, extra...), &bytes.Buffer{}, p.stderr)
	}()
	p.stop = func() int { cancel(); return <-done }
	tokFile := filepath.Join(filepath.Dir(state), "admin.token")
	deadline := time.Now().Add(time.Minute) // a hang guard: serve comes up in a second or two
	for p.tok == "" && time.Now().Before(deadline) {
		if b, err := os.ReadFile(tokFile); err == nil {
			p.tok = strings.TrimSpace(string(b))
		}
		time.Sleep(25 * time.Millisecond)
	}
	for time.Now().Before(deadline) {
		if code, _ := p.call(t, "GET", "/healthz", ""); code == 200 {
			return p
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("serve did not come up: %s", p.stderr)
	return nil
}

func (p *serveProc) call(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, p.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// task runs a task to its end and returns its status and message.
func (p *serveProc) task(t *testing.T, action string) (string, string) {
	t.Helper()
	code, b := p.call(t, "POST", "/api/v1/tasks", `{"action":"`+action+`"}`)
	var task struct{ ID, Status, Message string }
	if code != 201 || json.Unmarshal([]byte(b), &task) != nil {
		t.Fatalf("POST /tasks %s: %d %s", action, code, b)
	}
	deadline := time.Now().Add(time.Minute) // a hang guard; the caller checks the status
	for time.Now().Before(deadline) && (task.Status == "queued" || task.Status == "pending" || task.Status == "running" || task.Status == "") {
		time.Sleep(25 * time.Millisecond)
		_, b = p.call(t, "GET", "/api/v1/tasks/"+task.ID, "")
		_ = json.Unmarshal([]byte(b), &task)
	}
	return task.Status, task.Message
}

// TestServeTwoSites: serve starts with a second Site that has no MAAS
// endpoint yet (its tasks fail saying to create its site record); once
// an admin creates the record through the API (probed with its key), the
// same serve, without a restart, prepares both Sites, each in its own
// MAAS region (counted by the regions themselves).
func TestServeTwoSites(t *testing.T) {
	t.Parallel()
	lb, err := lab.Start(t.Context(), lab.Config{Design: designtest.TwoSites(t), TimeScale: 0.001, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	info := lb.Info()
	if len(info.Sites) != 2 || info.Sites[1].Site != "lab-east" {
		t.Fatalf("lab sites: %+v", info.Sites)
	}
	dir, state, cfg := serveLabState(t, info, filepath.Join(filepath.Dir(exampleSite), "two-sites"))
	s := startServe(t, cfg, state, dir)
	// Alone on its state file, serve is a group of one that leads.
	if code, b := s.call(t, "GET", "/api/v1/cluster", ""); code != 200 || !strings.Contains(b, `"role":"leader"`) || !strings.Contains(b, `"kind":"bolt"`) {
		t.Errorf("GET /api/v1/cluster alone on bbolt: %d %s", code, b)
	}
	if st, msg := s.task(t, "prepare_site"); st != "failed" || !strings.Contains(msg, "site lab-east has no MAAS endpoint") {
		t.Fatalf("prepare_site without lab-east's record: %s %s", st, msg)
	}
	code, b := s.call(t, "POST", "/api/v1/admin/maas-sites", `{"name":"lab-east","url":"`+info.Sites[1].MAASURL+`","api_key":"`+info.APIKey+`"}`)
	var rec struct{ ID string }
	if code != 201 || json.Unmarshal([]byte(b), &rec) != nil {
		t.Fatalf("create lab-east: %d %s", code, b)
	}
	if code, b := s.call(t, "POST", "/api/v1/admin/maas-sites/"+rec.ID+"/probe", ""); code != 200 || !strings.Contains(b, `"authenticated":true`) {
		t.Fatalf("probe lab-east: %d %s", code, b)
	}
	defer func() {
		if code := s.stop(); code != 0 {
			t.Errorf("serve exit %d: %s", code, s.stderr)
		}
	}()
	// The same serve, no restart: its server drivers are built again
	// once it sees the new record (within server.RebindEvery).
	east := lb.Regions()[1].MAAS
	before := east.Stats().Snapshot().Total
	time.Sleep(server.RebindEvery)
	if st, msg := s.task(t, "prepare_site"); st != "succeeded" {
		t.Fatalf("prepare_site with both Sites bound: %s %s", st, msg)
	}
	if after := east.Stats().Snapshot().Total; after == before {
		t.Fatal("lab-east's MAAS region answered nothing: its Site was not prepared there")
	}
	if strings.Contains(s.stderr.String(), info.APIKey) {
		t.Fatal("a MAAS key appears on stderr")
	}
	// Per-site metrics, in the exposition format promtool accepts.
	code, metrics := s.call(t, "GET", "/metrics", "")
	if code != 200 || !strings.Contains(metrics, `slipway_site_calls_total{outcome="ok",site="lab-east"}`) ||
		!strings.Contains(metrics, `slipway_site_calls_in_flight{site="lab"}`) {
		t.Fatalf("metrics: %d, no per-site series:\n%s", code, metrics)
	}
	promtoolCheck(t, metrics)
}

// promtoolCheck: Prometheus's own linter accepts the exposition.
func promtoolCheck(t *testing.T, metrics string) {
	t.Helper()
	promtool := testtool.Need(t, "promtool", "prometheus")
	check := exec.CommandContext(t.Context(), promtool, "check", "metrics")
	check.Stdin = strings.NewReader(metrics)
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
