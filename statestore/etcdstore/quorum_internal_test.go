package etcdstore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// leaderlessKV answers serializable reads from its copy at once; a
// linearizable read waits for an answer on linear (nil: a leader again,
// else the error), as a member's client does through its retries.
type leaderlessKV struct {
	clientv3.KV
	linear chan error
	tries  atomic.Int32 // linearizable reads begun
}

func (f *leaderlessKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if op := clientv3.OpGet(key, opts...); !op.IsSerializable() {
		f.tries.Add(1)
		select {
		case err := <-f.linear:
			if err != nil {
				return nil, err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &clientv3.GetResponse{Kvs: []*mvccpb.KeyValue{{Key: []byte(key), Value: []byte("copy")}}}, nil
}

// TestReadWithoutQuorumWaitsForNoProbe: once the cluster has been
// without a leader for a second, a read is the member's copy at once,
// though a linearizable read to find out whether the quorum is back is
// due: that probe runs on its own (before, the read that came when a
// probe was due was the probe, and waited through the client's retries:
// over 10 s for GET /nodes of one replica in CI, TestHAQuorum). When the
// probe finds a leader, reads are linearizable again.
func TestReadWithoutQuorumWaitsForNoProbe(t *testing.T) {
	f := &leaderlessKV{linear: make(chan error, 1)}
	q := quorumKV{kv: f, q: &quorumState{}, ctx: t.Context()}
	f.linear <- rpctypes.ErrGRPCNoLeader
	if _, err := q.Get(t.Context(), "k"); err != nil {
		t.Fatalf("the first read without a leader: %v (want the member's copy)", err)
	}
	if q.q.lostFor() == 0 {
		t.Fatal("a no-leader answer was not noted")
	}
	q.q.since.Store(time.Now().Add(-2 * time.Second).UnixNano()) // lost for 2 s; no probe yet
	done := make(chan error, 1)
	go func() {
		_, err := q.Get(t.Context(), "k")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // f answers no linearizable read until told
		t.Fatal("the read waited for the linearizable probe")
	}
	for f.tries.Load() < 2 { // the probe has begun (the first read's try was 1)
		time.Sleep(time.Millisecond)
	}
	f.linear <- nil // the quorum is back
	for q.q.lostFor() != 0 {
		time.Sleep(time.Millisecond)
	}
	f.linear <- nil
	if _, err := q.Get(t.Context(), "k"); err != nil || f.tries.Load() != 3 {
		t.Fatalf("a read with the quorum back: %v, %d linearizable tries (want 3: the first read's, the probe's, this one's)", err, f.tries.Load())
	}
}
