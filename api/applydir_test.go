package api_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/design/designtest"
)

// exampleDir writes the example site into a new directory, each file's
// content passed through the replacements (old, new, ...: each must
// apply once).
func exampleDir(t *testing.T, replace ...string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(designtest.ExampleDir(), "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("example files: %v", err)
	}
	dir := t.TempDir()
	done := make([]bool, len(replace)/2)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for i := 0; i+1 < len(replace); i += 2 {
			if !done[i/2] && strings.Contains(s, replace[i]) {
				s, done[i/2] = strings.Replace(s, replace[i], replace[i+1], 1), true
			}
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i, ok := range done {
		if !ok {
			t.Fatalf("no example file holds %q", replace[2*i])
		}
	}
	return dir
}

// auditOf is the audit log's records of route.
func auditOf(t *testing.T, f *fixture, route string) []api.AuditRecord {
	t.Helper()
	var page api.AuditPage
	if code := f.json(t, "GET", "/api/v1/audit?limit=1000", f.Token[api.RoleAdmin], nil, &page); code != http.StatusOK {
		t.Fatalf("audit: %d", code)
	}
	var out []api.AuditRecord
	for _, r := range page.Items {
		if r.Route == route {
			out = append(out, r)
		}
	}
	return out
}

// TestApplyDir: design files on disk are applied as an upload is, with
// the commit's provenance (author, first line of the message) recorded
// in the store and shown by GET /designs and /designs/{id}; the same
// files again are unchanged; each call is audited under its actor.
func TestApplyDir(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	commit := strings.Repeat("ab", 20)
	req := api.DirApply{Dir: exampleDir(t, "address: 10.13.0.101", "address: 10.13.0.160"),
		Roots: []string{"git:https://git.example.net/site.git#main:site"}, GitCommit: commit,
		GitAuthor: "Ada <ada@example.net>", GitMessage: "storage: move cmp01\n\nA long body.", Actor: "git-sync"}
	out, err := f.API.ApplyDir(ctx, req)
	if err != nil || out.Result != "created" || len(out.Revision) != 64 || out.Findings.HasErrors() {
		t.Fatalf("ApplyDir: %+v, %v", out, err)
	}
	h, err := f.Store.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := h[len(h)-1]
	if last.ID != out.Revision || last.GitCommit != commit || last.GitAuthor != "Ada <ada@example.net>" ||
		last.GitMessage != "storage: move cmp01" || last.Roots[0] != req.Roots[0] {
		t.Fatalf("the store's last apply: %+v", last)
	}
	sum, info := lastApply(t, f)
	if sum.GitAuthor != last.GitAuthor || sum.GitMessage != last.GitMessage || info.GitAuthor != last.GitAuthor ||
		info.GitMessage != last.GitMessage || sum.Provenance != "git" {
		t.Errorf("the API's last apply: %+v / %+v", sum, info)
	}
	again, err := f.API.ApplyDir(ctx, req)
	if err != nil || again.Result != "unchanged" || again.Revision != out.Revision {
		t.Fatalf("again: %+v, %v", again, err)
	}
	recs := auditOf(t, f, "ApplyDir")
	if len(recs) != 2 || recs[0].Who.ID != "git-sync" || recs[0].Action != "design.apply" || recs[0].Status != http.StatusCreated ||
		len(recs[0].Targets) != 1 || recs[0].Targets[0] != out.Revision || recs[1].Status != http.StatusOK {
		t.Fatalf("audit records: %+v", recs)
	}
}

// TestApplyDirInvalid: a design with an error is "invalid" with its
// findings (file:line relative to the directory); nothing is stored and
// the audit says why.
func TestApplyDirInvalid(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	before, err := f.Store.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := exampleDir(t)
	if err := os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("kind: Node\nmetadata: {name: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := f.API.ApplyDir(ctx, api.DirApply{Dir: dir, Actor: "git-sync", Roots: []string{"git:file:///srv/site.git#main:"}})
	if err != nil || out.Result != "invalid" || !out.Findings.HasErrors() {
		t.Fatalf("ApplyDir: %+v, %v", out, err)
	}
	named := false
	for _, fd := range out.Findings {
		named = named || fd.File == "broken.yaml" && fd.Line > 0
	}
	if !named {
		t.Errorf("no finding names broken.yaml with a line: %+v", out.Findings)
	}
	after, err := f.Store.History(ctx)
	if err != nil || len(after) != len(before) {
		t.Fatalf("history %d → %d (%v): an invalid design was stored", len(before), len(after), err)
	}
	recs := auditOf(t, f, "ApplyDir")
	if len(recs) != 1 || recs[0].Status != http.StatusUnprocessableEntity || recs[0].Outcome != "failed" || !strings.Contains(recs[0].Detail, "error") {
		t.Fatalf("audit records: %+v", recs)
	}
}

// TestApplyDirBindingsHeld: from an untrusted source, a design that
// changes where credentials go is held (nothing stored) until the
// approval names its revision; a trusted source applies it.
func TestApplyDirBindingsHeld(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	before, err := f.Store.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req := api.DirApply{Dir: exampleDir(t, "url: http://127.0.0.1:5240/MAAS", "url: http://198.51.100.7:5240/MAAS"), Actor: "git-sync",
		Roots: []string{"git:https://git.example.net/site.git#main:site"}}
	out, err := f.API.ApplyDir(ctx, req)
	if err != nil || out.Result != "held" || len(out.Held) == 0 || !out.HeldBindings || !strings.Contains(strings.Join(out.Held, " "), "maas.url") {
		t.Fatalf("ApplyDir: %+v, %v; want held naming maas.url", out, err)
	}
	if h, err := f.Store.History(ctx); err != nil || len(h) != len(before) {
		t.Fatalf("a held design was stored: %d → %d (%v)", len(before), len(h), err)
	}
	wrong := strings.Repeat("0", 64)
	if o, err := f.API.ApplyDir(ctx, withApprove(req, wrong)); err != nil || o.Result != "held" {
		t.Fatalf("approved another revision: %+v, %v; want held", o, err)
	}
	o, err := f.API.ApplyDir(ctx, withApprove(req, out.Approve))
	if err != nil || o.Result != "created" || o.Revision != out.Revision {
		t.Fatalf("approved: %+v, %v", o, err)
	}
	trusted := api.DirApply{Dir: exampleDir(t, "url: http://127.0.0.1:5240/MAAS", "url: http://198.51.100.8:5240/MAAS"),
		Actor: "git-sync", TrustBindings: true}
	if o, err := f.API.ApplyDir(ctx, trusted); err != nil || o.Result != "created" {
		t.Fatalf("trusted: %+v, %v", o, err)
	}
}

func withApprove(r api.DirApply, rev string) api.DirApply {
	r.Approve = rev
	return r
}

// TestApplyDirRefuses: a symbolic link among the design files (it could
// read a file of the server's), a root URL with credentials and a commit
// that is not hex are errors; nothing is stored.
func TestApplyDirRefuses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	before, err := f.Store.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	linked := exampleDir(t, "address: 10.13.0.101", "address: 10.13.0.161")
	outside := filepath.Join(t.TempDir(), "outside.yaml")
	if err := os.WriteFile(outside, []byte("# not the design's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(linked, "zz.yaml")); err != nil {
		t.Fatal(err)
	}
	plain := exampleDir(t, "address: 10.13.0.101", "address: 10.13.0.162")
	for name, c := range map[string]struct {
		req  api.DirApply
		want string
	}{
		"symlink":     {api.DirApply{Dir: linked, Actor: "git-sync"}, "zz.yaml is not a regular file"},
		"url creds":   {api.DirApply{Dir: plain, Actor: "git-sync", Roots: []string{"git:https://user:hunter2@git.example.net/x.git#main"}}, "credentials"},
		"commit":      {api.DirApply{Dir: plain, Actor: "git-sync", GitCommit: "main"}, "hex"},
		"no dir":      {api.DirApply{Dir: filepath.Join(plain, "nope"), Actor: "git-sync"}, "nope"},
		"bad approve": {api.DirApply{Dir: plain, Actor: "git-sync", Approve: "abcd"}, "64 lowercase hex digits"},
	} {
		out, err := f.API.ApplyDir(ctx, c.req)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %+v, %v; want an error naming %q", name, out, err, c.want)
		}
	}
	if h, err := f.Store.History(ctx); err != nil || len(h) != len(before) {
		t.Fatalf("a refused design was stored: %d → %d (%v)", len(before), len(h), err)
	}
}

// removeNode drops node's document from the design files in dir.
func removeNode(t *testing.T, dir, node string) { designtest.RemoveNode(t, dir, node) }
