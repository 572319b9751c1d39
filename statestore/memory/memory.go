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
// The zero value is not usable; call [New].
type Store struct {
	mu      sync.Mutex
	closed  bool
	revs    map[string]statestore.Revision // owned copies
	history []applied
	seq     uint64
}

// New returns an empty store.
func New() *Store {
	return &Store{revs: make(map[string]statestore.Revision)}
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
	return nil
}

var _ statestore.Store = (*Store)(nil)
