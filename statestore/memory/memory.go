// Package memory is an in-memory [statestore.Store], for tests and dry runs.
// Its state is lost when the process exits.
package memory

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/statestore"
)

var errClosed = errors.New("memory state store is closed")

type applied struct {
	id  string
	at  time.Time
	seq uint64
}

// Store is an in-memory statestore.Store. It is safe for concurrent use.
// It keeps copies of the values written to it and returns copies.
// The zero value is not usable; call [New].
type Store struct {
	mu      sync.Mutex
	closed  bool
	revs    map[string]statestore.Revision // owned copies
	history []applied
	seq     uint64
	colls   map[string]map[string][]byte     // collection -> key -> owned value
	logs    map[string][]statestore.LogEntry // log -> entries (owned values), Seq i+1 at index i
}

// New returns an empty store.
func New() *Store {
	return &Store{
		revs:  make(map[string]statestore.Revision),
		colls: make(map[string]map[string][]byte),
		logs:  make(map[string][]statestore.LogEntry),
	}
}

// lock locks s after checking ctx; on success the caller must unlock.
func (s *Store) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errClosed
	}
	return nil
}

// PutRevision implements statestore.Store.
func (s *Store) PutRevision(ctx context.Context, rev statestore.Revision) (statestore.PutResult, error) {
	if err := ctx.Err(); err != nil {
		return statestore.Unchanged, err
	}
	if err := rev.Validate(); err != nil {
		return statestore.Unchanged, err
	}
	if err := s.lock(ctx); err != nil {
		return statestore.Unchanged, err
	}
	defer s.mu.Unlock()

	if n := len(s.history); n > 0 && s.history[n-1].id == rev.ID {
		return statestore.Unchanged, nil
	}
	now := statestore.StoreTime(time.Now())
	result := statestore.Restored
	if _, ok := s.revs[rev.ID]; !ok {
		result = statestore.Created
		rev = rev.Clone()
		if rev.Created.IsZero() {
			rev.Created = now
		}
		rev.Created = statestore.StoreTime(rev.Created)
		s.revs[rev.ID] = rev
	}
	s.seq++
	s.history = append(s.history, applied{id: rev.ID, at: now, seq: s.seq})
	return result, nil
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
	if err := s.lock(ctx); err != nil {
		return statestore.Revision{}, err
	}
	defer s.mu.Unlock()

	if rev, ok := s.revs[ref]; ok {
		return rev.Clone(), nil
	}
	var matches []string
	for id := range s.revs {
		if strings.HasPrefix(id, ref) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		return statestore.Revision{}, statestore.NotFoundError(idOrPrefix)
	case 1:
		return s.revs[matches[0]].Clone(), nil
	}
	slices.Sort(matches)
	return statestore.Revision{}, statestore.AmbiguousError(idOrPrefix, matches)
}

// Current implements statestore.Store.
func (s *Store) Current(ctx context.Context) (statestore.Revision, error) {
	if err := s.lock(ctx); err != nil {
		return statestore.Revision{}, err
	}
	defer s.mu.Unlock()

	if len(s.history) == 0 {
		return statestore.Revision{}, statestore.NoCurrentError()
	}
	return s.revs[s.history[len(s.history)-1].id].Clone(), nil
}

// History implements statestore.Store.
func (s *Store) History(ctx context.Context) ([]statestore.RevisionInfo, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()

	infos := make([]statestore.RevisionInfo, 0, len(s.history))
	for _, h := range s.history {
		infos = append(infos, s.revs[h.id].Info(h.at, h.seq))
	}
	return infos, nil
}

// Close implements statestore.Store. It drops the stored data.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.revs = nil
	s.history = nil
	s.colls = nil
	s.logs = nil
	return nil
}

