// Package leader elects one leader among a store's replicas with an etcd
// election (go.etcd.io/etcd/client/v3/concurrency): each replica holds a
// lease it keeps alive; the replica whose key is the oldest under the
// election's prefix leads. A leader's writes go through a store fenced on
// its key (statestore/etcdstore's Fenced): once its lease expires (a crash, a
// pause, a partition) its key is gone and any write it still sends is
// refused, even after another replica took over.
package leader

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// DefaultTTL is the lease a replica holds, in seconds: how long a dead
// leader leads before another takes over.
const DefaultTTL = 10

// Leadership is this replica leading.
type Leadership struct {
	// ID is the replica's, Key and Rev the leader key and the etcd
	// revision it was created at (the fence of the leader's writes).
	ID  string
	Key string
	Rev int64

	sess *concurrency.Session
	el   *concurrency.Election
}

// Campaign waits until replica id leads the election under prefix (or ctx
// ends), holding a lease of ttl seconds (0: DefaultTTL).
func Campaign(ctx context.Context, cl *clientv3.Client, prefix, id string, ttl int) (*Leadership, error) {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	lease, err := cl.Grant(ctx, int64(ttl))
	if err != nil {
		return nil, fmt.Errorf("etcd lease: %w", err)
	}
	// The session keeps the lease alive until ctx ends or it is closed.
	sess, err := concurrency.NewSession(cl, concurrency.WithLease(lease.ID), concurrency.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("etcd lease: %w", err)
	}
	el := concurrency.NewElection(sess, prefix)
	if err := el.Campaign(ctx, id); err != nil {
		_ = sess.Close()
		return nil, fmt.Errorf("election %s: %w", prefix, err)
	}
	return &Leadership{ID: id, Key: el.Key(), Rev: el.Rev(), sess: sess, el: el}, nil
}

// Lost is closed when the lease is gone (expired or revoked): this replica
// no longer leads, and its fenced writes fail.
func (l *Leadership) Lost() <-chan struct{} { return l.sess.Done() }

// Lease is the lease the leadership holds.
func (l *Leadership) Lease() clientv3.LeaseID { return l.sess.Lease() }

// Resign gives the leadership up (another replica may take it at once)
// and ends the lease.
func (l *Leadership) Resign(ctx context.Context) error {
	err := l.el.Resign(ctx)
	if cerr := l.sess.Close(); err == nil {
		err = cerr
	}
	return err
}

// Current is the replica that leads the election under prefix now, and
// the etcd revision its key was created at; ok false when none does.
func Current(ctx context.Context, cl *clientv3.Client, prefix string) (id string, rev int64, ok bool, err error) {
	resp, err := cl.Get(ctx, prefix+"/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		return "", 0, false, err
	}
	return string(resp.Kvs[0].Value), resp.Kvs[0].CreateRevision, true, nil
}

// Proclaim replaces the value the leader key holds (what Current answers)
// without giving the leadership up.
func (l *Leadership) Proclaim(ctx context.Context, val string) error {
	return l.el.Proclaim(ctx, val)
}
