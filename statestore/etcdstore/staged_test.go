package etcdstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slipway-dev/slipway/internal/etcdtest"
	"github.com/slipway-dev/slipway/statestore"
	etcdstore "github.com/slipway-dev/slipway/statestore/etcdstore"
)

// bigWrite is a Write of n records (one replacing the large value of
// "big"), a delete and an append: far more than one transaction takes.
func bigWrite(n int) []statestore.Op {
	ops := []statestore.Op{statestore.Put("tasks", "t1", bytes.Repeat([]byte("x"), 300<<10))} // a blob of its own
	for i := range n {
		ops = append(ops, statestore.Put("results", fmt.Sprintf("t1/n%05d", i), []byte(fmt.Sprintf(`{"node":"n%05d","stage":"pending"}`, i))))
	}
	return append(ops, statestore.Put("tasks", "big", []byte("small now")), statestore.Delete("tasks", "gone"),
		statestore.Append("events", []byte("task t1 created")))
}

// seed writes what bigWrite replaces: a record with a large value (a blob)
// and one it deletes.
func seed(t *testing.T, s *etcdstore.Store) {
	t.Helper()
	if _, err := s.Write(t.Context(), statestore.Put("tasks", "big", bytes.Repeat([]byte("y"), 400<<10)),
		statestore.Put("tasks", "gone", []byte("x")), statestore.Append("events", []byte("seeded"))); err != nil {
		t.Fatal(err)
	}
}

// checkBig checks that bigWrite(n) landed whole and left nothing behind:
// no stage, no blob but the ones records hold.
func checkBig(t *testing.T, cl *clientv3.Client, s *etcdstore.Store, prefix string, n int) {
	t.Helper()
	ctx := t.Context()
	rs, err := s.List(ctx, "results", "t1/")
	if err != nil || len(rs) != n {
		t.Fatalf("results: %d of %d, %v", len(rs), n, err)
	}
	if v, err := s.Get(ctx, "tasks", "big"); err != nil || string(v) != "small now" {
		t.Errorf("the replaced record: %.20q %v", v, err)
	}
	if _, err := s.Get(ctx, "tasks", "gone"); !errors.Is(err, statestore.ErrNoRecord) {
		t.Errorf("the deleted record: %v", err)
	}
	if v, err := s.Get(ctx, "tasks", "t1"); err != nil || len(v) != 300<<10 {
		t.Errorf("the large record: %d bytes, %v", len(v), err)
	}
	if k := keysUnder(t, cl, prefix+"stage/"); k != 0 {
		t.Errorf("%d stage keys left", k)
	}
	if k := blobsUnder(t, cl, prefix); k != 1 {
		t.Errorf("%d blobs left, want 1 (t1's): the replaced value's or the plan's stayed", k)
	}
}

func blobsUnder(t *testing.T, cl *clientv3.Client, prefix string) int {
	resp, err := cl.Get(t.Context(), prefix+"blob/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, kv := range resp.Kvs {
		id, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), prefix+"blob/"), "/")
		ids[id] = true
	}
	return len(ids)
}

// TestStagedWrite: on etcd with its default limits (--max-txn-ops 128,
// --max-request-bytes 1.5 MiB), a Write of 5,000 records commits whole,
// in order with another process's Writes running meanwhile: their log
// entries are numbered around it, none lost.
func TestStagedWrite(t *testing.T) {
	cl := etcdtest.Start(t, 1).Client(t)
	prefix := "/test/staged/"
	a, b := etcdstore.New(cl, prefix), etcdstore.New(cl, prefix) // two processes' stores
	ctx := t.Context()
	seed(t, a)
	const n = 5000
	var wg sync.WaitGroup
	var others []uint64
	var otherErr error
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			seqs, err := b.Write(ctx, statestore.Put("nodes", fmt.Sprint("n", i), []byte("x")), statestore.Append("events", []byte("other")))
			if err != nil {
				otherErr = err
				return
			}
			others = append(others, seqs...)
		}
	}()
	seqs, err := a.Write(ctx, bigWrite(n)...)
	close(stop)
	wg.Wait()
	if err != nil || otherErr != nil {
		t.Fatalf("the big Write: %v; the other process's: %v", err, otherErr)
	}
	checkBig(t, cl, a, prefix, n)
	entries, err := a.ReadLog(ctx, "events", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		if e.Seq != uint64(i+1) {
			t.Fatalf("log entry %d has seq %d: a gap or a duplicate", i, e.Seq)
		}
	}
	if len(entries) != 2+len(others) || string(entries[seqs[0]-1].Value) != "task t1 created" {
		t.Errorf("log: %d entries, want %d; the big Write's (seq %v)", len(entries), 2+len(others), seqs)
	}
	t.Logf("%d records in one Write; %d Writes of another store meanwhile", n, len(others))
}

