package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/etcdtest"
	"github.com/slipway-dev/slipway/statestore/bolt"
	etcdstore "github.com/slipway-dev/slipway/statestore/etcdstore"
)

// TestStoreMigrate: `store migrate` copies an applied state file into a
// real etcd, which then answers the same current revision; a second run
// is refused (the prefix is not empty); malformed flags are usage errors.
func TestStoreMigrate(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.db")
	if code, out, errs := cli(t, "apply", "--state", state, exampleSite); code != 0 {
		t.Fatalf("apply: %d %s %s", code, out, errs)
	}
	c := etcdtest.Start(t, 1)
	to := "etcd://" + strings.TrimPrefix(c.Endpoints()[0], "http://")
	code, out, errs := cli(t, "store", "migrate", "--from", "bolt:"+state, "--to", to, "--etcd-prefix", "/slipway-test/")
	if code != 0 || !strings.Contains(out, "verified: 1 revisions, 1 applies") {
		t.Fatalf("migrate: %d %s %s", code, out, errs)
	}
	src, err := bolt.Open(state, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := src.Current(t.Context())
	src.Close()
	got, err := etcdstore.New(c.Client(t), "/slipway-test/").Current(t.Context())
	if err != nil || got.ID != want.ID || string(got.Design) != string(want.Design) {
		t.Fatalf("etcd's current revision: %s %v, want %s", got.ID, err, want.ID)
	}
	if code, _, errs := cli(t, "store", "migrate", "--from", "bolt:"+state, "--to", to, "--etcd-prefix", "/slipway-test/"); code == 0 || !strings.Contains(errs, "empty store") {
		t.Errorf("a second migration: %d %s", code, errs)
	}
	for _, args := range [][]string{{"--from", state, "--to", to}, {"--from", "bolt:" + state, "--to", "http://x:1"}, {"--from", "bolt:" + state, "--to", "etcd://nohost"}} {
		if code, _, _ := cli(t, append([]string{"store", "migrate"}, args...)...); code != exitUsage {
			t.Errorf("%v: exit %d, want usage", args, code)
		}
	}
}
