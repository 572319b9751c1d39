package bolt_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bbolt "go.etcd.io/bbolt"

	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
	"github.com/slipway-dev/slipway/statestore/storetest"
)

func open(t testing.TB, path string, opts bolt.Options) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) statestore.Store {
		return open(t, filepath.Join(t.TempDir(), "state.db"), bolt.Options{})
	})
}

func rev(design string, n int) statestore.Revision {
	return statestore.Revision{
		ID:        fmt.Sprintf("%064x", n),
		Created:   time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC),
		Roots:     []string{"designs"},
		GitCommit: "abc",
		Counts:    map[string]int{"Node": n},
		Design:    []byte(design),
	}
}

func TestReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path, bolt.Options{})
	a, b := rev(`{"a":1}`, 1), rev(`{"b":2}`, 2)
	for _, r := range []statestore.Revision{a, b, a} {
		if _, err := s.PutRevision(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	wantHist, err := s.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path, bolt.Options{})
	defer s.Close()
	gotHist, err := s.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantHist, gotHist); diff != "" {
		t.Errorf("history after reopen (-before +after):\n%s", diff)
	}
	cur, err := s.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, cur); diff != "" {
		t.Errorf("Current after reopen (-want +got):\n%s", diff)
	}
	if res, err := s.PutRevision(ctx, b); err != nil || res != statestore.Restored {
		t.Fatalf("PutRevision(b) after reopen = %v, %v; want restored", res, err)
	}
	h, _ := s.History(ctx)
	if len(h) != 4 || h[3].Seq != 4 {
		t.Errorf("history after reopen and put: %d entries, last Seq %d; want 4, 4", len(h), h[len(h)-1].Seq)
	}
}

func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	first := open(t, path, bolt.Options{})

	const timeout = 100 * time.Millisecond
	start := time.Now()
	second, err := bolt.Open(path, bolt.Options{Timeout: timeout})
	elapsed := time.Since(start)
	if err == nil {
		second.Close()
		t.Fatal("second Open of a locked file succeeded")
	}
	if elapsed > 10*timeout {
		t.Errorf("second Open took %v, want about %v", elapsed, timeout)
	}
	for _, want := range []string{path, "orchestrator serve", "--state"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, path, bolt.Options{Timeout: timeout}).Close()
}

// setSchema overwrites meta/schema_version with raw bbolt, after checking
// what Open wrote.
func setSchema(t *testing.T, path, wantOld, v string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket([]byte("meta"))
		if got := string(meta.Get([]byte("schema_version"))); got != wantOld {
			t.Errorf("schema_version = %q, want %q", got, wantOld)
		}
		return meta.Put([]byte("schema_version"), []byte(v))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSchemaVersion(t *testing.T) {
	for _, tt := range []struct{ version, want string }{
		{"2", "schema version is 2, but this orchestrator only knows schema version 1"},
		{"garbage", `invalid schema version "garbage"`},
	} {
		t.Run(tt.version, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			open(t, path, bolt.Options{}).Close()
			setSchema(t, path, "1", tt.version)
			s, err := bolt.Open(path, bolt.Options{})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q, want it to contain %q and the path", err, tt.want)
			}
		})
	}
}

func TestCreatesDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "yet")
	path := filepath.Join(dir, "state.db")
	s := open(t, path, bolt.Options{})
	if _, err := s.PutRevision(t.Context(), rev("{}", 1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for p, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
	}
}

// design returns about size bytes of design-like JSON.
func design(size int) []byte {
	rnd := rand.New(rand.NewPCG(1, 2))
	var sb strings.Builder
	sb.WriteString(`{"nodes":[`)
	for i := 0; sb.Len() < size; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"kind":"Node","name":"node-%05d","mac":"02:%02x:%02x:%02x:%02x:%02x","rack":"r%d","disk_gb":%d}`,
			i, rnd.IntN(256), rnd.IntN(256), rnd.IntN(256), rnd.IntN(256), rnd.IntN(256), rnd.IntN(40), 128<<rnd.IntN(5))
	}
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

func BenchmarkPutRevision(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "state.db"), bolt.Options{})
	defer s.Close()
	r := rev(string(design(1<<20)), 0)
	b.SetBytes(int64(len(r.Design)))
	n := 0
	for b.Loop() {
		n++
		r.ID = fmt.Sprintf("%064x", n) // new content each time: Created
		if res, err := s.PutRevision(b.Context(), r); err != nil || res != statestore.Created {
			b.Fatalf("PutRevision = %v, %v", res, err)
		}
	}
}
