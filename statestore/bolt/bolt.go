package bolt

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"

	group "github.com/slipway-dev/slipway/internal/batch"
	"github.com/slipway-dev/slipway/internal/localtrust"
	"github.com/slipway-dev/slipway/statestore"
)

// SchemaVersion is the version of the file layout this package writes.
const SchemaVersion = 1

// DefaultTimeout is used when Options.Timeout is zero.
const DefaultTimeout = time.Second

var (
	bucketMeta      = []byte("meta")
	bucketRevisions = []byte("revisions")
	bucketDesigns   = []byte("revision_designs")
	bucketHistory   = []byte("history")
	keySchema       = []byte("schema_version")
)

// Prefixes of the bucket names of statestore.Records collections and logs.
const (
	collPrefix = "c/"
	logPrefix  = "l/"
)

const (
	// logFillPercent: a log's pages are filled whole when they split.
	// Its keys only grow, so a page left half full (bbolt's default)
	// is never filled later: the events log took 2.4 times its data in
	// pages, and the file's memory map counts in the engine's RSS.
	logFillPercent = 1.0
)

// Options configure Open.
type Options struct {
	// Timeout is how long Open waits for the file lock; zero means DefaultTimeout.
	Timeout time.Duration
	// Verify: Open reads every page of an existing file and checks that
	// they make one consistent database (bbolt's Tx.Check), besides the
	// checks it always does. It costs a read of the whole file (about
	// 30 ms per 100 MiB when the file is in the page cache).
	Verify bool
}

// Store is a statestore.Store backed by a bbolt file. It is safe for
// concurrent use within one process.
type Store struct {
	db      *bbolt.DB
	path    string
	commits group.Batcher[func(*bbolt.Tx) error, error] // Writes sharing a commit (Write)
	snaps   snapshots                                   // the read transaction Gets share (snapshot.go)
	writes  atomic.Uint64                               // Writes committed (WriteCounts)
	txs     atomic.Uint64                               // commits that carried them (WriteCounts)
}

// CommitLinger is how long a commit waits for other Writes to share it
// once the last commit carried more than one (internal/batch's Linger):
// while writers come together, each fsync'd commit carries more of them;
// a lone writer commits at once. BenchmarkWriteThinking measures it.
const CommitLinger = 5 * time.Millisecond

// WriteCounts answers how many Writes the store committed since Open,
// and in how many transactions (each one fsync'd commit).
func (s *Store) WriteCounts() (writes, commits uint64) {
	return s.writes.Load(), s.txs.Load()
}

// Open opens the state file at path, creating it (and its parent directory)
// if needed. A file that can't be read (cut short, garbage in its pages)
// fails with an error wrapping ErrDamaged that names it; Open never
// panics on one.
func Open(path string, opts Options) (*Store, error) {
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open state database: %w", err)
	}
	if err := checkTrust(path); err != nil {
		return nil, err
	}
	file := path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		file = real // an own link, checked: bbolt opens its target without following links (openState)
	}
	if err := checkFile(file, opts); err != nil {
		return nil, err
	}
	if beforeOpen != nil {
		beforeOpen(file)
	}
	db, err := openDB(file, &bbolt.Options{Timeout: opts.Timeout})
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, path: path}
	s.commits.Linger = CommitLinger
	if err := s.update(initSchema); err != nil {
		_ = db.Close()
		return nil, s.wrap("open", err)
	}
	return s, nil
}

// beforeOpen, when set (tests), is called after the checks of the state
// file and before bbolt opens it: where another user may plant a file.
var beforeOpen func(path string)

// StateRule is what a trusted state file looks like: owned by the
// effective user, writable by no one else, in directories no one else
// can write (see localtrust). Open refuses any other, and a directory
// others could plant one in.
var StateRule = localtrust.Rule{What: "state file", Deny: 0o022,
	Fix: "keep the state in a directory only you can write (mkdir -m 700 DIR; --state DIR/slipway.db)"}

