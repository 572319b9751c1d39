package bolt_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bbolt "go.etcd.io/bbolt"

	"github.com/slipway-dev/slipway/internal/testtool"
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

func mustWrite(t testing.TB, s *bolt.Store, ops ...statestore.Op) []uint64 {
	t.Helper()
	seqs, err := s.Write(t.Context(), ops...)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return seqs
}

func TestRecordsReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path, bolt.Options{})
	mustWrite(t, s,
		statestore.Put("nodes", "n1", []byte("node 1")),
		statestore.Put("nodes", "n2", []byte("node 2")),
		statestore.Put("tasks", "t1", []byte("task 1")),
		statestore.Append("events", []byte("e1")),
		statestore.Append("audit", []byte("a1")),
	)
	mustWrite(t, s, statestore.Append("events", []byte("e2")), statestore.Delete("nodes", "n2"))
	if _, err := s.PutRevision(ctx, rev("{}", 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path, bolt.Options{})
	defer s.Close()
	if v, err := s.Get(ctx, "tasks", "t1"); err != nil || string(v) != "task 1" {
		t.Errorf("Get(tasks, t1) after reopen = %q, %v; want \"task 1\"", v, err)
	}
	if _, err := s.Get(ctx, "nodes", "n2"); !errors.Is(err, statestore.ErrNoRecord) {
		t.Errorf("Get(nodes, n2) after reopen: error = %v, want ErrNoRecord (it was deleted)", err)
	}
	recs, err := s.List(ctx, "nodes", "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]statestore.Record{{Key: "n1", Value: []byte("node 1")}}, recs); diff != "" {
		t.Errorf("List(nodes) after reopen (-want +got):\n%s", diff)
	}
	es, err := s.ReadLog(ctx, "events", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []statestore.LogEntry{{Seq: 1, Value: []byte("e1")}, {Seq: 2, Value: []byte("e2")}}
	if diff := cmp.Diff(want, es); diff != "" {
		t.Errorf("ReadLog(events) after reopen (-want +got):\n%s", diff)
	}
	for log, want := range map[string]uint64{"events": 2, "audit": 1} {
		if got, err := s.LastSeq(ctx, log); err != nil || got != want {
			t.Errorf("LastSeq(%s) after reopen = %d, %v; want %d", log, got, err, want)
		}
	}
	// Sequences continue where they were.
	if diff := cmp.Diff([]uint64{3, 2}, mustWrite(t, s,
		statestore.Append("events", []byte("e3")), statestore.Append("audit", []byte("a2")))); diff != "" {
		t.Errorf("seqs of appends after reopen (-want +got):\n%s", diff)
	}
	if _, err := s.Current(ctx); err != nil {
		t.Errorf("Current after reopen: %v", err)
	}
}

// buckets returns the names of the top-level buckets of the file at path.
func buckets(t *testing.T, path string) []string {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var names []string
	err = db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
			names = append(names, string(name))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestRecordsLayout checks the file layout documented in doc.go.
func TestRecordsLayout(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "state.db")
	s := open(t, path, bolt.Options{})
	s.Close()
	initial := []string{"history", "meta", "revision_designs", "revisions"}
	if diff := cmp.Diff(initial, buckets(t, path)); diff != "" {
		t.Fatalf("buckets of a new file (-want +got):\n%s", diff)
	}

	// A file without record buckets (as written before they existed) reads
	// as empty, and reading creates no buckets.
	s = open(t, path, bolt.Options{})
	if _, err := s.Get(ctx, "nodes", "n1"); !errors.Is(err, statestore.ErrNoRecord) {
		t.Errorf("Get on a file without records: error = %v, want ErrNoRecord", err)
	}
	if recs, err := s.List(ctx, "nodes", ""); err != nil || len(recs) != 0 {
		t.Errorf("List on a file without records = %v, %v; want none", recs, err)
	}
	if es, err := s.ReadLog(ctx, "events", 0, 0); err != nil || len(es) != 0 {
		t.Errorf("ReadLog on a file without logs = %v, %v; want none", es, err)
	}
	if seq, err := s.LastSeq(ctx, "events"); err != nil || seq != 0 {
		t.Errorf("LastSeq on a file without logs = %d, %v; want 0", seq, err)
	}
	mustWrite(t, s, statestore.Delete("gone", "k")) // deleting creates nothing either
	s.Close()
	if diff := cmp.Diff(initial, buckets(t, path)); diff != "" {
		t.Fatalf("buckets after reads (-want +got):\n%s", diff)
	}

	s = open(t, path, bolt.Options{})
	mustWrite(t, s,
		statestore.Put("nodes", "n1", []byte("v1")),
		statestore.Append("events", []byte("e1")),
		statestore.Append("events", []byte("e2")),
	)
	s.Close()
	if diff := cmp.Diff(append(slices.Clone(initial), "c/nodes", "l/events"), buckets(t, path), cmpSorted); diff != "" {
		t.Errorf("buckets after Write (-want +got):\n%s", diff)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bbolt.Tx) error {
		if got := string(tx.Bucket([]byte("c/nodes")).Get([]byte("n1"))); got != "v1" {
			t.Errorf("c/nodes n1 = %q, want v1", got)
		}
		var keys []uint64
		var values []string
		err := tx.Bucket([]byte("l/events")).ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				t.Errorf("l/events key %x: want 8 bytes", k)
				return nil
			}
			keys = append(keys, binary.BigEndian.Uint64(k))
			values = append(values, string(v))
			return nil
		})
		if diff := cmp.Diff([]uint64{1, 2}, keys); diff != "" {
			t.Errorf("l/events keys (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"e1", "e2"}, values); diff != "" {
			t.Errorf("l/events values (-want +got):\n%s", diff)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

var cmpSorted = cmp.Transformer("sorted", func(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
})

// countingCtx counts the calls of Err. From call failAt on (0: never), Err
// reports context.Canceled. When hold is set, call holdAt blocks until
// hold is closed (the Write is then inside its transaction).
type countingCtx struct {
	context.Context
	calls  atomic.Int32
	failAt int32
	holdAt int32
	held   chan struct{} // closed when call holdAt began (with hold)
	hold   chan struct{}
}

func (c *countingCtx) Err() error {
	n := c.calls.Add(1)
	if c.hold != nil && n == c.holdAt {
		close(c.held)
		<-c.hold
	}
	if c.failAt > 0 && n >= c.failAt {
		return context.Canceled
	}
	return c.Context.Err()
}

// TestWriteBatchRerun makes one Write of a shared commit fail inside the
// transaction, so that the commit is rolled back and the other Writes run
// again, each alone: they must still be applied once and report their
// seqs once. The interleaving is forced: a first Write holds its commit
// open while 20 Writes and then the failing one queue behind it (counted
// by the store's commit-wait hook), so the 21 share the next commit every
// run, the failing one last.
func TestWriteBatchRerun(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "state.db"), bolt.Options{})
	defer s.Close()
	var queued atomic.Int32
	bolt.SetCommitWait(s, func(context.Context) func() { queued.Add(1); return func() {} })
	// Err is called once before the transaction and once in it: the
	// blocker is held in its transaction, the commit under way.
	blocker := &countingCtx{Context: t.Context(), holdAt: 2, held: make(chan struct{}), hold: make(chan struct{})}
	blockerDone := make(chan error, 1)
	go func() {
		_, err := s.Write(blocker, statestore.Put("nodes", "blocker", []byte("b")))
		blockerDone <- err
	}()
	testtool.WaitUntil(t, func() bool { return closed(blocker.held) }, "the first Write inside its transaction")
	const writers = 20
	ctxs := make([]*countingCtx, writers)
	seqs := make([][]uint64, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		ctxs[i] = &countingCtx{Context: t.Context()}
		value := fmt.Sprintf("writer %d", i)
		wg.Go(func() {
			seqs[i], errs[i] = s.Write(ctxs[i],
				statestore.Put("nodes", value, []byte(value)),
				statestore.Append("events", []byte(value)))
		})
	}
	testtool.WaitUntil(t, func() bool { return queued.Load() == writers }, "20 Writes waiting for the commit under way")
	bad := &countingCtx{Context: t.Context(), failAt: 2}
	badDone := make(chan error, 1)
	go func() {
		_, err := s.Write(bad, statestore.Put("nodes", "bad", nil), statestore.Append("events", []byte("bad")))
		badDone <- err
	}()
	testtool.WaitUntil(t, func() bool { return queued.Load() == writers+1 }, "the failing Write queued last")
	close(blocker.hold)
	if err := <-blockerDone; err != nil {
		t.Fatalf("the first Write: %v", err)
	}
	if err := <-badDone; !errors.Is(err, context.Canceled) {
		t.Errorf("Write cancelled during its transaction: error = %v, want context.Canceled", err)
	}
	wg.Wait()
	checkRerun(t, s, ctxs, seqs, errs)
}

