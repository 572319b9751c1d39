package bolt_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

func TestViewRecord(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "state.db"), bolt.Options{})
	defer s.Close()
	mustWrite(t, s, statestore.Put("c", "k", []byte("value")), statestore.Put("c", "empty", nil))
	var got []byte
	if err := s.ViewRecord(ctx, "c", "k", func(v []byte) error { got = bytes.Clone(v); return nil }); err != nil {
		t.Fatal(err)
	}
	if string(got) != "value" {
		t.Fatalf("ViewRecord = %q, want %q", got, "value")
	}
	called := false
	if err := s.ViewRecord(ctx, "c", "empty", func(v []byte) error { called = len(v) == 0; return nil }); err != nil || !called {
		t.Fatalf("empty value: called %v, err %v", called, err)
	}
	for _, c := range []struct{ coll, key string }{{"c", "absent"}, {"nocoll", "k"}} {
		err := s.ViewRecord(ctx, c.coll, c.key, func([]byte) error { t.Fatal("fn called for an absent record"); return nil })
		if !errors.Is(err, statestore.ErrNoRecord) {
			t.Fatalf("%s/%s: err %v, want ErrNoRecord", c.coll, c.key, err)
		}
	}
	mine := errors.New("mine")
	if err := s.ViewRecord(ctx, "c", "k", func([]byte) error { return mine }); err != mine {
		t.Fatalf("fn's error: got %v, want it as it is", err)
	}
	if err := s.ViewRecord(ctx, "Bad Name", "k", func([]byte) error { return nil }); err == nil {
		t.Fatal("invalid collection name accepted")
	}
	if err := s.ViewRecord(ctx, "c", "", func([]byte) error { return nil }); err == nil {
		t.Fatal("empty key accepted")
	}
}

// TestReadAfterWrite: every read that starts after a Write returned sees
// it, through the shared read transaction the reads before it opened
// (one is open before each Write here). It fails if a commit does not
// retire the shared snapshot.
func TestReadAfterWrite(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "state.db"), bolt.Options{})
	defer s.Close()
	// Pages to reuse: the Writes below do not grow the file (a commit that
	// does waits for every read transaction, so that a snapshot never
	// retired would hang this test rather than fail it).
	mustWrite(t, s, statestore.Put("c", "big", bytes.Repeat([]byte("x"), 1<<20)))
	mustWrite(t, s, statestore.Delete("c", "big"))
	mustWrite(t, s, statestore.Put("c", "other", []byte("x")))
	for i := range 50 {
		if _, err := s.Get(ctx, "c", "other"); err != nil { // opens (or reuses) the snapshot
			t.Fatal(err)
		}
		want := []byte(strconv.Itoa(i))
		mustWrite(t, s, statestore.Put("c", "k", want))
		if got, err := s.Get(ctx, "c", "k"); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Get after Put %d: %q, %v", i, got, err)
		}
		var viewed []byte
		if err := s.ViewRecord(ctx, "c", "k", func(v []byte) error { viewed = bytes.Clone(v); return nil }); err != nil || !bytes.Equal(viewed, want) {
			t.Fatalf("ViewRecord after Put %d: %q, %v", i, viewed, err)
		}
		mustWrite(t, s, statestore.Delete("c", "k"))
		if _, err := s.Get(ctx, "c", "k"); !errors.Is(err, statestore.ErrNoRecord) {
			t.Fatalf("Get after Delete %d: %v, want ErrNoRecord", i, err)
		}
		// A collection created after the snapshot was opened is seen too.
		coll := fmt.Sprintf("new%d", i)
		if _, err := s.Get(ctx, coll, "k"); !errors.Is(err, statestore.ErrNoRecord) {
			t.Fatalf("Get of a collection not yet written: %v", err)
		}
		mustWrite(t, s, statestore.Put(coll, "k", want))
		if got, err := s.Get(ctx, coll, "k"); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Get in a new collection: %q, %v", got, err)
		}
	}
	// PutRevision commits through its own path: it retires the snapshot too.
	if _, err := s.Get(ctx, "c", "other"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutRevision(ctx, rev(`{"a":1}`, 1)); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, statestore.Put("c", "k", []byte("after revision")))
	if got, err := s.Get(ctx, "c", "k"); err != nil || string(got) != "after revision" {
		t.Fatalf("Get after PutRevision and Put: %q, %v", got, err)
	}
}

