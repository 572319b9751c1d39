package etcdstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/etcdtest"
	"github.com/slipway-dev/slipway/statestore"
)

// watchKeys runs w.WatchRecords(coll) until the test ends and answers
// the channel of the keys it is called with.
func watchKeys(t *testing.T, w statestore.Watcher, coll string) <-chan string {
	t.Helper()
	keys := make(chan string, 1000)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.WatchRecords(ctx, coll, func(k string) { keys <- k }) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("WatchRecords returned %v after its context was cancelled, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("WatchRecords did not return within 5 s of its context's end")
		}
	})
	return keys
}

// nextKeys reads n keys from keys, failing after a few seconds.
func nextKeys(t *testing.T, keys <-chan string, n int) []string {
	t.Helper()
	var out []string
	timeout := time.After(5 * time.Second)
	for len(out) < n {
		select {
		case k := <-keys:
			out = append(out, k)
		case <-timeout:
			t.Fatalf("after 5 s the watch told of %q, want %d keys", out, n)
		}
	}
	return out
}

// noMoreKeys fails if keys gets anything within a moment.
func noMoreKeys(t *testing.T, keys <-chan string) {
	t.Helper()
	select {
	case k := <-keys:
		t.Errorf("the watch told of %q, want nothing more", k)
	case <-time.After(300 * time.Millisecond):
	}
}

// waitWatching writes coll's keys ready-0, ready-1, … through s until the
// watch of keys tells of the last one written (it tells of what is
// written after it started). The watch tells in commit order, so every
// earlier ready-N has come by then (and was read here): nothing of them
// is left for the test's own keys.
func waitWatching(t *testing.T, s *Store, coll string, keys <-chan string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard
	for i := 0; ; i++ {
		last := fmt.Sprintf("ready-%d", i)
		write(t, s, statestore.Put(coll, last, nil))
		for wait := time.After(200 * time.Millisecond); ; {
			select {
			case k := <-keys:
				if k == last {
					return
				}
				continue // an earlier ready-N
			case <-wait:
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch told of nothing written for a minute")
		}
	}
}

func write(t *testing.T, s *Store, ops ...statestore.Op) {
	t.Helper()
	if _, err := s.Write(t.Context(), ops...); err != nil {
		t.Fatal(err)
	}
}

// TestWatchRecords: a store watching a collection is told, in commit
// order, the key of every record of it another store (another process:
// its own connection) puts or deletes, whatever the value's size (a
// value stored as chunks is one key), and nothing of other collections
// or logs.
func TestWatchRecords(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a, b := New(c.Client(t), "/test/watch/"), New(c.Client(t), "/test/watch/")
	keys := watchKeys(t, b, "tokens")
	waitWatching(t, a, "tokens", keys)
	big := bytes.Repeat([]byte("x"), 300<<10) // over inlineMax: chunks under blob/
	write(t, a, statestore.Put("tokens", "k1", []byte("1")), statestore.Put("other", "k1", []byte("1")))
	write(t, a, statestore.Put("tokens", "k2", big), statestore.Append("events", []byte("e")))
	write(t, a, statestore.Delete("tokens", "k1"))
	write(t, a, statestore.Put("tokens", "n1/d1/a1", []byte("r")), statestore.Put("tokens", "k3", nil))
	write(t, a, statestore.Put("tokens", "k2", big))
	write(t, a, statestore.Delete("tokens", "k2"))
	write(t, a, statestore.Put("tokensx", "k9", nil), statestore.Delete("other", "k1"))
	want := []string{"k1", "k2", "k1", "n1/d1/a1", "k3", "k2", "k2"}
	if got := nextKeys(t, keys, len(want)); !slices.Equal(got, want) {
		t.Errorf("the watch told of %q, want %q", got, want)
	}
	noMoreKeys(t, keys)
}

// TestWatchRecordsCompacted: a watch resuming from a revision the
// history was compacted past tells fn "" (every record may have changed)
// and then the changes from the current revision on.
func TestWatchRecordsCompacted(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a, b := New(c.Client(t), "/test/compacted/"), New(c.Client(t), "/test/compacted/")
	ctx := t.Context()
	write(t, a, statestore.Put("tokens", "k0", nil))
	resp, err := a.c.Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	from := resp.Header.Revision + 1 // where a watch stopped at k0 resumes
	for i := range 20 {
		write(t, a, statestore.Put("tokens", fmt.Sprint("k", i), nil))
	}
	if to, err := a.Compact(ctx, 1); err != nil || to < from {
		t.Fatalf("Compact: to %d, %v; want past %d", to, err, from)
	}
	keys := make(chan string, 100)
	w := newRecordWatch(b, b.recPrefix("tokens"), func(k string) { keys <- k })
	w.next = from
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.run(wctx) }()
	if got := nextKeys(t, keys, 1); got[0] != "" {
		t.Fatalf("a watch resuming from compacted revision %d told of %q first, want \"\"", from, got[0])
	}
	write(t, a, statestore.Put("tokens", "after", nil))
	if got := nextKeys(t, keys, 1); got[0] != "after" {
		t.Errorf("after the compaction the watch told of %q, want \"after\"", got[0])
	}
	noMoreKeys(t, keys)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("the watch returned %v, want context.Canceled", err)
	}
}

// TestWatchRecordsChecks: WatchRecords refuses a bad collection name, a
// done context and a closed store at once.
func TestWatchRecordsChecks(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := New(c.Client(t), "/test/checks/")
	nop := func(string) {}
	if err := s.WatchRecords(t.Context(), "Bad Name", nop); err == nil {
		t.Error("a bad collection name was watched")
	}
	done, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.WatchRecords(done, "tokens", nop); !errors.Is(err, context.Canceled) {
		t.Errorf("with a done context: %v", err)
	}
	s.Close()
	if err := s.WatchRecords(t.Context(), "tokens", nop); !errors.Is(err, errClosed) {
		t.Errorf("on a closed store: %v", err)
	}
}
