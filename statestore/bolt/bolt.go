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
	"os"
	"path/filepath"
	"strconv"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

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

// Options configure Open.
type Options struct {
	// Timeout is how long Open waits for the file lock; zero means DefaultTimeout.
	Timeout time.Duration
}

// Store is a statestore.Store backed by a bbolt file. It is safe for
// concurrent use within one process.
type Store struct {
	db   *bbolt.DB
	path string
}

// Open opens the state file at path, creating it (and its parent directory)
// if needed.
func Open(path string, opts Options) (*Store, error) {
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open state database: %w", err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: opts.Timeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open state database %s: file is locked: another orchestrator process (e.g. `orchestrator serve`) probably holds it; stop that process or use --state with another path: %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	if err := db.Update(initSchema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	return &Store{db: db, path: path}, nil
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
	ID        string         `json:"id"`
	Created   time.Time      `json:"created"`
	Roots     []string       `json:"roots"`
	GitCommit string         `json:"git_commit"`
	GitDirty  bool           `json:"git_dirty"`
	Counts    map[string]int `json:"counts"`
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
	err := s.db.Update(func(tx *bbolt.Tx) error {
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
		return hist.Put(binary.BigEndian.AppendUint64(nil, seq), v)
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
		GitCommit: rev.GitCommit, GitDirty: rev.GitDirty, Counts: rev.Counts,
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
	err = s.db.View(func(tx *bbolt.Tx) error {
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
	err := s.db.View(func(tx *bbolt.Tx) error {
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
	err := s.db.View(func(tx *bbolt.Tx) error {
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
		GitCommit: m.GitCommit, GitDirty: m.GitDirty, Counts: m.Counts,
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

// wrap adds the file path to internal errors; statestore sentinel errors and
// context errors are returned as they are.
func (s *Store) wrap(what string, err error) error {
	if errors.Is(err, statestore.ErrNotFound) || errors.Is(err, statestore.ErrAmbiguous) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if what == "" {
		return fmt.Errorf("state database %s: %w", s.path, err)
	}
	return fmt.Errorf("%s in state database %s: %w", what, s.path, err)
}

var _ statestore.Store = (*Store)(nil)