// checkTrust checks the state file at path, or the directory it is about
// to be created in.
func checkTrust(path string) error {
	err := localtrust.Check(path, StateRule)
	if errors.Is(err, fs.ErrNotExist) {
		err = localtrust.CheckDir(filepath.Dir(path), StateRule)
	}
	if err != nil {
		return fmt.Errorf("open state database: %w", err)
	}
	return nil
}

func initSchema(tx *bbolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return err
	}
	if v := meta.Get(keySchema); v != nil {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 {
			return fmt.Errorf("invalid schema version %q", v)
		}
		if n > SchemaVersion {
			return fmt.Errorf("schema version is %d, but this orchestrator only knows schema version %d; use a newer orchestrator", n, SchemaVersion)
		}
	} else if err := meta.Put(keySchema, []byte(strconv.Itoa(SchemaVersion))); err != nil {
		return err
	}
	for _, name := range [][]byte{bucketRevisions, bucketDesigns, bucketHistory} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	return nil
}

// revisionMeta is the JSON value in bucket "revisions".
type revisionMeta struct {
	ID        string    `json:"id"`
	Created   time.Time `json:"created"`
	Roots     []string  `json:"roots"`
	GitCommit string    `json:"git_commit"`
	GitDirty  bool      `json:"git_dirty"`
	// Written by git sync since issue 35; absent in older records.
	GitAuthor  string         `json:"git_author,omitempty"`
	GitMessage string         `json:"git_message,omitempty"`
	Counts     map[string]int `json:"counts"`
}

// historyEntry is the JSON value in bucket "history".
type historyEntry struct {
	ID      string    `json:"id"`
	Applied time.Time `json:"applied"`
}

// errUnchanged rolls back the PutRevision transaction: nothing is written.
var errUnchanged = errors.New("unchanged")

// PutRevision implements statestore.Store.
func (s *Store) PutRevision(ctx context.Context, rev statestore.Revision) (statestore.PutResult, error) {
	if err := ctx.Err(); err != nil {
		return statestore.Unchanged, err
	}
	if err := rev.Validate(); err != nil {
		return statestore.Unchanged, err
	}
	result := statestore.Restored
	err := s.update(func(tx *bbolt.Tx) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		hist := tx.Bucket(bucketHistory)
		if cur, ok, err := lastEntry(hist); err != nil {
			return err
		} else if ok && cur.ID == rev.ID {
			return errUnchanged
		}
		now := statestore.StoreTime(time.Now())
		if tx.Bucket(bucketRevisions).Get([]byte(rev.ID)) == nil {
			result = statestore.Created
			if err := putRevision(tx, rev, now); err != nil {
				return err
			}
		}
		seq, err := hist.NextSequence()
		if err != nil {
			return err
		}
		v, err := json.Marshal(historyEntry{ID: rev.ID, Applied: now})
		if err != nil {
			return err
		}
		return hist.Put(seqKey(seq), v)
	})
	if errors.Is(err, errUnchanged) {
		return statestore.Unchanged, nil
	}
	if err != nil {
		return statestore.Unchanged, s.wrap("store design revision "+rev.ID, err)
	}
	return result, nil
}

func putRevision(tx *bbolt.Tx, rev statestore.Revision, now time.Time) error {
	created := now
	if !rev.Created.IsZero() {
		created = statestore.StoreTime(rev.Created)
	}
	meta, err := json.Marshal(revisionMeta{
		ID: rev.ID, Created: created, Roots: rev.Roots,
		GitCommit: rev.GitCommit, GitDirty: rev.GitDirty, GitAuthor: rev.GitAuthor, GitMessage: rev.GitMessage, Counts: rev.Counts,
	})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	// BestSpeed: about 5x faster than the default level on design JSON, for
	// output about 30% larger.
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return err
	}
	if _, err := zw.Write(rev.Design); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := tx.Bucket(bucketRevisions).Put([]byte(rev.ID), meta); err != nil {
		return err
	}
	return tx.Bucket(bucketDesigns).Put([]byte(rev.ID), buf.Bytes())
}

