package etcdstore_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/slipway-dev/slipway/internal/etcdtest"
	"github.com/slipway-dev/slipway/statestore"
	etcdstore "github.com/slipway-dev/slipway/statestore/etcdstore"
)

// TestAmbiguousCommitAppliesOnce: a Write whose transaction commits but
// whose answer is lost (a leader change between the commit and the
// answer: the client sees Unavailable) is tried again by the store; the
// retry finds the Write's own mark and does not apply it a second time.
// Counted from etcd's keys: one log entry and one record per Write, alone
// and group-committed.
func TestAmbiguousCommitAppliesOnce(t *testing.T) {
	cl := etcdtest.Start(t, 1).Client(t)
	s := newStore(t, cl)
	ctx := t.Context()
	injected := etcdstore.InjectAmbiguous(s, 1)
	seqs, err := s.Write(ctx, statestore.Put("tasks", "t1", []byte("x")), statestore.Append("events", []byte("e1")))
	if err != nil || len(seqs) != 1 || seqs[0] != 1 {
		t.Fatalf("Write after an ambiguous commit: seqs %v, %v (want [1], nil)", seqs, err)
	}
	if injected() != 1 {
		t.Fatalf("%d commits made ambiguous, want 1", injected())
	}
	if n := keysUnder(t, cl, s.Prefix()+"log/events/"); n != 1 {
		t.Fatalf("one Write, its commit's answer lost: %d log entries in etcd, want 1", n)
	}
	// A storm of concurrent Writes (group-committed), a few of whose
	// batches commit ambiguously.
	injected = etcdstore.InjectAmbiguous(s, 5)
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				key := fmt.Sprint("w", w, "-", i)
				if _, err := s.Write(ctx, statestore.Put("tasks", key, []byte("x")), statestore.Append("events", []byte(key))); err != nil {
					errs <- fmt.Errorf("Write %s: %w", key, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if injected() != 5 {
		t.Fatalf("%d commits made ambiguous, want 5", injected())
	}
	want := int64(1 + writers*each)
	if n := keysUnder(t, cl, s.Prefix()+"log/events/"); n != want {
		t.Errorf("%d Writes, 6 commits ambiguous: %d log entries in etcd, want %d", want, n, want)
	}
	if last, err := s.LastSeq(ctx, "events"); err != nil || last != uint64(want) {
		t.Errorf("events' last sequence number %d (%v), want %d", last, err, want)
	}
	if n := keysUnder(t, cl, s.Prefix()+"rec/tasks/"); n != want {
		t.Errorf("%d task records in etcd, want %d", n, want)
	}
}

// TestAmbiguousStagedCommitAppliesOnce: a Write too large for one
// transaction (staged) whose stage commits with its answer lost is not
// staged and applied a second time.
func TestAmbiguousStagedCommitAppliesOnce(t *testing.T) {
	cl := etcdtest.Start(t, 1).Client(t)
	s := newStore(t, cl)
	ctx := t.Context()
	injected := etcdstore.InjectAmbiguous(s, 1)
	var ops []statestore.Op
	for i := range 300 {
		ops = append(ops, statestore.Put("nodes", fmt.Sprint("n", i), []byte("x")))
	}
	seqs, err := s.Write(ctx, append(ops, statestore.Append("events", []byte("big")))...)
	if err != nil || len(seqs) != 1 || seqs[0] != 1 || injected() != 1 {
		t.Fatalf("a staged Write after an ambiguous commit: seqs %v, %v, %d ambiguous (want [1], nil, 1)", seqs, err, injected())
	}
	if n := keysUnder(t, cl, s.Prefix()+"log/events/"); n != 1 {
		t.Errorf("one staged Write, its stage's answer lost: %d log entries in etcd, want 1", n)
	}
	if n := keysUnder(t, cl, s.Prefix()+"rec/nodes/"); n != 300 {
		t.Errorf("%d node records, want 300", n)
	}
	if n := keysUnder(t, cl, s.Prefix()+"stage/"); n != 0 {
		t.Errorf("%d stage keys left, want 0", n)
	}
}