// closed tells whether ch is closed.
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// checkRerun checks that every writer ran in the shared commit and again
// alone (Err: before, in the shared transaction, in its own), and that the
// log holds each writer's event once, at the seq its Write returned.
func checkRerun(t *testing.T, s *bolt.Store, ctxs []*countingCtx, seqs [][]uint64, errs []error) {
	t.Helper()
	want := map[uint64]string{} // events seq -> value, from what Write returned
	reruns := 0
	for i := range ctxs {
		if errs[i] != nil {
			t.Fatalf("writer %d: %v", i, errs[i])
		}
		if len(seqs[i]) != 1 {
			t.Fatalf("writer %d: Write returned seqs %v for its one append", i, seqs[i])
		}
		want[seqs[i][0]] = fmt.Sprintf("writer %d", i)
		if ctxs[i].calls.Load() == 3 {
			reruns++
		}
	}
	if reruns != len(ctxs) {
		t.Errorf("%d of %d writers ran in the shared commit and again alone, want all", reruns, len(ctxs))
	}
	es, err := s.ReadLog(t.Context(), "events", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint64]string{}
	for _, e := range es {
		got[e.Seq] = string(e.Value)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events vs seqs returned by Write (-returned +log):\n%s", diff)
	}
	if _, err := s.Get(t.Context(), "nodes", "bad"); !errors.Is(err, statestore.ErrNoRecord) {
		t.Errorf("record of the failed Write: error = %v, want ErrNoRecord", err)
	}
}

