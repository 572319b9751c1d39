package api_test

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/gitsync"
)

// TestApplyDirSSHRemoteRoot: git sync records the remote it follows as
// the revision's root; an ssh remote names its login user
// (ssh://git@host/...), which is no credential, yet the root must hold no
// userinfo at all (provenance refuses it). A commit from such a remote is
// applied, its root without the user.
func TestApplyDirSSHRemoteRoot(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := gitsync.Config{URL: "ssh://git@git.example.net:2222/ops/site.git", Branch: "main", Path: "site", KnownHosts: "/dev/null", SSHKeySecret: "k"}
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	out, err := f.API.ApplyDir(t.Context(), api.DirApply{Dir: exampleDir(t, "url: http://127.0.0.1:5240/MAAS", "url: http://198.51.100.9:5240/MAAS"), Actor: "git-sync", Roots: []string{cfg.Root()},
		GitCommit: strings.Repeat("a", 40), TrustBindings: true})
	if err != nil || out.Result != "created" {
		t.Fatalf("ApplyDir from %s: %+v, %v", cfg.Root(), out, err)
	}
	cur, err := f.Store.Current(t.Context())
	if err != nil || len(cur.Roots) != 1 || cur.Roots[0] != "git:ssh://git.example.net:2222/ops/site.git#main:site" {
		t.Fatalf("the current revision's roots: %q (%v)", cur.Roots, err)
	}
}
