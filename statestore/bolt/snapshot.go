package bolt

import (
	"bytes"
	"context"
	"maps"
	"sync"
	"sync/atomic"
	"unsafe"

	bbolt "go.etcd.io/bbolt"

	"github.com/slipway-dev/slipway/statestore"
)

// Reads of one record (Get, ViewRecord) share a read transaction, the
// store's snapshot, instead of beginning and rolling back one each: in
// bbolt that is two locks of the database's meta mutex, a few allocations
// and a lookup of the bucket, which were about half of reading a small
// record. The snapshot is opened by the first read that finds none and
// retired by every commit before it starts (so a commit that grows the
// file never waits for a snapshot no read is using) and again when it
// ends; no snapshot is opened while a commit is under way, and one opened
// before a commit ended is never shared after it (the generation moved).
// So a read that starts after a Write returned never reads from before
// that Write, as with a transaction of its own; a read concurrent with a
// Write sees the state before it or after it, as before. A retired
// snapshot's transaction is rolled back by the last read using it.
//
// A bbolt read-only transaction and its buckets are only read by Get
// (their statistics counters are atomic), so reads share them safely;
// `go test -race` holds the package to that.

// snapshot is a shared read transaction and the buckets looked up in it.
type snapshot struct {
	tx *bbolt.Tx
	// refs counts the reads using it, plus one while it is the store's
	// current snapshot; the tx is rolled back when it drops to zero.
	refs atomic.Int64
	// buckets maps collection names to their buckets (nil: none), copied
	// on write (a read looks it up without a lock).
	buckets atomic.Pointer[map[string]*snapBucket]
	mu      sync.Mutex // adding to buckets
}

// snapBucket is a bucket of a snapshot and the cursors its reads reuse:
// bbolt's Get makes a cursor for every call, and its stack grows by
// appending, a few allocations a read; a reused cursor keeps its stack.
// A cursor is used by one read at a time (taken from the pool, put back).
type snapBucket struct {
	b       *bbolt.Bucket // nil: the collection has none
	cursors sync.Pool     // of *bbolt.Cursor over b
}

// get is b's value of key (nil: absent, or a nested bucket), as Get
// answers it, through a reused cursor.
func (sb *snapBucket) get(key []byte) []byte {
	c, _ := sb.cursors.Get().(*bbolt.Cursor)
	if c == nil {
		c = sb.b.Cursor()
	}
	k, v := c.Seek(key)
	sb.cursors.Put(c)
	if v == nil || !bytes.Equal(k, key) {
		return nil
	}
	return v
}

// snapshots is the store's shared read transaction and what guards it.
type snapshots struct {
	cur     atomic.Pointer[snapshot]
	mu      sync.Mutex // opening and retiring
	gen     uint64     // under mu; moved by every retire
	writing int        // under mu; commits under way
	closed  bool       // under mu
	opened  func()     // tests: called after a snapshot's transaction began, before it is shared
}

// acquire returns the current snapshot with a reference taken, opening
// one if there is none; nil when none may be shared (a commit is under
// way, or the store is closed), and then the caller reads in a
// transaction of its own. A transaction opened here that may not be
// shared any more (a commit started or ended meanwhile) is returned as a
// private snapshot (its one reference the caller's): it began after the
// read started, so it is as fresh as the caller needs.
func (s *Store) acquire() (*snapshot, error) {
	for {
		sn := s.snaps.cur.Load()
		if sn == nil {
			break
		}
		if r := sn.refs.Load(); r > 0 && sn.refs.CompareAndSwap(r, r+1) {
			return sn, nil
		}
		// No references left: it was retired (no longer current) and
		// released meanwhile; look again.
	}
	s.snaps.mu.Lock()
	if s.snaps.writing > 0 || s.snaps.closed {
		s.snaps.mu.Unlock()
		return nil, nil
	}
	gen := s.snaps.gen
	s.snaps.mu.Unlock()
	tx, err := s.db.Begin(false)
	if err != nil {
		return nil, err
	}
	if s.snaps.opened != nil {
		s.snaps.opened()
	}
	sn := &snapshot{tx: tx}
	sn.refs.Store(1) // the caller's
	s.snaps.mu.Lock()
	if s.snaps.gen == gen && s.snaps.writing == 0 && !s.snaps.closed && s.snaps.cur.Load() == nil {
		sn.refs.Add(1) // the store's, while current
		s.snaps.cur.Store(sn)
	}
	s.snaps.mu.Unlock()
	return sn, nil
}

