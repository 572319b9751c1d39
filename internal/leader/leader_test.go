package leader_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/etcdtest"
	"github.com/slipway-dev/slipway/internal/leader"
	"github.com/slipway-dev/slipway/statestore"
	etcdstore "github.com/slipway-dev/slipway/statestore/etcdstore"
)

// TestDeposedLeaderCannotWrite: replica A leads and writes through a store
// fenced on its key; its lease then goes (revoked here, as expiry would
// end it while A is paused or cut off); B takes over; A's late write is
// refused (ErrFenced, nothing written) while B's goes through; A learns it
// lost (Lost closes).
func TestDeposedLeaderCannotWrite(t *testing.T) {
	c := etcdtest.Start(t, 1)
	clA, clB := c.Client(t), c.Client(t)
	ctx := t.Context()
	const election = "/test/election"
	a, err := leader.Campaign(ctx, clA, election, "replica-a", 5)
	if err != nil {
		t.Fatal(err)
	}
	if id, rev, ok, err := leader.Current(ctx, clB, election); err != nil || !ok || id != "replica-a" || rev != a.Rev {
		t.Fatalf("current leader: %q %d %v %v", id, rev, ok, err)
	}
	storeA := etcdstore.New(clA, "/test/state/").Fenced(a.Key, a.Rev)
	if _, err := storeA.Write(ctx, statestore.Put("nodes", "n1", []byte("by a"))); err != nil {
		t.Fatalf("the leader's write: %v", err)
	}
	won := make(chan *leader.Leadership, 1)
	go func() {
		b, err := leader.Campaign(ctx, clB, election, "replica-b", 5)
		if err != nil {
			t.Error(err)
		}
		won <- b
	}()
	select {
	case <-won:
		t.Fatal("B leads while A's lease lives")
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := clA.Revoke(ctx, a.Lease()); err != nil { // A's lease ends
		t.Fatal(err)
	}
	var b *leader.Leadership
	select {
	case b = <-won:
	case <-time.After(10 * time.Second):
		t.Fatal("B did not take over within 10 s of A's lease ending")
	}
	select {
	case <-a.Lost():
	case <-time.After(10 * time.Second):
		t.Error("A was not told it lost")
	}
	if _, err := storeA.Write(ctx, statestore.Put("nodes", "n1", []byte("late, by a"))); !errors.Is(err, etcdstore.ErrFenced) {
		t.Fatalf("the deposed leader's late write: %v, want ErrFenced", err)
	}
	rev := statestore.Revision{ID: "aa00000000000000000000000000000000000000000000000000000000000000", Design: []byte("{}")}
	if _, err := storeA.PutRevision(ctx, rev); !errors.Is(err, etcdstore.ErrFenced) {
		t.Fatalf("the deposed leader's apply: %v, want ErrFenced", err)
	}
	storeB := etcdstore.New(clB, "/test/state/").Fenced(b.Key, b.Rev)
	if got, err := storeB.Get(ctx, "nodes", "n1"); err != nil || string(got) != "by a" {
		t.Fatalf("after A's late write: %q %v", got, err)
	}
	if _, err := storeB.Write(ctx, statestore.Put("nodes", "n1", []byte("by b"))); err != nil {
		t.Fatalf("the new leader's write: %v", err)
	}
	if err := b.Resign(context.WithoutCancel(ctx)); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, _ := leader.Current(ctx, clA, election); ok {
		t.Error("a leader after B resigned")
	}
}
