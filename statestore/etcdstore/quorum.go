package etcdstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/slipway-dev/slipway/internal/backoff"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// quorumKV is the client's KV as the store uses it when the etcd cluster
// may lose its quorum: a read the cluster can't serve linearizably (no
// leader) is served from the member's own copy (serializable: the state
// as that member last heard it), so replicas go on answering reads; a
// write fails at once (the member requires a leader) with an error that
// says the cluster has no quorum and answers 503 (Unavailable). Once the
// cluster has been without a leader for a second, reads go to the
// member's copy straight away: a linearizable try costs seconds of the
// client's own retries (100 of them, each a round trip; over ten seconds
// on a loaded machine), so whether the quorum is back is found out by a
// probe in the background, at most one every 2 s, that no read waits for.
type quorumKV struct {
	kv clientv3.KV
	q  *quorumState
	// ctx ends the probes: the client's own, done when it closes.
	ctx context.Context
}

// probeTimeout bounds one probe for the quorum's return.
const probeTimeout = 10 * time.Second

// quorumState is when the cluster was last found without a leader.
type quorumState struct {
	since atomic.Int64 // unix ns of the first no-leader answer since the last good one; 0: none
	probe atomic.Int64 // unix ns of the last probe started while without one
}

func (s *quorumState) note(err error) {
	switch {
	case err == nil:
		s.since.Store(0)
	case noQuorum(err):
		s.since.CompareAndSwap(0, time.Now().UnixNano())
	}
}

// lostFor is how long the cluster has been without a leader (0: it has one).
func (s *quorumState) lostFor() time.Duration {
	if v := s.since.Load(); v != 0 {
		return time.Since(time.Unix(0, v))
	}
	return 0
}

// probeDue claims the next probe: none started in the last 2 s.
func (s *quorumState) probeDue() bool {
	now := time.Now().UnixNano()
	last := s.probe.Load()
	return now-last >= int64(2*time.Second) && s.probe.CompareAndSwap(last, now)
}

func (q quorumKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	var err error
	if q.q.lostFor() < time.Second {
		var resp *clientv3.GetResponse
		resp, err = q.kv.Get(clientv3.WithRequireLeader(ctx), key, opts...)
		q.q.note(err)
		if err == nil || ctx.Err() != nil || !noQuorum(err) {
			return resp, err
		}
	} else if q.q.probeDue() {
		go q.probe(key)
	}
	resp, serr := q.kv.Get(ctx, key, append(opts, clientv3.WithSerializable())...)
	if serr != nil {
		return nil, quorumErr(cmp.Or(err, serr))
	}
	return resp, nil
}

// probe reads key's count linearizably: an answer means the cluster has a
// leader again.
func (q quorumKV) probe(key string) {
	ctx, cancel := context.WithTimeout(q.ctx, probeTimeout)
	defer cancel()
	_, err := q.kv.Get(clientv3.WithRequireLeader(ctx), key, clientv3.WithCountOnly())
	if q.ctx.Err() == nil { // not the client's close
		q.q.note(err)
	}
}

func (q quorumKV) Put(ctx context.Context, key, val string, opts ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	resp, err := q.kv.Put(clientv3.WithRequireLeader(ctx), key, val, opts...)
	q.q.note(err)
	return resp, quorumErr(err)
}

func (q quorumKV) Delete(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	resp, err := q.kv.Delete(clientv3.WithRequireLeader(ctx), key, opts...)
	q.q.note(err)
	return resp, quorumErr(err)
}

func (q quorumKV) Txn(ctx context.Context) clientv3.Txn {
	return quorumTxn{q.kv.Txn(clientv3.WithRequireLeader(ctx)), q.q}
}

// quorumTxn is a transaction whose failure for want of a quorum says so.
type quorumTxn struct {
	t clientv3.Txn
	q *quorumState
}

func (q quorumTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { return quorumTxn{q.t.If(cs...), q.q} }
func (q quorumTxn) Then(ops ...clientv3.Op) clientv3.Txn { return quorumTxn{q.t.Then(ops...), q.q} }
func (q quorumTxn) Else(ops ...clientv3.Op) clientv3.Txn { return quorumTxn{q.t.Else(ops...), q.q} }

func (q quorumTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := q.t.Commit()
	q.q.note(err)
	return resp, quorumErr(err)
}

// noQuorum reports whether err says the cluster (or the member asked) has
// no leader or can't be reached: not a refusal of the request itself.
func noQuorum(err error) bool {
	var ee rpctypes.EtcdError
	if errors.As(rpctypes.Error(err), &ee) {
		return ee.Code() == codes.Unavailable
	}
	c := status.Code(err)
	return c == codes.Unavailable || c == codes.DeadlineExceeded
}

// quorumErr marks a want of quorum as such (Unavailable); other errors
// pass unchanged.
func quorumErr(err error) error {
	if err == nil || !noQuorum(err) {
		return err
	}
	return unavailable{fmt.Errorf("the etcd cluster can't commit or serve this now: it has no quorum (a majority of its members must answer each other), or none of its members answers: %w", err)}
}

// QuorumWait is how long a write goes on trying while the etcd cluster has
// no leader: losing the leader member (one of three) makes the others
// elect one within a second or two, and the write then commits; a cluster
// without its quorum fails the write once this has passed. A retried
// write reads and compares again what it depends on, and finds its own
// mark when it had committed after all: it is not applied twice
// (writeonce.go).
var QuorumWait = 5 * time.Second

// quorumWaiter paces a write's tries while the cluster has no leader.
type quorumWaiter struct {
	q     *quorumState
	pause backoff.Doubling // 100 ms, doubling to 1 s
}

func newQuorumWaiter(q *quorumState) quorumWaiter {
	return quorumWaiter{q: q, pause: backoff.Doubling{Min: 100 * time.Millisecond, Max: time.Second}}
}

// again waits before another try when err says the cluster has no leader
// and has had none for less than QuorumWait (a write that comes later
// fails at once).
func (q *quorumWaiter) again(ctx context.Context, err error) bool {
	if !isUnavailable(err) || errors.Is(err, ErrFenced) || q.q.lostFor() >= QuorumWait {
		return false
	}
	return q.pause.Wait(ctx) == nil
}

// isUnavailable reports whether err is the store's "can't now" error.
func isUnavailable(err error) bool {
	var u unavailable
	return errors.As(err, &u)
}