// TestReadsDuringWrites: readers never see a value older than the last
// Write that returned before their read started, while the file grows
// (commits remap it, waiting for the read transactions); then Close
// returns with reads just done. Run it with -race too.
func TestReadsDuringWrites(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "state.db"), bolt.Options{})
	mustWrite(t, s, statestore.Put("c", "n", []byte("0")))
	var committed atomic.Int64 // the last value whose Write returned
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				floor := committed.Load()
				var n int64
				var err error
				if r%2 == 0 {
					var b []byte
					if b, err = s.Get(ctx, "c", "n"); err == nil {
						n, err = strconv.ParseInt(string(b), 10, 64)
					}
				} else {
					err = s.ViewRecord(ctx, "c", "n", func(v []byte) (err error) {
						n, err = strconv.ParseInt(string(v), 10, 64)
						return err
					})
				}
				if err == nil && n < floor {
					err = fmt.Errorf("read %d after the Write of %d had returned", n, floor)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	big := bytes.Repeat([]byte("x"), 64<<10) // grows the file: commits remap it
	deadline := time.Now().Add(2 * time.Second)
	for i := int64(1); i <= 300 && time.Now().Before(deadline); i++ {
		mustWrite(t, s, statestore.Put("c", "n", []byte(strconv.FormatInt(i, 10))),
			statestore.Put("big", strconv.FormatInt(i, 10), big))
		committed.Store(i)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "c", "n"); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with the shared read transaction open")
	}
	if _, err := s.Get(ctx, "c", "n"); err == nil {
		t.Fatal("Get after Close succeeded")
	}
	if err := s.ViewRecord(ctx, "c", "n", func([]byte) error { return nil }); err == nil {
		t.Fatal("ViewRecord after Close succeeded")
	}
}

// BenchmarkGet reads a 2 KB record (a token record with its stored
// answer) by key, as the introspection API does on a token's first
// request: Get (a copy) and ViewRecord (none).
func BenchmarkGet(b *testing.B) {
	ctx := b.Context()
	s := open(b, filepath.Join(b.TempDir(), "state.db"), bolt.Options{})
	defer s.Close()
	const n = 10000
	val := bytes.Repeat([]byte("v"), 2048)
	var ops []statestore.Op
	for i := range n {
		ops = append(ops, statestore.Put("node_tokens", fmt.Sprintf("%064x", i), val))
	}
	mustWrite(b, s, ops...)
	b.Run("Get", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, err := s.Get(ctx, "node_tokens", fmt.Sprintf("%064x", i%n)); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	})
	b.Run("ViewRecord", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if err := s.ViewRecord(ctx, "node_tokens", fmt.Sprintf("%064x", i%n), func([]byte) error { return nil }); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	})
}

// TestSnapshotOpenedBeforeWrite: a read transaction that began before a
// Write committed, and would be shared after the Write returned, is not
// shared: the reads after the Write see it. It fails if a snapshot is
// shared without checking that no commit started or ended since its
// transaction began.
func TestSnapshotOpenedBeforeWrite(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "state.db"), bolt.Options{})
	defer s.Close()
	// Grow the file and free what grew it, so that the Writes below reuse
	// pages and do not remap the file (which would wait for the read
	// transaction they run inside of).
	mustWrite(t, s, statestore.Put("c", "big", bytes.Repeat([]byte("x"), 1<<20)))
	mustWrite(t, s, statestore.Delete("c", "big"))
	mustWrite(t, s, statestore.Put("c", "k", []byte("1")))
	for i := 2; i < 6; i++ {
		mustWrite(t, s, statestore.Put("c", "other", nil)) // no snapshot is current: the Get below opens one
		want := strconv.Itoa(i)
		once := true
		bolt.SetSnapshotOpened(s, func() {
			if once { // the reader's transaction began: a Write commits and returns before it is shared
				once = false
				mustWrite(t, s, statestore.Put("c", "k", []byte(want)))
			}
		})
		// Either value is right for the read the Write ran inside of.
		if _, err := s.Get(ctx, "c", "k"); err != nil {
			t.Fatal(err)
		}
		bolt.SetSnapshotOpened(s, nil)
		if got, err := s.Get(ctx, "c", "k"); err != nil || string(got) != want {
			t.Fatalf("Get after the Write of %s returned: %q, %v", want, got, err)
		}
	}
}
