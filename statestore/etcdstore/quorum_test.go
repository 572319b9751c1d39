package etcdstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slipway-dev/slipway/internal/etcdtest"
	"github.com/slipway-dev/slipway/statestore"
)

// TestQuorumLoss: with one member of three gone the store works as
// before (when it was etcd's leader, the write waits for the others to
// elect one: it failed with "leader changed" before); with two gone a write fails within seconds with an error that
// names the lost quorum and answers Unavailable, while reads still answer
// (the surviving member's copy); with the members back, writes commit
// again by themselves.
func TestQuorumLoss(t *testing.T) {
	ec := etcdtest.Start(t, 3)
	cl := ec.Client(t)
	s := newStore(t, cl)
	put := func(v string) error {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		_, err := s.Write(ctx, statestore.Put("c", "k", []byte(v)))
		return err
	}
	if err := put("one"); err != nil {
		t.Fatal(err)
	}
	lead := raftLeader(t, ec, cl) // the member whose loss makes the others elect another
	ec.Members[lead].Stop()
	if err := put("two"); err != nil {
		t.Fatalf("one member of three down (etcd's leader): %v", err)
	}
	ec.Members[(lead+1)%3].Stop()
	begun := time.Now()
	err := put("three")
	var ua interface{ Unavailable() bool }
	if err == nil || !errors.As(err, &ua) || !strings.Contains(err.Error(), "no quorum") {
		t.Fatalf("a write without quorum: %v (want an Unavailable error naming the quorum)", err)
	}
	t.Logf("a write without quorum failed after %s: %v", time.Since(begun).Round(time.Millisecond), err)
	if took := time.Since(begun); took > 30*time.Second {
		t.Errorf("the write took %s to fail", took)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if v, err := s.Get(ctx, "c", "k"); err != nil || string(v) != "two" {
		t.Fatalf("a read without quorum: %q %v (want the last committed value)", v, err)
	}
	ec.Members[lead].Restart(t)
	ec.Members[(lead+1)%3].Restart(t)
	deadline := time.Now().Add(30 * time.Second)
	for put("four") != nil {
		if time.Now().After(deadline) {
			t.Fatal("writes did not commit again within 30 s of the members' return")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestCheckLimits: a member on etcd's default limits takes the store's
// largest transaction; one started with a lower --max-txn-ops is refused
// at the check, naming the setting.
func TestCheckLimits(t *testing.T) {
	s := newStore(t, etcdtest.Start(t, 1).Client(t))
	if err := s.CheckLimits(t.Context()); err != nil {
		t.Fatalf("etcd's defaults: %v", err)
	}
	low := newStore(t, etcdtest.StartArgs(t, 1, "--max-txn-ops", "64").Client(t))
	err := low.CheckLimits(t.Context())
	if err == nil || !strings.Contains(err.Error(), "--max-txn-ops") {
		t.Fatalf("--max-txn-ops 64: %v", err)
	}
}

// raftLeader is the index of the member etcd's raft leader is.
func raftLeader(t *testing.T, ec *etcdtest.Cluster, cl *clientv3.Client) int {
	t.Helper()
	for i, m := range ec.Members {
		st, err := cl.Status(t.Context(), m.ClientURL)
		if err == nil && st.Leader == st.Header.MemberId {
			return i
		}
	}
	t.Fatal("no member says it leads")
	return -1
}
