package etcdstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slipway-dev/slipway/internal/etcdtest"
	"github.com/slipway-dev/slipway/statestore"
	etcdstore "github.com/slipway-dev/slipway/statestore/etcdstore"
	"github.com/slipway-dev/slipway/statestore/storetest"
)

// TestConformance: the state store contract on a real etcd (Debian's
// etcd-server, one member on loopback), each case under a prefix of its
// own.
func TestConformance(t *testing.T) {
	cl := etcdtest.Start(t, 1).Client(t)
	storetest.Run(t, func(t *testing.T) statestore.Store { return newStore(t, cl) })
}

func newStore(t *testing.T, cl *clientv3.Client) *etcdstore.Store {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return etcdstore.New(cl, "/test/"+hex.EncodeToString(b[:])+"/")
}

// keysUnder counts the keys under prefix.
func keysUnder(t *testing.T, cl *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := cl.Get(t.Context(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// TestLargeValuesStayBounded: values past etcd's request limit (a 5 MiB
// design, 3 MiB records) round-trip through chunks; replacing or deleting
// a record removes its chunks in the same transaction, and Sweep removes
// chunks a failed Write left.
func TestLargeValuesStayBounded(t *testing.T) {
	cl := etcdtest.Start(t, 1).Client(t)
	prefix := "/test/bounded/"
	s := etcdstore.New(cl, prefix)
	ctx := t.Context()
	big := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB
	design := bytes.Repeat([]byte(`{"node":"n"},`), 5<<20/13)
	sum := sha256.Sum256(design)
	rev := statestore.Revision{ID: hex.EncodeToString(sum[:]), Design: design}
	if res, err := s.PutRevision(ctx, rev); err != nil || res != statestore.Created {
		t.Fatalf("a 5 MiB design: %v %v", res, err)
	}
	if got, err := s.Current(ctx); err != nil || !bytes.Equal(got.Design, design) {
		t.Fatalf("read back: %d bytes, %v", len(got.Design), err)
	}
	designChunks := keysUnder(t, cl, prefix+"blob/")
	for range 3 {
		if _, err := s.Write(ctx, statestore.Put("c", "k", big)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Get(ctx, "c", "k"); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("3 MiB record: %d bytes, %v", len(got), err)
	}
	if n := keysUnder(t, cl, prefix+"blob/"); n != designChunks+6 {
		t.Errorf("after 3 overwrites of a 3 MiB record: %d chunks, want the design's %d and one record's 6", n, designChunks)
	}
	if _, err := s.Write(ctx, statestore.Delete("c", "k")); err != nil {
		t.Fatal(err)
	}
	if n := keysUnder(t, cl, prefix+"blob/"); n != designChunks {
		t.Errorf("after the delete: %d chunks, want the design's %d", n, designChunks)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = s.Write(cancelled, statestore.Put("c", "k2", big)) // fails: nothing written
	if _, err := cl.Put(ctx, prefix+"blob/0123456789abcdef0123456789abcdef/000000", "left by a Write that failed"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sweep(ctx); err != nil || n != 1 {
		t.Errorf("Sweep: %d, %v; want 1 blob removed", n, err)
	}
	if n := keysUnder(t, cl, prefix+"blob/"); n != designChunks {
		t.Errorf("after Sweep: %d chunks, want %d", n, designChunks)
	}
	if got, err := s.Current(ctx); err != nil || !bytes.Equal(got.Design, design) {
		t.Fatalf("the design after Sweep: %v", err)
	}
}

// TestTwoClientsOneLog: two stores on two connections (two processes)
// appending to one log at once get every sequence number once.
func TestTwoClientsOneLog(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a, b := etcdstore.New(c.Client(t), "/test/shared/"), etcdstore.New(c.Client(t), "/test/shared/")
	ctx := t.Context()
	var mu sync.Mutex
	seen := map[uint64]int{}
	var wg sync.WaitGroup
	for i := range 8 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				seqs, err := s.Write(ctx, statestore.Append("events", []byte(fmt.Sprint(i, j))), statestore.Put("last", fmt.Sprint(i), []byte(fmt.Sprint(j))))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[seqs[0]]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 160 {
		t.Fatalf("%d distinct sequence numbers, want 160", len(seen))
	}
	for seq := uint64(1); seq <= 160; seq++ {
		if seen[seq] != 1 {
			t.Errorf("seq %d given %d times", seq, seen[seq])
		}
	}
	if last, err := b.LastSeq(ctx, "events"); err != nil || last != 160 {
		t.Errorf("LastSeq %d, %v", last, err)
	}
}

// TestCompactBoundsHistory: after 200 writes of one record, Compact keeping
// 20 revisions drops the older values from etcd's history (reading one is
// "compacted") and keeps the current one.
func TestCompactBoundsHistory(t *testing.T) {
	cl := etcdtest.Start(t, 1).Client(t)
	s := newStore(t, cl)
	ctx := t.Context()
	var first int64
	for i := range 200 {
		if _, err := s.Write(ctx, statestore.Put("nodes", "n1", []byte(fmt.Sprint(i)))); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			resp, err := cl.Get(ctx, "x")
			if err != nil {
				t.Fatal(err)
			}
			first = resp.Header.Revision
		}
	}
	to, err := s.Compact(ctx, 20)
	if err != nil || to <= first {
		t.Fatalf("Compact: to %d (first write at %d), %v", to, first, err)
	}
	if _, err := cl.Get(ctx, "x", clientv3.WithRev(first)); err == nil || !strings.Contains(err.Error(), "compacted") {
		t.Errorf("reading revision %d after compacting to %d: %v", first, to, err)
	}
	if got, err := s.Get(ctx, "nodes", "n1"); err != nil || string(got) != "199" {
		t.Errorf("the current value: %q %v", got, err)
	}
}
