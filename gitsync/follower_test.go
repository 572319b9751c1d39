package gitsync

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/gitsync/gittest"
	"github.com/slipway-dev/slipway/ingest/archive"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	secretstore "github.com/slipway-dev/slipway/secrets/store"
)

const siteYAML = "apiVersion: slipway/v1\nkind: Site\nmetadata: {name: lab}\nspec: {}\n"

// follow makes a follower of url's main branch, path site/, applying
// into a.
func follow(t *testing.T, a *storeApplier, url string, mod func(*Config), o ...func(*Options)) *Follower {
	t.Helper()
	cfg := Config{URL: url, Path: "site", Interval: "1h", Dir: filepath.Join(t.TempDir(), "gitsync")}
	if mod != nil {
		mod(&cfg)
	}
	opts := Options{Applier: a, Store: a.st, Log: zerolog.Nop()}
	for _, f := range o {
		f(&opts)
	}
	f, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func lastEvent(t *testing.T, f *Follower) Event {
	t.Helper()
	st, err := f.Status(t.Context())
	if err != nil || len(st.Events) == 0 {
		t.Fatalf("status: %v, %d events", err, len(st.Events))
	}
	return st.Events[len(st.Events)-1]
}

// TestFollowFileRemote: a commit is applied with its commit, author and
// message; the same head is not applied again, after a restart either; a commit with malformed
// YAML is recorded invalid with file:line findings and the last good
// revision stays current.
func TestFollowFileRemote(t *testing.T) {
	up := gittest.NewUpstream(t)
	c1 := up.Commit("first site\n\nbody", map[string]string{"site/site.yaml": siteYAML, "README.md": "not part of the design"})
	a := newApplier(t)
	f := follow(t, a, "file://"+up.Bare, nil)
	f.Round(t.Context(), "test")
	if got := a.current(t); got != c1 {
		t.Fatalf("current revision's commit %q, want %s (event %+v)", got, c1, lastEvent(t, f))
	}
	req := a.calls[0]
	if req.Author != "Ada Tester <ada@example.org>" || req.Message != "first site" || req.Roots[0] != "git:file://"+up.Bare+"#main:site" || req.Actor != Actor {
		t.Errorf("apply request %+v", req)
	}
	if _, err := os.Stat(req.Dir); !os.IsNotExist(err) {
		t.Errorf("the extracted design %s was left behind: %v", req.Dir, err)
	}
	f.Round(t.Context(), "test")
	restarted := follow(t, a, "file://"+up.Bare, nil) // a restart: a new follower on the same store
	restarted.Round(t.Context(), "test")
	if len(a.calls) != 1 {
		t.Errorf("the same head was applied again: %d applies", len(a.calls))
	}
	if st, _ := restarted.Status(t.Context()); st.Applied == nil || st.Applied.Commit != c1 || len(st.Events) != 1 {
		t.Errorf("after a restart the status is %+v, want the applied commit and its one event", st)
	}
	c2 := up.Commit("broken", map[string]string{"site/nodes.yaml": "kind: Node\nmetadata: [unclosed\n"})
	f.Round(t.Context(), "test")
	st, _ := f.Status(t.Context())
	if st.Rejected == nil || st.Rejected.Commit != c2 || st.Rejected.Outcome != OutcomeInvalid || len(st.Rejected.Findings) == 0 ||
		!strings.HasPrefix(st.Rejected.Findings[0], "nodes.yaml:") {
		t.Fatalf("invalid commit recorded as %+v", st.Rejected)
	}
	if got := a.current(t); got != c1 || st.Applied.Commit != c1 {
		t.Errorf("after an invalid commit the current revision is %s (status %s), want %s", got, st.Applied.Commit, c1)
	}
	c3 := up.Commit("fixed", map[string]string{"site/nodes.yaml": "", "site/site.yaml": siteYAML + "# fixed\n"})
	f.Round(t.Context(), "test")
	if got := a.current(t); got != c3 {
		t.Errorf("after the fix the current commit is %s, want %s", got, c3)
	}
}

// TestForcePushRefused: a head the applied commit is not an ancestor of
// is refused and the current revision stays; with allow_rewrite it is
// applied. A fast-forward beyond the first fetch's depth is not a
// rewrite.
func TestForcePushRefused(t *testing.T) {
	up := gittest.NewUpstream(t)
	c1 := up.Commit("one", map[string]string{"site/site.yaml": siteYAML})
	a := newApplier(t)
	f := follow(t, a, "file://"+up.Bare, nil)
	f.Round(t.Context(), "test")
	var last string
	for i := range DefaultDepth + 5 { // deeper than a first fetch
		last = up.Commit(fmt.Sprint("step ", i), map[string]string{"site/step.yaml": fmt.Sprintf("# %d\n", i)})
	}
	f.Round(t.Context(), "test")
	if got := a.current(t); got != last {
		t.Fatalf("a fast-forward of %d commits: current %s, want %s (%+v)", DefaultDepth+5, got, last, lastEvent(t, f))
	}
	_ = c1
	gittest.Git(t, up.Work, "checkout", "--quiet", "--orphan", "rewritten")
	rewritten := up.Commit("rewritten history", map[string]string{"site/site.yaml": siteYAML + "# rewritten\n"})
	f.Round(t.Context(), "test")
	ev := lastEvent(t, f)
	if ev.Outcome != OutcomeRefused || !strings.Contains(ev.Reason, "history rewrite") || ev.Commit != rewritten {
		t.Fatalf("force-push: %+v, want refused as a history rewrite", ev)
	}
	if got := a.current(t); got != last {
		t.Fatalf("after a refused force-push the current commit is %s, want %s", got, last)
	}
	g := follow(t, a, "file://"+up.Bare, func(c *Config) { c.AllowRewrite = true; c.Dir = f.cfg.Dir })
	g.status = statusStore{newApplier(t).st} // its own status: last applied unknown to it
	g.Round(t.Context(), "test")
	if got := a.current(t); got != rewritten {
		t.Errorf("with allow_rewrite the current commit is %s, want %s", got, rewritten)
	}
}

// TestDeletedBranchAndUnreachable: a deleted branch and a remote that
// does not answer are recorded with their reason, retried, and change
// nothing.
func TestDeletedBranchAndUnreachable(t *testing.T) {
	up := gittest.NewUpstream(t)
	c1 := up.Commit("one", map[string]string{"site/site.yaml": siteYAML})
	a := newApplier(t)
	f := follow(t, a, "file://"+up.Bare, nil)
	f.Round(t.Context(), "test")
	gittest.Git(t, up.Bare, "update-ref", "-d", "refs/heads/main")
	f.Round(t.Context(), "test")
	ev := lastEvent(t, f)
	if ev.Outcome != OutcomeFailed || !strings.Contains(ev.Reason, "deleted") {
		t.Errorf("deleted branch: %+v", ev)
	}
	st, _ := f.Status(t.Context())
	if st.LastFetch.Error == "" || st.Applied.Commit != c1 || a.current(t) != c1 {
		t.Errorf("deleted branch: status %+v, current %s", st, a.current(t))
	}
	g := follow(t, a, fmt.Sprintf("git://127.0.0.1:%d/site.git", gittest.FreePort(t)), nil)
	g.Round(t.Context(), "test")
	if ev := lastEvent(t, g); ev.Outcome != OutcomeFailed || !strings.Contains(ev.Reason, "retried") {
		t.Errorf("unreachable remote: %+v", ev)
	}
	if a.current(t) != c1 {
		t.Errorf("unreachable remote changed the current revision")
	}
}

// TestOverSizeLimits: a commit whose design is over the limits is
// refused before anything is extracted, a repository whose fetch is over
// 16 times the design limit is refused after its fetch, and the last
// good one stays; a refused head is not fetched again (counted by git
// daemon).
func TestOverSizeLimits(t *testing.T) {
	up := gittest.NewUpstream(t)
	c1 := up.Commit("one", map[string]string{"site/site.yaml": siteYAML})
	a := newApplier(t)
	d := gittest.StartDaemon(t, up.Root)
	lim := archive.Limits{Limits: yamlingest.Limits{FileBytes: 1024, DesignBytes: 4096}, Files: 3}
	f := follow(t, a, d.URL, func(c *Config) { c.Limits = lim })
	f.Round(t.Context(), "test")
	for _, tc := range []struct {
		files map[string]string
		want  string
	}{
		{map[string]string{"site/a.yaml": "#\n", "site/b.yaml": "#\n", "site/c.yaml": "#\n"}, "more than 3 files"},
		{map[string]string{"site/a.yaml": "", "site/b.yaml": "", "site/c.yaml": "", "site/big.yaml": "# " + strings.Repeat("x", 2000) + "\n"}, "designMaxFileBytes"},
		// Outside the design's directory, but fetched: the cache's bound.
		{map[string]string{"site/big.yaml": "", "blob.txt": randomText(t, 400<<10)}, "16 x designMaxBytes"},
	} {
		c := up.Commit("too large", tc.files)
		fetches := d.Fetches()
		f.Round(t.Context(), "test")
		ev := lastEvent(t, f)
		if ev.Outcome != OutcomeRefused || ev.Commit != c || !strings.Contains(ev.Reason, tc.want) {
			t.Errorf("over the limits: %+v, want refused saying %q", ev, tc.want)
		}
		if a.current(t) != c1 {
			t.Errorf("a commit over the limits changed the current revision")
		}
		if d.Fetches() == fetches {
			t.Fatalf("no fetch counted by the daemon")
		}
		fetches = d.Fetches()
		f.Round(t.Context(), "test") // the same head: asked for, not fetched again
		if n := d.Fetches() - fetches; n != 1 || lastEvent(t, f).Commit != c {
			t.Errorf("the refused head again: %d requests to the daemon (want 1, the ls-remote), last event %+v", n, lastEvent(t, f))
		}
	}
}

// TestHTTPToken: a token from the secret store reaches the server
// through GIT_ASKPASS; a wrong one fails without the token in any
// recorded text.
func TestHTTPToken(t *testing.T) {
	up := gittest.NewUpstream(t)
	c1 := up.Commit("one", map[string]string{"site/site.yaml": siteYAML})
	const token = "s3cr3t-t0ken-for-git"
	srv := gittest.StartHTTP(t, up.Root, "deploy", token)
	a := newApplier(t)
	sec, err := secretstore.New(a.st, make([]byte, secretstore.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	if err := sec.Put(t.Context(), "git-token", "wrong-"+token); err != nil {
		t.Fatal(err)
	}
	f := follow(t, a, srv.URL, func(c *Config) { c.TokenSecret, c.Username = "git-token", "deploy" }, func(o *Options) { o.Secrets = sec })
	f.Round(t.Context(), "test")
	st, _ := f.Status(t.Context())
	if ev := lastEvent(t, f); ev.Outcome != OutcomeFailed || srv.Refused.Load() == 0 || a.current(t) != "" {
		t.Fatalf("wrong token: %+v, %d refused", ev, srv.Refused.Load())
	}
	if b := fmt.Sprintf("%+v", st); strings.Contains(b, token) {
		t.Fatalf("the token is in the status: %s", b)
	}
	if err := sec.Put(t.Context(), "git-token", token); err != nil {
		t.Fatal(err)
	}
	f.Round(t.Context(), "test")
	if got := a.current(t); got != c1 || srv.Requests.Load() == 0 {
		t.Fatalf("right token: current %s, want %s (%+v)", got, c1, lastEvent(t, f))
	}
}

// TestHeldThenApprove: a commit whose plan is destructive is held (not
// applied) until approved by its commit; approval applies it.
func TestHeldThenApprove(t *testing.T) {
	up := gittest.NewUpstream(t)
	c1 := up.Commit("one", map[string]string{"site/site.yaml": siteYAML})
	a := newApplier(t)
	f := follow(t, a, "file://"+up.Bare, nil)
	f.Round(t.Context(), "test")
	c2 := up.Commit("remove n1", map[string]string{"site/n1.yaml": "# destroy: true\n"})
	f.Round(t.Context(), "test")
	st, _ := f.Status(t.Context())
	if st.Held == nil || st.Held.Commit != c2 || len(st.Held.Destructive) == 0 || a.current(t) != c1 {
		t.Fatalf("destructive commit: held %+v, current %s", st.Held, a.current(t))
	}
	if _, err := f.Approve(t.Context(), c1[:10], "api:ops", false); !errors.Is(err, ErrNotHeld) {
		t.Errorf("approving another commit: %v, want ErrNotHeld", err)
	}
	ev, err := f.Approve(t.Context(), c2[:12], "api:ops", false)
	if err != nil || ev.Outcome != OutcomeApplied {
		t.Fatalf("approve: %+v %v", ev, err)
	}
	if a.current(t) != c2 || !strings.Contains(a.calls[len(a.calls)-1].Actor, "api:ops") {
		t.Errorf("after approval the current commit is %s, want %s", a.current(t), c2)
	}
	if st, _ := f.Status(t.Context()); st.Held != nil {
		t.Errorf("still held after approval: %+v", st.Held)
	}
}

// randomText is n bytes of hex of random bytes (git compresses it to
// about half).
func randomText(t *testing.T, n int) string {
	b := make([]byte, n/2)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func sign(body []byte, key string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// TestDaemonIntervalAndWebhook: against git daemon, a commit pushed after
// the first round is applied by the interval's rounds; with a long
// interval, by its verified webhook's round (times logged; the waits are
// hang guards); a webhook with a wrong signature, a replayed one and
// one for another branch fetch nothing (counted by the daemon).
func TestDaemonIntervalAndWebhook(t *testing.T) {
	up := gittest.NewUpstream(t)
	up.Commit("one", map[string]string{"site/site.yaml": siteYAML})
	d := gittest.StartDaemon(t, up.Root)
	a := newApplier(t)
	sec, _ := secretstore.New(a.st, make([]byte, secretstore.KeySize))
	const hook = "hook-secret"
	_ = sec.Put(t.Context(), "hook", hook)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f := follow(t, a, d.URL, func(c *Config) { c.Interval = "1s"; c.WebhookSecret = "hook" }, func(o *Options) { o.Secrets = sec })
	done := make(chan error, 1)
	fStart := now()
	go func() { done <- f.Run(ctx) }()
	waitRound(t, f, fStart, hangGuard) // the first round, at the start, is over
	c2 := up.Commit("two", map[string]string{"site/two.yaml": "# two\n"})
	pushed := time.Now()
	waitCommit(t, a, c2, hangGuard) // no webhook: only the interval's round can apply it
	t.Logf("applied %s %s after its push (interval 1 s)", c2[:8], time.Since(pushed).Round(time.Millisecond))

	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	g := follow(t, a, d.URL, func(c *Config) { c.WebhookSecret = "hook"; c.Dir = f.cfg.Dir }, func(o *Options) { o.Secrets = sec })
	gStart := now()
	go func() { done <- g.Run(ctx) }()
	waitRound(t, g, gStart, hangGuard)
	c3 := up.Commit("three", map[string]string{"site/three.yaml": "# three\n"})
	before := d.Fetches()
	body := []byte(`{"ref":"refs/heads/main"}`)
	h := http.Header{"X-Github-Event": {"push"}, "X-Github-Delivery": {"d-1"}, "X-Hub-Signature-256": {sign(body, "wrong")}}
	if _, err := g.Webhook(t.Context(), h, body); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("wrong signature: %v, want ErrUnauthorized", err)
	}
	other := []byte(`{"ref":"refs/heads/feature"}`)
	if r, err := g.Webhook(t.Context(), http.Header{"X-Gitlab-Event": {"Push Hook"}, "X-Gitlab-Token": {hook}}, other); err != nil || r.Status != 202 || !strings.Contains(r.Message, "ignored") {
		t.Fatalf("another branch: %+v %v", r, err)
	}
	time.Sleep(300 * time.Millisecond) // a wrongly started round would have fetched by now
	if n := d.Fetches(); n != before {
		t.Fatalf("%d fetches after refused or ignored webhooks", n-before)
	}
	h.Set("X-Hub-Signature-256", sign(body, hook))
	start := time.Now()
	if r, err := g.Webhook(t.Context(), h, body); err != nil || r.Status != 202 {
		t.Fatalf("valid webhook: %+v %v", r, err)
	}
	waitCommit(t, a, c3, hangGuard) // g's interval is long: only the webhook's round can apply it
	t.Logf("applied %s after %s of its webhook", c3[:8], time.Since(start).Round(time.Millisecond))
	n := d.Fetches()
	if r, err := g.Webhook(t.Context(), h, body); err != nil || r.Status != 200 || !strings.Contains(r.Message, "handled already") {
		t.Fatalf("replayed delivery: %+v %v", r, err)
	}
	time.Sleep(300 * time.Millisecond)
	if d.Fetches() != n {
		t.Errorf("a replayed delivery fetched")
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// hangGuard bounds a wait that ends when its condition holds (under the
// default interval, 1 min, so a follower that fell back to it fails).
const hangGuard = 30 * time.Second

// waitRound waits until a round of f started at or after since is saved.
func waitRound(t *testing.T, f *Follower, since time.Time, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st, err := f.Status(t.Context())
		if err == nil && st.LastFetch != nil && !st.LastFetch.Time.Before(since) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no round within %s", within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitCommit waits until the store's current revision is commit's.
func waitCommit(t *testing.T, a *storeApplier, commit string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for a.current(t) != commit {
		if time.Now().After(deadline) {
			t.Fatalf("commit %s not applied within %s (current %s)", commit[:8], within, a.current(t))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestApproveBindingsNeedsAdmin: a commit held because it changes
// credential bindings is not applied by an approver who may not change
// them (ErrNeedsAdmin, the apply not even asked, still held), as POST
// /designs asks an admin for such a change; one who may applies it.
func TestApproveBindingsNeedsAdmin(t *testing.T) {
	up := gittest.NewUpstream(t)
	c1 := up.Commit("one", map[string]string{"site/site.yaml": siteYAML})
	a := newApplier(t)
	f := follow(t, a, "file://"+up.Bare, nil)
	f.Round(t.Context(), "test")
	c2 := up.Commit("maas elsewhere", map[string]string{"site/n1.yaml": "# destroy: true\n# bindings: true\n"})
	f.Round(t.Context(), "test")
	st, _ := f.Status(t.Context())
	if st.Held == nil || st.Held.Commit != c2 || !st.Held.Bindings {
		t.Fatalf("held: %+v, want %s held for its bindings", st.Held, c2)
	}
	calls := len(a.calls)
	if _, err := f.Approve(t.Context(), c2[:12], "api:ops", false); !errors.Is(err, ErrNeedsAdmin) {
		t.Fatalf("an operator's approval of a binding change: %v, want ErrNeedsAdmin", err)
	}
	if st, _ := f.Status(t.Context()); len(a.calls) != calls || a.current(t) != c1 || st.Held == nil || st.Held.Commit != c2 {
		t.Fatalf("after the refused approval: %d applies (was %d), current %s, held %+v", len(a.calls), calls, a.current(t), st.Held)
	}
	if ev, err := f.Approve(t.Context(), c2[:12], "api:admin", true); err != nil || ev.Outcome != OutcomeApplied || a.current(t) != c2 {
		t.Fatalf("an admin's approval: %+v %v, current %s", ev, err, a.current(t))
	}
}
