package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/sim/lab"
)

// TestServeStartsEmpty (issue 35 item 5): serve on an empty state starts
// and says it has no design yet (/readyz 503 with the reason for a token
// holder, a task request 409 naming the next step); it then takes its
// first design through the API (not ready: its MAAS key is not set, named)
// and the key, and runs a prepare_site against the lab without a restart,
// counted by the lab's MAAS itself.
func TestServeStartsEmpty(t *testing.T) {
	lb, err := lab.Start(t.Context(), lab.Config{Design: designtest.Example(t), TimeScale: 0.001, Seed: 35})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	info := lb.Info()
	dir := t.TempDir()
	state := filepath.Join(dir, "state", "slipway.db")
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte("readyCheckTTL: 100ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, cfg, state, dir, "--introspection-listen", "")
	stopped := false
	defer func() {
		if !stopped {
			p.stop()
		}
	}()

	if code, b := p.call(t, "GET", "/readyz", ""); code != 503 || !strings.Contains(b, "no design applied yet") {
		t.Fatalf("/readyz with the admin token on an empty state: %d %s; want 503 no design applied yet", code, b)
	}
	if c, body, err := anonReadyz(t.Context(), p.base); err != nil || c != 503 || !checkAnonBody(t, c, body, "no design", state) {
		t.Fatalf("anonymous /readyz on an empty state: %d %s %v; want a bare 503", c, body, err)
	}
	for path, want := range map[string]string{"/api/v1/designs": "[]", "/api/v1/nodes": `"total":0`, "/api/v1/tasks": `"total":0`} {
		if c, body := p.call(t, "GET", path, ""); c != 200 || !strings.Contains(body, want) {
			t.Fatalf("GET %s on an empty state: %d %s; want 200 and %s", path, c, body, want)
		}
	}
	if c, body := p.call(t, "GET", "/api/v1/nodes/r01-cmp01", ""); c != 404 {
		t.Errorf("GET a node on an empty state: %d %s; want 404", c, body)
	} else {
		t.Logf("GET a node on an empty state: %d %s", c, body)
	}
	code, b := p.call(t, "POST", "/api/v1/tasks", `{"action":"prepare_site"}`)
	if code != 409 || !strings.Contains(b, "no design yet") || !strings.Contains(b, "POST /api/v1/designs") {
		t.Fatalf("a task before any design: %d %s; want 409 naming the next step", code, b)
	}
	if before := lb.MAAS.Stats().Snapshot().Total; before != 0 {
		t.Fatalf("the lab's MAAS got %d requests before any design", before)
	}

	layer := filepath.Join(dir, "layer")
	if err := os.MkdirAll(layer, 0o755); err != nil {
		t.Fatal(err)
	}
	site := "apiVersion: slipway/v1\nkind: Site\nmetadata: {name: lab}\nspec:\n  maas: {url: \"" + info.MAASURL + "\"}\n"
	if err := os.WriteFile(filepath.Join(layer, "site.yaml"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, out, errs := cli(t, "--server", p.base, "--token", p.tok, "apply", exampleSite, layer); c != 0 {
		t.Fatalf("apply through the API: %d %s %s", c, out, errs)
	}
	// The design names secret:maas-api-key, not set yet: not ready, saying so.
	code, b = 0, ""
	for i := 0; i < 50 && !strings.Contains(b, "maas-api-key"); i++ {
		time.Sleep(100 * time.Millisecond)
		code, b = p.call(t, "GET", "/readyz", "")
	}
	if code != 503 || !strings.Contains(b, "maas-api-key") {
		t.Fatalf("/readyz with a design whose MAAS key is not set: %d %s; want 503 naming maas-api-key", code, b)
	}
	if c, _, errs := cliIn(t, strings.NewReader(info.APIKey), "--server", p.base, "--token", p.tok, "secret", "set", "maas-api-key"); c != 0 {
		t.Fatalf("secret set through the API: %d %s", c, errs)
	}
	if status, msg := p.task(t, "prepare_site"); status != "succeeded" {
		t.Fatalf("prepare_site after the first design, without a restart: %s %s\n%s", status, msg, p.stderr)
	}
	writes, denied := 0, lb.MAAS.Stats().Snapshot().Statuses[401]
	for _, r := range lb.MAAS.Stats().Snapshot().Requests {
		if strings.HasPrefix(r.Request, "POST ") || strings.HasPrefix(r.Request, "PUT ") {
			writes += r.Count
		}
	}
	if writes == 0 || denied != 0 {
		t.Fatalf("the lab's MAAS counted %d writes and %d refused requests after prepare_site; want writes, none refused", writes, denied)
	}
	code, b = 0, ""
	for i := 0; i < 50 && code != 200; i++ { // the readiness answer is reused for readyCheckTTL (100ms)
		time.Sleep(100 * time.Millisecond)
		code, b = p.call(t, "GET", "/readyz", "")
	}
	if code != 200 {
		t.Errorf("/readyz after the first design and key: %d %s; want 200 within 5 s", code, b)
	}
	t.Logf("the lab's MAAS counted %d writes from prepare_site", writes)
	p.stop()
	stopped = true
	// Before its first design a serve has nothing to reconcile: its
	// reconciliation at start must not fail (and warn every interval).
	if log := p.stderr.String(); strings.Contains(log, "reconciliation failed") {
		t.Errorf("serve warned that reconciliation failed while it had no design:\n%.2000s", log)
	}
}
