package migrate_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/internal/etcdtest"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
	etcdstore "github.com/slipway-dev/slipway/statestore/etcdstore"
	"github.com/slipway-dev/slipway/statestore/migrate"
)

func rev(design string) statestore.Revision {
	sum := sha256.Sum256([]byte(design))
	return statestore.Revision{ID: hex.EncodeToString(sum[:]), Design: []byte(design), Roots: []string{"site"}, Counts: map[string]int{"Node": 1}}
}

// TestBoltToEtcd: a bbolt store's history (a restored apply among them),
// records (a 1 MiB one too) and logs (1,500 entries) are copied into a
// real etcd and read back the same, sequence numbers and apply times
// included; a second copy into the same prefix is refused.
func TestBoltToEtcd(t *testing.T) {
	ctx := t.Context()
	src, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for _, d := range []string{`{"a":1}`, `{"b":2}`, `{"a":1}`} {
		if _, err := src.PutRevision(ctx, rev(d)); err != nil {
			t.Fatal(err)
		}
	}
	big := bytes.Repeat([]byte("x"), 1<<20)
	ops := []statestore.Op{statestore.Put("nodes", "big", big)}
	for i := range 150 {
		ops = append(ops, statestore.Put("nodes", fmt.Sprintf("n%03d", i), []byte(fmt.Sprint(i))), statestore.Put("tasks", fmt.Sprint(i), nil))
	}
	if _, err := src.Write(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	for i := range 15 {
		var appends []statestore.Op
		for j := range 100 {
			appends = append(appends, statestore.Append("events", []byte(fmt.Sprint(i, j))))
		}
		if _, err := src.Write(ctx, appends...); err != nil {
			t.Fatal(err)
		}
	}
	dst := etcdstore.New(etcdtest.Start(t, 1).Client(t), "/migrated/")
	var steps []string
	rep, err := migrate.Copy(ctx, src, dst, func(s string) { steps = append(steps, s) })
	if err != nil {
		t.Fatalf("copy: %v (steps %v)", err, steps)
	}
	want := migrate.Report{Revisions: 2, Applies: 3, Collections: 2, Logs: 1, Records: 301, LogEntries: 1500}
	if rep != want {
		t.Errorf("report %+v, want %+v", rep, want)
	}
	for _, c := range []string{"nodes", "tasks"} {
		a, _ := src.List(ctx, c, "")
		b, err := dst.List(ctx, c, "")
		if err != nil || !cmp.Equal(a, b) {
			t.Errorf("collection %s differs (%d and %d records) %v", c, len(a), len(b), err)
		}
	}
	a, _ := src.ReadLog(ctx, "events", 0, 0)
	b, _ := dst.ReadLog(ctx, "events", 0, 0)
	if !cmp.Equal(a, b) {
		t.Errorf("the log differs: %d and %d entries", len(a), len(b))
	}
	ha, _ := src.History(ctx)
	hb, _ := dst.History(ctx)
	if diff := cmp.Diff(ha, hb); diff != "" {
		t.Errorf("history (-bolt +etcd):\n%s", diff)
	}
	ca, _ := src.Current(ctx)
	cb, err := dst.Current(ctx)
	if err != nil || !cmp.Equal(ca, cb) {
		t.Errorf("current: %v", err)
	}
	if _, err := migrate.Copy(ctx, src, dst, nil); err == nil || !strings.Contains(err.Error(), "empty store") {
		t.Errorf("a second copy: %v", err)
	}
}