// BenchmarkWriteConcurrent measures Write throughput when many goroutines
// write: each Write puts a 1 KiB node record (4096 distinct keys) and
// appends an event, as the orchestrator engine does for node transitions.
func BenchmarkWriteConcurrent(b *testing.B) {
	for _, goroutines := range []int{1, 8, 64, 256} {
		b.Run(fmt.Sprint("goroutines=", goroutines), func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "state.db"), bolt.Options{})
			defer s.Close()
			record := bytes.Repeat([]byte("r"), 1024)
			event := []byte(`{"time":"2026-01-02T03:04:05.123456789Z","kind":"stage","node":"node-00042","stage":"deploying"}`)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range goroutines {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						_, err := s.Write(b.Context(),
							statestore.Put("nodes", fmt.Sprintf("node-%05d", i%4096), record),
							statestore.Append("events", event))
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
		})
	}
}

// TestWriteCounts: WriteCounts answers the Writes committed (counted
// here from the records the store holds) and the commits that carried
// them; lone Writes each commit alone, however long the linger.
func TestWriteCounts(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "state.db"), bolt.Options{})
	defer s.Close()
	bolt.SetCommitLinger(s, time.Hour) // a lone Write never lingers
	for i := range 3 {
		mustWrite(t, s, statestore.Put("nodes", fmt.Sprint("n", i), []byte("{}")))
	}
	recs, err := s.List(t.Context(), "nodes", "")
	if err != nil {
		t.Fatal(err)
	}
	if w, c := s.WriteCounts(); w != uint64(len(recs)) || c != 3 || len(recs) != 3 {
		t.Errorf("WriteCounts %d writes in %d commits; the store holds %d records, want 3 in 3", w, c, len(recs))
	}
}

// TestLogPagesFilled: a log's entries, appended a few at a time as the
// engine writes its events, fill most of the log's pages: 79% here (48%
// at bbolt's default fill of a half page per split; the 2,000-node
// bench's events log took 2.4 times its data in pages).
func TestLogPagesFilled(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	value := bytes.Repeat([]byte("e"), 300)
	for i := 0; i < 600; i++ {
		ops := make([]statestore.Op, 5)
		for j := range ops {
			ops[j] = statestore.Append("events", value)
		}
		if _, err := s.Write(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bbolt.Tx) error {
		st := tx.Bucket([]byte("l/events")).Stats()
		pages := st.LeafPageN + st.LeafOverflowN
		fill := float64(st.LeafInuse) / float64(pages*db.Info().PageSize)
		if fill < 0.7 {
			t.Errorf("the log's leaf pages are %.0f%% full (%d pages for %d bytes in use), want at least 70%%", 100*fill, pages, st.LeafInuse)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
