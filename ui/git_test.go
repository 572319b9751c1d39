package ui_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/gitsync"
	"github.com/slipway-dev/slipway/gitsync/gittest"
	"github.com/slipway-dev/slipway/ingest/archive"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/ui"
)

// exampleFiles are the example site's files under site/, without node's
// document.
func exampleFiles(t *testing.T, node string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(designtest.ExampleDir(), "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("example files: %v", err)
	}
	out := map[string]string{}
	dropped := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, n := designtest.DropNode(string(b), node)
		dropped += n
		out["site/"+filepath.Base(f)] = s
	}
	if dropped != 1 {
		t.Fatalf("dropped %d documents of %s", dropped, node)
	}
	return out
}

// TestDesignsViewShowsGit: a real follower on a git repository served by
// git daemon. A commit with broken YAML is shown as invalid with its
// file:line, a commit releasing a deployed node as held with that
// release; an operator approves it in the dashboard, and the store's
// current revision is then that commit's. A viewer gets no approve
// button. Both views pass axe-core.
func TestDesignsViewShowsGit(t *testing.T) {
	t.Parallel()
	up := gittest.NewUpstream(t)
	daemon := gittest.StartDaemon(t, up.Root)
	app := &api.GitApplier{}
	var follower *gitsync.Follower
	srv := apitest.Start(t, apitest.WithSeed(6), apitest.WithConfig(func(c *api.Config) {
		f, err := gitsync.New(gitsync.Config{URL: daemon.URL, Branch: "main", Path: "site", Interval: "24h",
			Limits: archive.Limits{}.OrDefault(), Dir: t.TempDir()},
			gitsync.Options{Applier: app, Store: c.Store, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		c.UI, c.Git, follower = ui.Handler(), f, f
	}))
	app.Srv.Store(srv.API)
	const node = "r01-cmp01"
	deployOne(t, srv, node)

	broken := up.Commit("a broken file", map[string]string{"site/zz-broken.yaml": "kind: [unclosed\n"})
	follower.Round(t.Context(), "test")
	files := exampleFiles(t, node)
	files["site/zz-broken.yaml"] = ""
	held := up.Commit("retire "+node, files)
	follower.Round(t.Context(), "test")

	b := newBrowser(t)
	b.signIn(t, srv.URL, srv.Token[api.RoleViewer], len(designtest.Example(t).NodeNames()))
	b.run(t, "the git source as a viewer", 30*time.Second, chromedp.Navigate(srv.URL+"/ui/#/designs"),
		poll(`(() => { const h = document.querySelector('#git-held'); return h && h.textContent.includes('release `+node+`'); })()`, 10*time.Second))
	if r := eval[string](t, b, `document.querySelector('#git-rejected').textContent`); !strings.Contains(r, broken[:12]) || !strings.Contains(r, "zz-broken.yaml:") {
		t.Errorf("the rejected commit shown: %q, want %s and its file:line", r, broken[:12])
	}
	if n := eval[int](t, b, `document.querySelectorAll('#git-approve').length`); n != 0 {
		t.Errorf("a viewer sees %d approve buttons", n)
	}
	checkAccessibility(t, b, "the designs view with the git source")

	b.run(t, "sign out", 10*time.Second, signOut())
	b.signIn(t, srv.URL, srv.Token[api.RoleOperator], len(designtest.Example(t).NodeNames()))
	b.run(t, "approve the held commit", 60*time.Second, chromedp.Navigate(srv.URL+"/ui/#/designs"),
		poll(`!!document.querySelector('#git-approve')`, 10*time.Second), confirmClick(`//button[@id="git-approve"]`),
		poll(`(() => { const a = document.querySelector('#git-applied'); return a && a.textContent.includes('`+held[:12]+`'); })()`, 30*time.Second))
	cur, err := srv.Store.Current(t.Context())
	if err != nil || cur.GitCommit != held {
		t.Fatalf("current revision's commit %q (%v), want %s", cur.GitCommit, err, held)
	}
	if n := eval[int](t, b, `document.querySelectorAll('#git-held').length`); n != 0 {
		t.Errorf("the approved commit is still shown as held")
	}
}

// deployOne deploys node in the lab (prepare_site first).
func deployOne(t *testing.T, srv *apitest.Server, node string) {
	t.Helper()
	op := srv.Token[api.RoleOperator]
	for _, body := range []string{`{"action":"prepare_site"}`, `{"action":"deploy_nodes","node_filter":{"sets":[{"names":["` + node + `"]}]}}`} {
		var task record.Task
		if code := call(t, srv.URL, op, "POST", "/api/v1/tasks", "application/json", []byte(body), &task); code != http.StatusCreated {
			t.Fatalf("%s: %d", body, code)
		}
		if _, err := srv.Engine.Wait(t.Context(), task.ID); err != nil {
			t.Fatal(err)
		}
	}
}
