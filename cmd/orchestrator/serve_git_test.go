package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/gitsync/gittest"
	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/sim/lab"
)

// exampleFiles is the example site as a commit's files under dir/, its
// Site pointed at maasURL and introURL.
func exampleFiles(t *testing.T, dir, maasURL, introURL string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(exampleSite)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(exampleSite, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		body := strings.Replace(string(b), "http://127.0.0.1:5240/MAAS", maasURL, 1)
		out[dir+"/"+e.Name()] = strings.Replace(body, "http://127.0.0.1:9090", introURL, 1)
	}
	return out
}

// gitStatus is the serve's GET /git/status.
func (p *serveProc) gitStatus(t *testing.T) apitypes.GitStatus {
	t.Helper()
	code, b := p.call(t, "GET", "/api/v1/git/status", "")
	var st apitypes.GitStatus
	if code != 200 || json.Unmarshal([]byte(b), &st) != nil {
		t.Fatalf("GET /git/status: %d %s", code, b)
	}
	return st
}

// waitGit polls the status until ok, within d.
func (p *serveProc) waitGit(t *testing.T, d time.Duration, what string, ok func(apitypes.GitStatus) bool) apitypes.GitStatus {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		st := p.gitStatus(t)
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; status %+v\n%s", what, d, st, p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// currentCommit is the commit of the serve's current revision, read from
// its apply history ("" none).
func (p *serveProc) currentCommit(t *testing.T) apitypes.RevisionInfo {
	t.Helper()
	var info apitypes.RevisionInfo
	if code, b := p.call(t, "GET", "/api/v1/designs/current", ""); code == 200 {
		_ = json.Unmarshal([]byte(b), &info)
	}
	return info
}

// hook sends a GitHub push delivery signed with key.
func (p *serveProc) hook(t *testing.T, delivery, ref, key string) (int, string) {
	t.Helper()
	body := `{"ref":"` + ref + `"}`
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(body))
	req, _ := http.NewRequestWithContext(t.Context(), "POST", p.base+"/api/v1/git/webhook", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// gitWebhookWait bounds how long TestServeFollowsGit waits for a round
// its webhook started (a hang guard: the wait ends when the round is saved).
const gitWebhookWait = time.Minute

// TestServeFollowsGit: a serve started on an empty state with a git:
// block (a git daemon on 127.0.0.1) takes its first design from the
// repository; the first commit sets the credential bindings, so it is
// held until approved by its commit (an admin: it says so); a commit with malformed YAML is
// recorded with its findings and the last good revision stays current;
// a webhook with a wrong signature is refused (401, an audit record,
// nothing fetched by the daemon); a pushed commit is applied after its
// webhook (the interval is 1 h: only the webhook starts a round; the
// waits allow 15 s, which a loaded machine under -race needs: 2 s
// failed at load 20); a replayed delivery fetches nothing.
func TestServeFollowsGit(t *testing.T) {
	t.Parallel()
	lb, err := lab.Start(t.Context(), lab.Config{Design: designtest.Example(t), TimeScale: 0.001, Seed: 35})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	up := gittest.NewUpstream(t)
	intro := fmt.Sprintf("127.0.0.1:%d", testtool.FreePorts(t, 1)[0])
	files := exampleFiles(t, "site", lb.Info().MAASURL, "http://"+intro)
	c1 := up.Commit("the lab site\n\nfirst design from git", files)
	d := gittest.StartDaemon(t, up.Root)
	dir := t.TempDir()
	state := filepath.Join(dir, "state", "slipway.db")
	cfg := filepath.Join(dir, "serve.yaml")
	conf := "pollInterval: 100ms\nretryBase: 100ms\nretryMax: 1s\nbmcEndpoints:\n"
	for _, b := range lb.Info().BMCs {
		conf += fmt.Sprintf("  %s: 127.0.0.1:%d\n", b.Node, b.Port)
	}
	conf += "git:\n  url: " + d.URL + "\n  branch: main\n  path: site\n  interval: 1h\n  webhook_secret: git-hook\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	// The example's GPU nodes deploy its custom image: serve reads it
	// from --image-dir, where the lab's generated file goes.
	images := filepath.Join(dir, "images")
	if err := labrun.WriteLabImages(designtest.Example(t), images); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, cfg, state, dir, "--introspection-listen", intro, "--image-dir", images)
	defer p.stop()

	st := p.waitGit(t, gitWebhookWait, "the first commit held", func(s apitypes.GitStatus) bool { return s.Held != nil })
	if st.Held.Commit != c1 || len(st.Held.Destructive) == 0 || !st.Held.AdminApproves || st.Remote != d.URL {
		t.Fatalf("held: %+v (remote %s)", st.Held, st.Remote)
	}
	if cur := p.currentCommit(t); cur.ID != "" {
		t.Fatalf("a held commit was stored: current %+v", cur)
	}
	if c, out, errs := cli(t, "--server", p.base, "--token", p.tok, "git", "status"); c != 0 || !strings.Contains(out, "HELD    "+c1) || !strings.Contains(out, "an admin's token") {
		t.Fatalf("git status of a commit held for its bindings: %d %s %s", c, out, errs)
	}
	if c, out, errs := cli(t, "--server", p.base, "--token", p.tok, "git", "approve", c1[:12]); c != 0 || !strings.Contains(out, "applied") {
		t.Fatalf("git approve: %d %s %s", c, out, errs)
	}
	cur := p.currentCommit(t)
	if cur.GitCommit != c1 || cur.GitAuthor != "Ada Tester <ada@example.org>" || cur.GitMessage != "the lab site" ||
		len(cur.Roots) != 1 || cur.Roots[0] != "git:"+d.URL+"#main:site" {
		t.Fatalf("after approval the current revision is %+v, want commit %s with its author and message", cur, c1)
	}

	if c, b := p.call(t, "PUT", "/api/v1/secrets/git-hook", `{"value":"hook-key"}`); c != 200 {
		t.Fatalf("store the webhook secret: %d %s", c, b)
	}
	c2 := up.Commit("broken", map[string]string{"site/zz-broken.yaml": "kind: Node\nmetadata: [unclosed\n"})
	if c, b := p.hook(t, "d-1", "refs/heads/main", "hook-key"); c != 202 {
		t.Fatalf("webhook: %d %s", c, b)
	}
	st = p.waitGit(t, gitWebhookWait, "the invalid commit recorded", func(s apitypes.GitStatus) bool { return s.Rejected != nil })
	if st.Rejected.Commit != c2 || st.Rejected.Outcome != "invalid" || len(st.Rejected.Findings) == 0 || !strings.HasPrefix(st.Rejected.Findings[0], "zz-broken.yaml:") {
		t.Fatalf("invalid commit: %+v", st.Rejected)
	}
	if cur := p.currentCommit(t); cur.GitCommit != c1 {
		t.Fatalf("after an invalid commit the current revision is %s's, want %s's", cur.GitCommit, c1)
	}

	fetches := d.Fetches()
	auditBefore := p.auditCount(t)
	if c, b := p.hook(t, "d-2", "refs/heads/main", "not-the-key"); c != 401 {
		t.Fatalf("wrong signature: %d %s, want 401", c, b)
	}
	if n := p.auditCount(t); n != auditBefore+1 {
		t.Errorf("wrong signature: %d audit records, want 1", n-auditBefore)
	}
	files["site/zz-broken.yaml"] = ""
	files["site/nodes-r01.yaml"] = strings.Replace(files["site/nodes-r01.yaml"], "labels: {rack: r01, role: compute}", "labels: {rack: r01, role: compute, team: blue}", 1)
	c3 := up.Commit("label r01-cmp01", files)
	time.Sleep(300 * time.Millisecond) // a round the refused webhook started would have fetched by now
	if n := d.Fetches(); n != fetches {
		t.Fatalf("a webhook with a wrong signature led to %d fetches", n-fetches)
	}
	start := time.Now()
	if c, b := p.hook(t, "d-3", "refs/heads/main", "hook-key"); c != 202 {
		t.Fatalf("webhook: %d %s", c, b)
	}
	p.waitGit(t, gitWebhookWait, "the new commit applied", func(s apitypes.GitStatus) bool { return s.Applied != nil && s.Applied.Commit == c3 })
	if cur := p.currentCommit(t); cur.GitCommit != c3 {
		t.Fatalf("current revision's commit %s, want %s", cur.GitCommit, c3)
	}
	t.Logf("commit applied %s after its webhook", time.Since(start).Round(time.Millisecond))
	fetches = d.Fetches()
	if c, b := p.hook(t, "d-3", "refs/heads/main", "hook-key"); c != 200 || !strings.Contains(b, "handled already") {
		t.Fatalf("replayed delivery: %d %s", c, b)
	}
	time.Sleep(300 * time.Millisecond)
	if n := d.Fetches(); n != fetches {
		t.Errorf("a replayed delivery led to %d fetches", n-fetches)
	}
	if c, out, errs := cli(t, "--server", p.base, "--token", p.tok, "git", "status"); c != 0 || !strings.Contains(out, c3) || !strings.Contains(out, "INVALID") {
		t.Errorf("git status: %d %s %s", c, out, errs)
	}
	heldThenApproved(t, p, lb, up, files)
}

// heldThenApproved: with r02-gpu02 deployed in the lab, a commit that
// removes it from the design plans its release: it is held, the current
// revision stays; approved by its
// commit, it becomes the current revision.
func heldThenApproved(t *testing.T, p *serveProc, lb *lab.Lab, up *gittest.Upstream, files map[string]string) {
	const removed, later = "r02-gpu02", "r02-cmp02" // later: deployed while the commit is held
	secrets := labrun.DefaultSecrets()
	secrets["maas-api-key"] = lb.Info().APIKey
	for name, v := range secrets {
		if c, b := p.call(t, "PUT", "/api/v1/secrets/"+name, `{"value":"`+v+`"}`); c != 200 {
			t.Fatalf("store secret %s: %d %s", name, c, b)
		}
	}
	if status, msg := p.task(t, "prepare_site"); status != "succeeded" {
		t.Fatalf("prepare_site: %s %s", status, msg)
	}
	p.deployNode(t, removed)
	before := p.currentCommit(t)
	docs := strings.Split(files["site/nodes-r02.yaml"], "\n---\n")
	kept := docs[:0]
	for _, d := range docs {
		if !strings.Contains(d, "name: "+removed) && !strings.Contains(d, "name: "+later) {
			kept = append(kept, d)
		}
	}
	files["site/nodes-r02.yaml"] = strings.Join(kept, "\n---\n")
	c4 := up.Commit("remove "+removed+" and "+later, files)
	if c, b := p.hook(t, "d-4", "refs/heads/main", "hook-key"); c != 202 {
		t.Fatalf("webhook: %d %s", c, b)
	}
	st := p.waitGit(t, gitWebhookWait, "the removal held", func(s apitypes.GitStatus) bool { return s.Held != nil && s.Held.Commit == c4 })
	if !strings.Contains(strings.Join(st.Held.Destructive, "; "), removed) {
		t.Errorf("held for %q, want the release of %s named", st.Held.Destructive, removed)
	}
	if cur := p.currentCommit(t); cur.ID != before.ID {
		t.Fatalf("a held commit changed the current revision to %s (commit %s)", cur.ID, cur.GitCommit)
	}
	if c, b := p.call(t, "POST", "/api/v1/git/approve", `{"commit":"`+before.GitCommit[:12]+`"}`); c != 409 {
		t.Errorf("approving a commit not held: %d %s, want 409", c, b)
	}
	approveChanged(t, p, c4, later)
	if c, b := p.call(t, "POST", "/api/v1/git/approve", `{"commit":"`+c4[:12]+`"}`); c != 200 || !strings.Contains(b, `"outcome":"applied"`) {
		t.Fatalf("approve: %d %s", c, b)
	}
	if cur := p.currentCommit(t); cur.GitCommit != c4 || cur.ID != st.Held.Revision {
		t.Fatalf("after approval the current revision is %s (commit %s), want %s (commit %s)", cur.ID, cur.GitCommit, st.Held.Revision, c4)
	}
}

// approveChanged: node, which the held commit also removes, is deployed
// while it waits, so its plan now releases one machine more than the
// operator approved: `git approve` holds it again, says so and exits 1
// (it exited 0 before), and the status names both releases.
func approveChanged(t *testing.T, p *serveProc, commit, node string) {
	t.Helper()
	p.deployNode(t, node)
	c, out, errs := cli(t, "--server", p.base, "--token", p.tok, "git", "approve", commit[:12])
	if c != 1 || !strings.Contains(out+errs, "held") || strings.Contains(out, ": applied") {
		t.Fatalf("approving a commit whose plan changed: exit %d, %s %s; want 1 and held again", c, out, errs)
	}
	st := p.gitStatus(t)
	if st.Held == nil || !strings.Contains(strings.Join(st.Held.Destructive, "; "), "release "+node) {
		t.Fatalf("held again for %+v, want the release of %s named", st.Held, node)
	}
}

// deployNode deploys node through the API and waits (bounded) for it.
func (p *serveProc) deployNode(t *testing.T, node string) {
	t.Helper()
	code, b := p.call(t, "POST", "/api/v1/tasks", `{"action":"deploy_nodes","node_filter":{"sets":[{"names":["`+node+`"]}]}}`)
	var task struct{ ID, Status string }
	if code != 201 || json.Unmarshal([]byte(b), &task) != nil {
		t.Fatalf("deploy %s: %d %s", node, code, b)
	}
	for i := 0; i < 2400 && task.Status != "succeeded" && task.Status != "failed"; i++ { // 60 s
		time.Sleep(25 * time.Millisecond)
		_, b = p.call(t, "GET", "/api/v1/tasks/"+task.ID, "")
		_ = json.Unmarshal([]byte(b), &task)
	}
	if task.Status != "succeeded" {
		t.Fatalf("deploy %s: %s", node, b)
	}
}

// auditCount is the serve's audit log's length.
func (p *serveProc) auditCount(t *testing.T) int {
	t.Helper()
	code, b := p.call(t, "GET", "/api/v1/audit?limit=1000", "")
	var page apitypes.AuditPage
	if code != 200 || json.Unmarshal([]byte(b), &page) != nil {
		t.Fatalf("GET /audit: %d %s", code, b)
	}
	return len(page.Items)
}
