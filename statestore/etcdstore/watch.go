package etcdstore

import (
	"context"
	"errors"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slipway-dev/slipway/internal/backoff"
	"github.com/slipway-dev/slipway/statestore"
)

// Backoff of a watch that ended while its context is alive.
const (
	watchBackoffMin = 100 * time.Millisecond
	watchBackoffMax = 2 * time.Second
)

// errCompacted ends a watch whose next revision was compacted away.
var errCompacted = errors.New("etcd state store: the watched history was compacted")

// WatchRecords calls fn with the key of every record of coll put or
// deleted after the call began, in commit order, until ctx ends
// (statestore.Watcher). It watches the collection's keys from the
// revision it read first, asking for a leader (a member cut off from
// the quorum closes the watch rather than stay silent). A watch that
// ends (a member down, no leader) is resumed after the last revision
// seen, after a backoff; when that revision was compacted away, fn gets
// "" and the watch resumes from the current revision. It returns ctx's
// error, or errClosed once the store is closed.
func (s *Store) WatchRecords(ctx context.Context, coll string, fn func(key string)) error {
	if err := s.checkName(ctx, "collection", coll); err != nil {
		return err
	}
	w := newRecordWatch(s, s.recPrefix(coll), fn)
	return w.run(ctx)
}

// recordWatch is one WatchRecords call.
type recordWatch struct {
	s      *Store
	prefix string
	fn     func(key string)
	next   int64 // the revision to watch from; 0: read the current one
	missed bool  // changes may have been missed: fn("") once next is known
	wait   backoff.Doubling
}

func newRecordWatch(s *Store, prefix string, fn func(key string)) *recordWatch {
	return &recordWatch{s: s, prefix: prefix, fn: fn, wait: backoff.Doubling{Min: watchBackoffMin, Max: watchBackoffMax}}
}

// run watches until ctx ends or the store is closed, resuming the watch
// each time it ends.
func (w *recordWatch) run(ctx context.Context) error {
	for {
		if err := w.s.check(ctx); err != nil {
			return err
		}
		err := w.start(ctx)
		if err == nil {
			began := time.Now()
			err = w.follow(ctx)
			if time.Since(began) > watchBackoffMax {
				w.wait.Reset() // it worked a while: back off from the start
			}
		}
		if errors.Is(err, errCompacted) {
			continue // from the current revision, at once
		}
		if err := w.backoff(ctx); err != nil {
			return err
		}
	}
}

// start reads the current revision when the watch has none to resume
// from, and tells fn of what it may have missed.
func (w *recordWatch) start(ctx context.Context) error {
	if w.next != 0 {
		return nil
	}
	resp, err := w.s.c.Get(clientv3.WithRequireLeader(ctx), w.prefix, clientv3.WithCountOnly())
	if err != nil {
		w.missed = true // the changes until the read succeeds
		return err
	}
	w.next = resp.Header.Revision + 1
	if w.missed {
		w.missed = false
		w.fn("")
	}
	return nil
}

// follow watches from w.next until the watch ends, calling fn for each
// event; it answers why it ended (errCompacted: from the current
// revision next).
func (w *recordWatch) follow(ctx context.Context) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for resp := range w.s.c.Watch(wctx, w.prefix, clientv3.WithPrefix(), clientv3.WithRev(w.next)) {
		if resp.CompactRevision != 0 {
			w.next, w.missed = 0, true
			return errCompacted
		}
		if err := resp.Err(); err != nil {
			return err
		}
		for _, ev := range resp.Events {
			w.fn(strings.TrimPrefix(string(ev.Kv.Key), w.prefix))
			w.next = ev.Kv.ModRevision + 1
		}
		if w.s.closed.Load() {
			return errClosed
		}
	}
	return errors.New("etcd state store: the watch closed")
}

// backoff waits before the watch is resumed: watchBackoffMin, doubled at
// each failure in a row up to watchBackoffMax; ctx's error when it ends
// first.
func (w *recordWatch) backoff(ctx context.Context) error {
	if err := w.s.check(ctx); err != nil {
		return err
	}
	return w.wait.Wait(ctx)
}

var _ statestore.Watcher = (*Store)(nil)