// Revision implements statestore.Store.
func (s *Store) Revision(ctx context.Context, idOrPrefix string) (statestore.Revision, error) {
	if err := ctx.Err(); err != nil {
		return statestore.Revision{}, err
	}
	ref, err := statestore.NormalizeRef(idOrPrefix)
	if err != nil {
		return statestore.Revision{}, err
	}
	var rev statestore.Revision
	err = s.view(func(tx *bbolt.Tx) error {
		var matches []string
		c := tx.Bucket(bucketRevisions).Cursor()
		for k, _ := c.Seek([]byte(ref)); k != nil && bytes.HasPrefix(k, []byte(ref)); k, _ = c.Next() {
			matches = append(matches, string(k))
		}
		switch len(matches) {
		case 0:
			return statestore.NotFoundError(idOrPrefix)
		case 1:
			rev, err = loadRevision(tx, matches[0], true)
			return err
		}
		return statestore.AmbiguousError(idOrPrefix, matches)
	})
	if err != nil {
		return statestore.Revision{}, s.wrap("", err)
	}
	return rev, nil
}

// Current implements statestore.Store.
func (s *Store) Current(ctx context.Context) (statestore.Revision, error) {
	if err := ctx.Err(); err != nil {
		return statestore.Revision{}, err
	}
	var rev statestore.Revision
	err := s.view(func(tx *bbolt.Tx) error {
		cur, ok, err := lastEntry(tx.Bucket(bucketHistory))
		if err != nil {
			return err
		}
		if !ok {
			return statestore.NoCurrentError()
		}
		rev, err = loadRevision(tx, cur.ID, true)
		return err
	})
	if err != nil {
		return statestore.Revision{}, s.wrap("", err)
	}
	return rev, nil
}

// History implements statestore.Store.
func (s *Store) History(ctx context.Context) ([]statestore.RevisionInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var infos []statestore.RevisionInfo
	err := s.view(func(tx *bbolt.Tx) error {
		hist := tx.Bucket(bucketHistory)
		infos = []statestore.RevisionInfo{}
		return hist.ForEach(func(k, v []byte) error {
			var h historyEntry
			if len(k) != 8 {
				return fmt.Errorf("corrupt history key %x", k)
			}
			if err := json.Unmarshal(v, &h); err != nil {
				return fmt.Errorf("corrupt history entry %x: %w", k, err)
			}
			rev, err := loadRevision(tx, h.ID, false)
			if err != nil {
				return err
			}
			infos = append(infos, rev.Info(h.Applied, binary.BigEndian.Uint64(k)))
			return nil
		})
	})
	if err != nil {
		return nil, s.wrap("read design history", err)
	}
	return infos, nil
}

// Close implements statestore.Store.
func (s *Store) Close() error {
	s.closeSnapshots()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close state database %s: %w", s.path, err)
	}
	return nil
}

func lastEntry(hist *bbolt.Bucket) (historyEntry, bool, error) {
	k, v := hist.Cursor().Last()
	if k == nil {
		return historyEntry{}, false, nil
	}
	var h historyEntry
	if err := json.Unmarshal(v, &h); err != nil {
		return h, false, fmt.Errorf("corrupt history entry %x: %w", k, err)
	}
	return h, true, nil
}

// loadRevision reads revision id; the design only if withDesign.
func loadRevision(tx *bbolt.Tx, id string, withDesign bool) (statestore.Revision, error) {
	v := tx.Bucket(bucketRevisions).Get([]byte(id))
	if v == nil {
		return statestore.Revision{}, fmt.Errorf("corrupt state: design revision %s is referenced but missing", id)
	}
	var m revisionMeta
	if err := json.Unmarshal(v, &m); err != nil {
		return statestore.Revision{}, fmt.Errorf("corrupt design revision %s: %w", id, err)
	}
	rev := statestore.Revision{
		ID: id, Created: m.Created, Roots: m.Roots,
		GitCommit: m.GitCommit, GitDirty: m.GitDirty, GitAuthor: m.GitAuthor, GitMessage: m.GitMessage, Counts: m.Counts,
	}
	if !withDesign {
		return rev, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(tx.Bucket(bucketDesigns).Get([]byte(id))))
	if err == nil {
		rev.Design, err = io.ReadAll(zr)
	}
	if err != nil {
		return statestore.Revision{}, fmt.Errorf("corrupt design of revision %s: %w", id, err)
	}
	return rev, nil
}