// release drops a reference to sn; the last one rolls its transaction back.
func (sn *snapshot) release() {
	if sn.refs.Add(-1) == 0 {
		_ = sn.tx.Rollback()
	}
}

// retire stops sharing the current snapshot (under s.snaps.mu) and
// returns it, for the caller to release the store's reference once it
// has unlocked.
func (s *Store) retireLocked() *snapshot {
	s.snaps.gen++
	return s.snaps.cur.Swap(nil)
}

// beginWrite is called before every commit: no snapshot is shared from
// now until endWrite.
func (s *Store) beginWrite() {
	s.snaps.mu.Lock()
	s.snaps.writing++
	old := s.retireLocked()
	s.snaps.mu.Unlock()
	if old != nil {
		old.release()
	}
}

// endWrite is called after every commit, before the Write returns.
func (s *Store) endWrite() {
	s.snaps.mu.Lock()
	s.snaps.writing--
	old := s.retireLocked()
	s.snaps.mu.Unlock()
	if old != nil {
		old.release()
	}
}

// closeSnapshots retires the snapshot for good (before the database is
// closed, which waits for every read transaction).
func (s *Store) closeSnapshots() {
	s.snaps.mu.Lock()
	s.snaps.closed = true
	old := s.retireLocked()
	s.snaps.mu.Unlock()
	if old != nil {
		old.release()
	}
}

// bucket is the collection's bucket in sn (its b nil when it does not exist).
func (sn *snapshot) bucket(coll string) *snapBucket {
	if m := sn.buckets.Load(); m != nil {
		if b, ok := (*m)[coll]; ok {
			return b
		}
	}
	sn.mu.Lock()
	defer sn.mu.Unlock()
	old := sn.buckets.Load()
	if old != nil {
		if b, ok := (*old)[coll]; ok {
			return b
		}
	}
	b := &snapBucket{b: sn.tx.Bucket([]byte(collPrefix + coll))}
	m := make(map[string]*snapBucket, 1)
	if old != nil {
		if len(*old) >= maxSnapshotBuckets {
			return b // not kept: names are bounded, but a map of them need not be
		}
		maps.Copy(m, *old)
	}
	m[coll] = b
	sn.buckets.Store(&m)
	return b
}

// maxSnapshotBuckets bounds the buckets a snapshot keeps looked up.
const maxSnapshotBuckets = 64

// readRecord calls fn with the value of key in coll, read in the shared
// snapshot (or in a transaction of its own while a commit is under way);
// the value is only valid during fn. Absent: an error wrapping
// statestore.ErrNoRecord, and fn is not called.
func (s *Store) readRecord(coll, key string, fn func(v []byte) error) error {
	sn, err := s.acquire()
	if err != nil {
		return err
	}
	if sn == nil {
		return s.view(func(tx *bbolt.Tx) error {
			b := tx.Bucket([]byte(collPrefix + coll))
			return lookup(b != nil, b.Get, coll, key, fn)
		})
	}
	return guard(s.path, func() error {
		defer sn.release()
		sb := sn.bucket(coll)
		return lookup(sb.b != nil, sb.get, coll, key, fn)
	})
}

// lookup calls fn with key's value in a bucket (exists) read by get.
func lookup(exists bool, get func([]byte) []byte, coll, key string, fn func(v []byte) error) error {
	if !exists {
		return statestore.NoRecordError(coll, key)
	}
	// bbolt only reads the key: no copy of it.
	v := get(unsafe.Slice(unsafe.StringData(key), len(key)))
	if v == nil {
		return statestore.NoRecordError(coll, key)
	}
	return fn(v)
}

// ViewRecord implements statestore.RecordViewer: fn gets the value as
// bbolt holds it, in the file's memory map, without a copy. It must not
// modify or keep it, and should be short: it holds a read transaction
// that a commit growing the file waits for.
func (s *Store) ViewRecord(ctx context.Context, coll, key string, fn func(value []byte) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := statestore.ValidateName("collection", coll); err != nil {
		return err
	}
	if err := statestore.ValidateKey(coll, key); err != nil {
		return err
	}
	var fnErr error
	err := s.readRecord(coll, key, func(v []byte) error { fnErr = fn(v); return fnErr })
	if err != nil && err == fnErr {
		return err // the caller's own
	}
	return s.wrap("", err)
}

var _ statestore.RecordViewer = (*Store)(nil)
