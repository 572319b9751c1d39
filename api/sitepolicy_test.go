package api_test

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
)

// TestApplyDirSitePolicy: with SitePolicy (git sync), the Site's
// lifecycle.destructive of the design in force decides whether a release
// waits for an approval: hold (the default) holds it even when the
// incoming design says apply; once the design in force says apply, the
// release is applied without one. An upload-like apply (no SitePolicy)
// is held whatever the Site says.
func TestApplyDirSitePolicy(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	const node = "r01-cmp02"
	deployed(t, f, node)
	const site, withPolicy = "  domain: lab.example.net\n", "  domain: lab.example.net\n  lifecycle:\n    destructive: apply\n"
	apply := func(what string, sitePolicy bool, remove bool) api.DirApplied {
		t.Helper()
		dir := exampleDir(t, site, withPolicy)
		if remove {
			removeNode(t, dir, node)
		}
		out, err := f.API.ApplyDir(ctx, api.DirApply{Dir: dir, Actor: "git-sync", SitePolicy: sitePolicy, Roots: []string{"git:file:///srv/site.git#main:"}})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return out
	}
	if out := apply("a commit lifting its own hold", true, true); out.Result != "held" || len(out.Held) != 1 || !strings.Contains(out.Held[0], "release "+node) {
		t.Fatalf("a commit that says apply, over a design that says hold: %s %q; want held", out.Result, out.Held)
	}
	if out := apply("the policy alone", true, false); out.Result != "created" {
		t.Fatalf("the policy alone: %s %q; want created", out.Result, out.Held)
	}
	if out := apply("an upload-like apply", false, true); out.Result != "held" {
		t.Fatalf("without SitePolicy: %s; want held", out.Result)
	}
	out := apply("a release under apply", true, true)
	if out.Result != "created" {
		t.Fatalf("a release under lifecycle.destructive apply: %s %q; want created", out.Result, out.Held)
	}
	if cur, err := f.Store.Current(ctx); err != nil || cur.ID != out.Revision {
		t.Fatalf("current revision %v, want %s", err, out.Revision)
	}
}