// Write implements statestore.Records. Ops are validated before anything
// is changed, so a Write is all-or-none.
func (s *Store) Write(ctx context.Context, ops ...statestore.Op) ([]uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ops = statestore.Attach(ctx, ops) // the API's idempotency record, in the same transaction
	if err := statestore.ValidateOps(ops); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()

	var seqs []uint64
	for _, op := range ops {
		switch op.Kind {
		case statestore.OpPut:
			coll := s.colls[op.Coll]
			if coll == nil {
				coll = make(map[string][]byte)
				s.colls[op.Coll] = coll
			}
			coll[op.Key] = clone(op.Value)
		case statestore.OpDelete:
			delete(s.colls[op.Coll], op.Key)
		case statestore.OpAppend:
			seq := uint64(len(s.logs[op.Coll])) + 1
			s.logs[op.Coll] = append(s.logs[op.Coll], statestore.LogEntry{Seq: seq, Value: clone(op.Value)})
			seqs = append(seqs, seq)
		}
	}
	return seqs, nil
}

// Get implements statestore.Records.
func (s *Store) Get(ctx context.Context, coll, key string) ([]byte, error) {
	if err := validateRecord(ctx, coll, key); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()

	v, ok := s.colls[coll][key]
	if !ok {
		return nil, statestore.NoRecordError(coll, key)
	}
	return clone(v), nil
}

// ViewRecord implements statestore.RecordViewer. fn runs with the
// store locked.
func (s *Store) ViewRecord(ctx context.Context, coll, key string, fn func(value []byte) error) error {
	if err := validateRecord(ctx, coll, key); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	v, ok := s.colls[coll][key]
	if !ok {
		return statestore.NoRecordError(coll, key)
	}
	return fn(v)
}

// List implements statestore.Records.
func (s *Store) List(ctx context.Context, coll, prefix string) ([]statestore.Record, error) {
	if err := validateName(ctx, "collection", coll); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()

	recs := []statestore.Record{}
	for k, v := range s.colls[coll] {
		if strings.HasPrefix(k, prefix) {
			recs = append(recs, statestore.Record{Key: k, Value: clone(v)})
		}
	}
	slices.SortFunc(recs, func(a, b statestore.Record) int { return strings.Compare(a.Key, b.Key) })
	return recs, nil
}

// ReadLog implements statestore.Records.
func (s *Store) ReadLog(ctx context.Context, log string, after uint64, limit int) ([]statestore.LogEntry, error) {
	if err := validateName(ctx, "log", log); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()

	entries := s.logs[log]
	if after >= uint64(len(entries)) {
		return []statestore.LogEntry{}, nil
	}
	entries = entries[after:] // entry i has Seq i+1
	if limit > 0 && limit < len(entries) {
		entries = entries[:limit]
	}
	out := make([]statestore.LogEntry, len(entries))
	for i, e := range entries {
		out[i] = statestore.LogEntry{Seq: e.Seq, Value: clone(e.Value)}
	}
	return out, nil
}

// LastSeq implements statestore.Records.
func (s *Store) LastSeq(ctx context.Context, log string) (uint64, error) {
	if err := validateName(ctx, "log", log); err != nil {
		return 0, err
	}
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()

	return uint64(len(s.logs[log])), nil
}

func validateName(ctx context.Context, what, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return statestore.ValidateName(what, name)
}

func validateRecord(ctx context.Context, coll, key string) error {
	if err := validateName(ctx, "collection", coll); err != nil {
		return err
	}
	return statestore.ValidateKey(coll, key)
}

// clone returns a copy of b that is never nil.
func clone(b []byte) []byte {
	return append([]byte{}, b...)
}

var (
	_ statestore.Store        = (*Store)(nil)
	_ statestore.RecordViewer = (*Store)(nil)
)

// Names returns the collections and logs (statestore.Enumerator).
func (s *Store) Names(ctx context.Context) (colls, logs []string, err error) {
	if err := s.lock(ctx); err != nil {
		return nil, nil, err
	}
	defer s.mu.Unlock()
	for c := range s.colls {
		colls = append(colls, c)
	}
	for l := range s.logs {
		logs = append(logs, l)
	}
	slices.Sort(colls)
	slices.Sort(logs)
	return colls, logs, nil
}