// Write implements statestore.Records. Writes share commits (group
// commit, internal/batch): a Write that finds no commit under way commits
// at once in its own transaction; the Writes made while a commit is under
// way wait for it and then commit together in one transaction (one fsync
// for all of them, however long the disk takes: with bbolt's Batch, which
// commits every 2 ms, commits queued behind a slow fsync). If one Write of
// a shared commit fails, the transaction is rolled back and each of the
// others commits alone, so its function may run more than once.
func (s *Store) Write(ctx context.Context, ops ...statestore.Op) ([]uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ops = statestore.Attach(ctx, ops) // the API's idempotency record, in the same transaction
	if err := statestore.ValidateOps(ops); err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		// Nothing to write, but fail like a Write would on a closed store.
		return nil, s.wrap("write records", s.view(func(*bbolt.Tx) error { return nil }))
	}
	var seqs []uint64
	apply := func(tx *bbolt.Tx) error {
		seqs = seqs[:0] // forget the seqs of a rolled-back run
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, op := range ops {
			switch op.Kind {
			case statestore.OpPut:
				b, err := tx.CreateBucketIfNotExists([]byte(collPrefix + op.Coll))
				if err != nil {
					return fmt.Errorf("create collection %q: %w", op.Coll, err)
				}
				if err := b.Put([]byte(op.Key), op.Value); err != nil {
					return fmt.Errorf("put key %q in collection %q: %w", op.Key, op.Coll, err)
				}
			case statestore.OpDelete:
				b := tx.Bucket([]byte(collPrefix + op.Coll))
				if b == nil {
					continue
				}
				if err := b.Delete([]byte(op.Key)); err != nil {
					return fmt.Errorf("delete key %q in collection %q: %w", op.Key, op.Coll, err)
				}
			case statestore.OpAppend:
				b, err := tx.CreateBucketIfNotExists([]byte(logPrefix + op.Coll))
				if err != nil {
					return fmt.Errorf("create log %q: %w", op.Coll, err)
				}
				b.FillPercent = logFillPercent
				seq, err := b.NextSequence()
				if err == nil {
					err = b.Put(seqKey(seq), op.Value)
				}
				if err != nil {
					return fmt.Errorf("append to log %q: %w", op.Coll, err)
				}
				seqs = append(seqs, seq)
			}
		}
		return nil
	}
	werr, err := s.commits.Do(ctx, "", apply, s.commitAll)
	if err == nil {
		err = werr
	}
	if err != nil {
		return nil, s.wrap("write records", err)
	}
	return seqs, nil
}

// commitAll commits the Writes' functions in one transaction; when one
// fails, each commits alone (the failing one fails on its own).
func (s *Store) commitAll(_ context.Context, applies []func(*bbolt.Tx) error) ([]error, error) {
	errs := make([]error, len(applies))
	s.beginWrite()
	defer s.endWrite()
	err := guard(s.path, func() error {
		return s.db.Update(func(tx *bbolt.Tx) error {
			for _, a := range applies {
				if err := a(tx); err != nil {
					return err
				}
			}
			return nil
		})
	})
	switch {
	case err == nil:
		s.count(len(applies), 1)
	case len(applies) == 1:
		errs[0] = err
	default:
		for i, a := range applies {
			if errs[i] = guard(s.path, func() error { return s.db.Update(a) }); errs[i] == nil {
				s.count(1, 1)
			}
		}
	}
	return errs, nil
}

