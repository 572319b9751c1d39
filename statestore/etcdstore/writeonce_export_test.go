package etcdstore

import (
	"context"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// InjectAmbiguous makes s's next n conditional transactions (a Write's
// commit, not its reads) commit on the cluster and then fail as a leader
// change does between the commit and its answer: the client sees
// Unavailable although the writes are applied. It answers how many
// commits were made ambiguous so far.
func InjectAmbiguous(s *Store, n int64) func() int64 {
	a := &ambiguousKV{KV: s.kv.kv}
	a.left.Store(n)
	s.kv.kv = a
	return a.done.Load
}

type ambiguousKV struct {
	clientv3.KV
	left, done atomic.Int64
}

func (a *ambiguousKV) Txn(ctx context.Context) clientv3.Txn {
	return &ambiguousTxn{Txn: a.KV.Txn(ctx), kv: a}
}

type ambiguousTxn struct {
	clientv3.Txn
	kv  *ambiguousKV
	ifs bool
}

func (t *ambiguousTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.Txn, t.ifs = t.Txn.If(cs...), len(cs) > 0
	return t
}

func (t *ambiguousTxn) Then(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Then(ops...); return t }
func (t *ambiguousTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Else(ops...); return t }

func (t *ambiguousTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := t.Txn.Commit()
	if err != nil || !t.ifs || !resp.Succeeded || t.kv.left.Add(-1) < 0 {
		return resp, err
	}
	t.kv.done.Add(1)
	return nil, status.Error(codes.Unavailable, "injected: the etcd leader changed after the commit, before its answer")
}
