package store

import (
	"context"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/statestore/memory"
)

// countingRecords counts the reads of a record.
type countingRecords struct {
	Records
	gets int
}

func (c *countingRecords) Get(ctx context.Context, coll, key string) ([]byte, error) {
	c.gets++
	return c.Records.Get(ctx, coll, key)
}

// TestCache: a secret read again within CacheTTL is not read from the
// state again; Put and Delete through the store are seen at once; a
// change written by another store is seen once CacheTTL has passed.
func TestCache(t *testing.T) {
	ctx := t.Context()
	recs := &countingRecords{Records: memory.New()}
	s := newStore(t, recs, testKey(1))
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	s.now = func() time.Time { return now }
	get := func(want string) {
		t.Helper()
		v, err := s.Get(ctx, "bmc-admin")
		if err != nil || v.Reveal() != want {
			t.Fatalf("Get: %q %v, want %q", v.Reveal(), err, want)
		}
	}
	if err := s.Put(ctx, "bmc-admin", "one"); err != nil {
		t.Fatal(err)
	}
	get("one")
	get("one")
	if recs.gets != 1 {
		t.Errorf("two Gets within %s read the state %d times, want 1", CacheTTL, recs.gets)
	}
	if err := s.Put(ctx, "bmc-admin", "two"); err != nil {
		t.Fatal(err)
	}
	get("two")
	other := newStore(t, recs, testKey(1)) // another process's store over the same state
	if err := other.Put(ctx, "bmc-admin", "three"); err != nil {
		t.Fatal(err)
	}
	get("two")
	now = now.Add(CacheTTL)
	get("three")
	if err := s.Delete(ctx, "bmc-admin"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "bmc-admin"); err == nil {
		t.Fatal("a deleted secret is still answered")
	}
}