// TestStagedWriteCrash: a process that stops (as a crash would) after a
// staged Write committed, at any step of applying it, leaves the Write to
// the next writer of any process: it lands whole, before that writer's.
func TestStagedWriteCrash(t *testing.T) {
	cl := etcdtest.Start(t, 1).Client(t)
	for _, stop := range []struct {
		step string
		nth  int
	}{{"committed", 1}, {"applied", 1}, {"applied", 3}} {
		t.Run(fmt.Sprint(stop.step, stop.nth), func(t *testing.T) {
			prefix := fmt.Sprintf("/test/crash-%s-%d/", stop.step, stop.nth)
			a := etcdstore.New(cl, prefix)
			seed(t, a)
			seen := 0
			crash := errors.New("simulated crash")
			etcdstore.SetStageHook(a, func(step string) error {
				if step == stop.step {
					if seen++; seen == stop.nth {
						return crash
					}
				}
				return nil
			})
			const n = 1000
			if _, err := a.Write(t.Context(), bigWrite(n)...); !errors.Is(err, crash) {
				t.Fatalf("the Write went on past its crash: %v", err)
			}
			if k := keysUnder(t, cl, prefix+"stage/"); k == 0 {
				t.Fatal("no stage left by the crash")
			}
			// The next process; one finishes the stage as a new leader
			// does before its engine reads, the others at their Write.
			b := etcdstore.New(cl, prefix)
			if stop.nth == 3 {
				if err := b.FinishStaged(t.Context()); err != nil {
					t.Fatal(err)
				}
				checkBig(t, cl, b, prefix, n)
			}
			seqs, err := b.Write(t.Context(), statestore.Append("events", []byte("after")))
			if err != nil {
				t.Fatal(err)
			}
			checkBig(t, cl, b, prefix, n)
			if len(seqs) != 1 || seqs[0] != 3 {
				t.Errorf("the next Write's entry is %v, want 3 (after the staged Write's)", seqs)
			}
		})
	}
}

// TestStagedWriteFenced: a deposed leader's staged Write is refused
// before anything of it lands.
func TestStagedWriteFenced(t *testing.T) {
	cl := etcdtest.Start(t, 1).Client(t)
	prefix := "/test/staged-fenced/"
	if _, err := cl.Put(t.Context(), "/test/leader", "a"); err != nil {
		t.Fatal(err)
	}
	s := etcdstore.New(cl, prefix).Fenced("/test/leader", 1) // not the key's revision
	_, err := s.Write(t.Context(), bigWrite(500)...)
	if !errors.Is(err, etcdstore.ErrFenced) {
		t.Fatalf("a fenced staged Write: %v", err)
	}
	for _, under := range []string{"rec/", "log/", "logseq/", "stage/"} {
		if k := keysUnder(t, cl, prefix+under); k != 0 {
			t.Errorf("%d keys under %s written by a refused Write", k, under)
		}
	}
}

// TestWriteReplacingBlobs: a Write that looks small but replaces many
// records held in blobs (each blob's delete goes with its record) is
// staged when it turns out too large for one transaction, and drops the
// old blobs.
func TestWriteReplacingBlobs(t *testing.T) {
	cl := etcdtest.Start(t, 1).Client(t)
	prefix := "/test/replacing-blobs/"
	s := etcdstore.New(cl, prefix)
	const n = 70 // 70 puts and 70 blob deletes: over one transaction
	large := bytes.Repeat([]byte("z"), 260<<10)
	for i := range n {
		if _, err := s.Write(t.Context(), statestore.Put("designs", fmt.Sprint("d", i), large)); err != nil {
			t.Fatal(err)
		}
	}
	if b := blobsUnder(t, cl, prefix); b != n {
		t.Fatalf("%d blobs after the seed, want %d", b, n)
	}
	var ops []statestore.Op
	for i := range n {
		ops = append(ops, statestore.Put("designs", fmt.Sprint("d", i), []byte("small")))
	}
	if _, err := s.Write(t.Context(), ops...); err != nil {
		t.Fatal(err)
	}
	rs, err := s.List(t.Context(), "designs", "")
	if err != nil || len(rs) != n {
		t.Fatalf("%d records, %v", len(rs), err)
	}
	for _, r := range rs {
		if string(r.Value) != "small" {
			t.Fatalf("%s: %.10q", r.Key, r.Value)
		}
	}
	if b := blobsUnder(t, cl, prefix); b != 0 {
		t.Errorf("%d blobs left: the replaced values' blobs were not dropped", b)
	}
	if k := keysUnder(t, cl, prefix+"stage/"); k != 0 {
		t.Errorf("%d stage keys left", k)
	}
}