// count adds writes committed in commits to WriteCounts.
func (s *Store) count(writes, commits int) {
	s.writes.Add(uint64(writes))
	s.txs.Add(uint64(commits))
}

// Get implements statestore.Records.
func (s *Store) Get(ctx context.Context, coll, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := statestore.ValidateName("collection", coll); err != nil {
		return nil, err
	}
	if err := statestore.ValidateKey(coll, key); err != nil {
		return nil, err
	}
	var v []byte
	err := s.readRecord(coll, key, func(val []byte) error { v = clone(val); return nil })
	if err != nil {
		return nil, s.wrap("", err)
	}
	return v, nil
}

// List implements statestore.Records.
func (s *Store) List(ctx context.Context, coll, prefix string) ([]statestore.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := statestore.ValidateName("collection", coll); err != nil {
		return nil, err
	}
	recs := []statestore.Record{}
	err := s.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(collPrefix + coll))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		p := []byte(prefix)
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			recs = append(recs, statestore.Record{Key: string(k), Value: clone(v)})
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("list collection %q", coll), err)
	}
	return recs, nil
}

// ReadLog implements statestore.Records. It seeks to the first entry after
// after, so reading the tail of a long log is cheap.
func (s *Store) ReadLog(ctx context.Context, log string, after uint64, limit int) ([]statestore.LogEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := statestore.ValidateName("log", log); err != nil {
		return nil, err
	}
	entries := []statestore.LogEntry{}
	err := s.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(logPrefix + log))
		if b == nil || after == math.MaxUint64 {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(seqKey(after + 1)); k != nil; k, v = c.Next() {
			if limit > 0 && len(entries) == limit {
				break
			}
			if len(k) != 8 {
				return fmt.Errorf("corrupt key %x in log %q", k, log)
			}
			entries = append(entries, statestore.LogEntry{Seq: binary.BigEndian.Uint64(k), Value: clone(v)})
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("read log %q", log), err)
	}
	return entries, nil
}

// LastSeq implements statestore.Records.
func (s *Store) LastSeq(ctx context.Context, log string) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := statestore.ValidateName("log", log); err != nil {
		return 0, err
	}
	var seq uint64
	err := s.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(logPrefix + log))
		if b == nil {
			return nil
		}
		k, _ := b.Cursor().Last()
		if k == nil {
			return nil
		}
		if len(k) != 8 {
			return fmt.Errorf("corrupt key %x in log %q", k, log)
		}
		seq = binary.BigEndian.Uint64(k)
		return nil
	})
	if err != nil {
		return 0, s.wrap(fmt.Sprintf("read log %q", log), err)
	}
	return seq, nil
}

// seqKey returns the key of a log entry: seq as 8 bytes, big-endian.
func seqKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq)
}

// clone returns a copy of b that is never nil. Values read from bbolt are
// only valid during their transaction.
func clone(b []byte) []byte {
	return append([]byte{}, b...)
}

// wrap adds the file path to internal errors; statestore sentinel errors and
// context errors are returned as they are.
func (s *Store) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, statestore.ErrNotFound) || errors.Is(err, statestore.ErrAmbiguous) ||
		errors.Is(err, statestore.ErrNoRecord) || errors.Is(err, ErrDamaged) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if what == "" {
		return fmt.Errorf("state database %s: %w", s.path, err)
	}
	return fmt.Errorf("%s in state database %s: %w", what, s.path, err)
}

var _ statestore.Store = (*Store)(nil)

// Names returns the collections and logs the file holds (statestore.Enumerator).
func (s *Store) Names(ctx context.Context) (colls, logs []string, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	err = s.view(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
			switch n := string(name); {
			case strings.HasPrefix(n, "c/"):
				colls = append(colls, n[2:])
			case strings.HasPrefix(n, "l/"):
				logs = append(logs, n[2:])
			}
			return nil
		})
	})
	return colls, logs, s.wrap("names", err)
}
