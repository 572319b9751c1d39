package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/sim/lab"
)

// introspectionLayer writes a design layer whose Site names url as its
// introspection URL, and returns its directory.
func introspectionLayer(t *testing.T, url string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "intro")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := "apiVersion: slipway/v1\nkind: Site\nmetadata: {name: lab}\nspec:\n  introspection: {url: \"" + url + "\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "site.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestIntrospectionURLFromRevision: serve starts on a design whose Site
// names introspection URL A (nothing listens there); a new revision names
// B (where serve's introspection API listens), applied while serve runs.
// A deploy then hands the node B: the user data the lab's machine got
// from MAAS carries B (not A), the node's agent bootstraps against it and
// the task succeeds; the boot data route renders B too.
func TestIntrospectionURLFromRevision(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp01"
	lb, err := lab.Start(t.Context(), lab.Config{Design: designtest.Example(t), TimeScale: 0.001, Seed: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	ports := testtool.FreePorts(t, 2)
	urlA, urlB := fmt.Sprintf("http://127.0.0.1:%d", ports[0]), fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	info := lb.Info()
	dir, state, cfg := serveLabState(t, info, introspectionLayer(t, urlA))
	refs, err := os.ReadFile(cfg) // the secretRefs naming the lab's key
	if err != nil {
		t.Fatal(err)
	}
	conf := string(refs) + "pollInterval: 100ms\nretryBase: 100ms\nretryMax: 1s\nbmcEndpoints:\n"
	for _, b := range info.BMCs {
		conf += fmt.Sprintf("  %s: 127.0.0.1:%d\n", b.Node, b.Port)
	}
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil { // the lab's BMC ports, and no introspectionURL
		t.Fatal(err)
	}
	s := startServe(t, cfg, state, dir, "--introspection-listen", fmt.Sprintf("127.0.0.1:%d", ports[1]))
	defer func() {
		if code := s.stop(); code != 0 {
			t.Errorf("serve exit %d: %s", code, s.stderr)
		}
	}()
	for name, v := range labrun.DefaultSecrets() {
		if code, b := s.call(t, "PUT", "/api/v1/secrets/"+name, `{"value":"`+v+`"}`); code != 200 {
			t.Fatalf("PUT secret %s: %d %s", name, code, b)
		}
	}
	if st, msg := s.task(t, "prepare_site"); st != "succeeded" {
		t.Fatalf("prepare_site: %s %s", st, msg)
	}
	layer := filepath.Join(dir, "layer") // serveLabState's: the lab's MAAS
	if code, out, errs := cli(t, "--server", s.base, "--token", s.tok, "apply", exampleSite, introspectionLayer(t, urlB), layer); code != 0 {
		t.Fatalf("apply of the revision naming %s: exit %d\n%s%s", urlB, code, out, errs)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	code, b := s.call(t, "POST", "/api/v1/tasks", `{"action":"deploy_nodes","node_filter":{"sets":[{"names":["`+node+`"]}]}}`)
	var task struct{ ID, Status string }
	if code != 201 || json.Unmarshal([]byte(b), &task) != nil {
		t.Fatalf("POST /tasks deploy_nodes: %d %s", code, b)
	}
	m := lb.Machine(node)
	for len(m.UserData()) == 0 {
		_, b = s.call(t, "GET", "/api/v1/tasks/"+task.ID, "")
		if ctx.Err() != nil || strings.Contains(b, `"status":"failed"`) {
			t.Fatalf("%s's machine got no user data from MAAS; the task: %s", node, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ud := string(m.UserData())
	if !strings.Contains(ud, "SLIPWAY_URL='"+urlB+"'") || strings.Contains(ud, urlA) {
		t.Fatalf("the user data %s's machine got from MAAS does not carry %s (the applied revision's): %q", node, urlB, ud)
	}
	if rec, err := m.WaitBootstrap(ctx); err != nil || rec.URL != urlB || rec.State != lab.BootstrapDone {
		t.Errorf("%s's agent: %s against %q (%v), want done against %s", node, rec.State, rec.URL, err, urlB)
	}
	for task.Status != "succeeded" && ctx.Err() == nil {
		time.Sleep(25 * time.Millisecond)
		_, b = s.call(t, "GET", "/api/v1/tasks/"+task.ID, "")
		_ = json.Unmarshal([]byte(b), &task) // checked by its status
	}
	if task.Status != "succeeded" {
		t.Fatalf("deploy of %s: %s", node, b)
	}
	var out, errs string
	code, out, errs = cli(t, "--server", s.base, "--token", s.tok, "bootdata", node, "--part", "user-data")
	if code != 0 || !strings.Contains(out, "SLIPWAY_URL='"+urlB+"'") {
		t.Errorf("bootdata %s --part user-data: exit %d, want it to carry %s\n%s%s", node, code, urlB, out, errs)
	}
	outDir := t.TempDir()
	code, out, errs = cli(t, "--server", s.base, "--token", s.tok, "rebootstrap", node, "--out", outDir)
	env, err := os.ReadFile(filepath.Join(outDir, node+".bootstrap.env"))
	if code != 0 || err != nil || !strings.Contains(string(env), "SLIPWAY_URL='"+urlB+"'") {
		t.Errorf("rebootstrap %s: exit %d (%v), want its environment to carry %s\n%s%s", node, code, err, urlB, out, errs)
	}
}
