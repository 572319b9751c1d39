package etcdstore

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultKeepRevisions is how many of etcd's latest revisions Compact
// keeps: the history a watch or a slow reader may still ask for.
const DefaultKeepRevisions = 10000

// Compact drops etcd's history of every key older than the latest keep
// revisions (0: DefaultKeepRevisions), so the keyspace holds the current
// values and a bounded history, not every value ever written; it answers
// the revision compacted to (0: nothing to drop). It compacts the whole
// cluster's keyspace, as etcd does: run it from one replica (the leader).
func (s *Store) Compact(ctx context.Context, keep int64) (int64, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	if keep <= 0 {
		keep = DefaultKeepRevisions
	}
	resp, err := s.kv.Get(ctx, s.prefix+"histseq", clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	to := resp.Header.Revision - keep
	if to <= 0 {
		return 0, nil
	}
	if _, err := s.c.Compact(ctx, to, clientv3.WithCompactPhysical()); err != nil {
		return 0, err
	}
	return to, nil
}

// RunCompactor compacts every interval until ctx ends, keeping keep
// revisions; onError hears what failed (the next round tries again).
func (s *Store) RunCompactor(ctx context.Context, every time.Duration, keep int64, onError func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.Compact(ctx, keep); err != nil && ctx.Err() == nil && onError != nil {
				onError(err)
			}
		}
	}
}

// CheckLimits checks that the cluster takes the largest transaction the
// store sends (under etcd's default --max-txn-ops, 128, unless SetLimits
// said more), a read-only transaction of that many gets; a member started
// with a lower --max-txn-ops refuses it, and the error names the setting.
func (s *Store) CheckLimits(ctx context.Context) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	gets := make([]clientv3.Op, s.lim.ops())
	for i := range gets {
		gets[i] = clientv3.OpGet(s.prefix+"histseq", clientv3.WithCountOnly())
	}
	_, err := s.kv.Txn(ctx).Then(gets...).Commit()
	return s.limitsErr(err, len(gets))
}
