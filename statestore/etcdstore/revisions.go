package etcdstore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slipway-dev/slipway/statestore"
)

// revMeta is a stored revision: its metadata and its design's stored form
// (inline, or a blob reference).
type revMeta struct {
	Created   time.Time `json:"created"`
	Roots     []string  `json:"roots,omitempty"`
	GitCommit string    `json:"git_commit,omitempty"`
	GitDirty  bool      `json:"git_dirty,omitempty"`
	// Written by git sync since issue 35; absent in older records.
	GitAuthor  string         `json:"git_author,omitempty"`
	GitMessage string         `json:"git_message,omitempty"`
	Counts     map[string]int `json:"counts,omitempty"`
	Design     []byte         `json:"design"`
}

// histEntry is one apply.
type histEntry struct {
	ID      string    `json:"id"`
	Applied time.Time `json:"applied"`
}

func (s *Store) revKey(id string) string     { return s.prefix + "rev/" + id }
func (s *Store) histKey(seq uint64) string   { return fmt.Sprintf("%shist/%020d", s.prefix, seq) }
func (s *Store) histSeqKey() string          { return s.prefix + "histseq" }
func (s *Store) currentKey() string          { return s.prefix + "current" }
func (s *Store) histPrefix() string          { return s.prefix + "hist/" }
func (s *Store) revPrefix(ref string) string { return s.prefix + "rev/" + ref }

// revBlob is the blob a stored revision's design is in ("" when inline
// or unreadable).
func revBlob(stored []byte) string {
	var m revMeta
	if json.Unmarshal(stored, &m) != nil {
		return ""
	}
	id, _, _ := blobRef(m.Design)
	return id
}

// PutRevision makes rev the current revision (see statestore.Store).
func (s *Store) PutRevision(ctx context.Context, rev statestore.Revision) (statestore.PutResult, error) {
	if err := s.check(ctx); err != nil {
		return statestore.Unchanged, err
	}
	if err := rev.Validate(); err != nil {
		return statestore.Unchanged, err
	}
	var meta []byte // written once, reused by retries
	wait := newQuorumWaiter(s.kv.q)
	for range maxRetries {
		res, done, err := s.tryPutRevision(ctx, rev, &meta)
		for err != nil && wait.again(ctx, err) { // the etcd leader changed, or is being elected
			res, done, err = s.tryPutRevision(ctx, rev, &meta)
		}
		if err != nil || done {
			return res, err
		}
		if fell, err := s.fenceFell(ctx); err != nil || fell {
			return statestore.Unchanged, cmp.Or(err, ErrFenced)
		}
	}
	return statestore.Unchanged, fmt.Errorf("etcd state store: applying revision %s lost %d races in a row; try again", rev.ID[:12], maxRetries)
}

func (s *Store) tryPutRevision(ctx context.Context, rev statestore.Revision, meta *[]byte) (statestore.PutResult, bool, error) {
	keys := []string{s.currentKey(), s.histSeqKey(), s.revKey(rev.ID)}
	resp, err := s.kv.Txn(ctx).Then(clientv3.OpGet(keys[0]), clientv3.OpGet(keys[1]), clientv3.OpGet(keys[2])).Commit()
	if err != nil {
		return statestore.Unchanged, false, err
	}
	var conds []clientv3.Cmp
	var vals [3][]byte
	for i, r := range resp.Responses {
		var mod int64
		if kvs := r.GetResponseRange().Kvs; len(kvs) > 0 {
			mod, vals[i] = kvs[0].ModRevision, kvs[0].Value
		}
		conds = append(conds, clientv3.Compare(clientv3.ModRevision(keys[i]), "=", mod))
	}
	if string(vals[0]) == rev.ID {
		return statestore.Unchanged, true, nil
	}
	var seq uint64
	if vals[1] != nil {
		if _, err := fmt.Sscan(string(vals[1]), &seq); err != nil {
			return statestore.Unchanged, false, fmt.Errorf("etcd state store: histseq holds %q", vals[1])
		}
	}
	now := statestore.StoreTime(time.Now())
	res := statestore.Restored
	var writes []clientv3.Op
	if vals[2] == nil {
		res = statestore.Created
		if *meta == nil {
			m, err := s.newMeta(ctx, rev, now)
			if err != nil {
				return statestore.Unchanged, false, err
			}
			*meta = m
		}
		writes = append(writes, clientv3.OpPut(keys[2], string(*meta)))
	}
	h, err := json.Marshal(histEntry{ID: rev.ID, Applied: now})
	if err != nil {
		return statestore.Unchanged, false, err
	}
	writes = append(writes, clientv3.OpPut(s.histKey(seq+1), string(h)), clientv3.OpPut(keys[1], fmt.Sprint(seq+1)),
		clientv3.OpPut(keys[0], rev.ID))
	tr, err := s.kv.Txn(ctx).If(s.fenced(conds)...).Then(writes...).Commit()
	if err != nil {
		return statestore.Unchanged, false, err
	}
	return res, tr.Succeeded, nil
}

// newMeta is rev's stored form, its design written (as a blob if large).
func (s *Store) newMeta(ctx context.Context, rev statestore.Revision, now time.Time) ([]byte, error) {
	design, err := s.encode(ctx, rev.Design)
	if err != nil {
		return nil, err
	}
	created := rev.Created
	if created.IsZero() {
		created = now
	}
	return json.Marshal(revMeta{Created: statestore.StoreTime(created), Roots: rev.Roots, GitCommit: rev.GitCommit,
		GitDirty: rev.GitDirty, GitAuthor: rev.GitAuthor, GitMessage: rev.GitMessage, Counts: rev.Counts, Design: design})
}

// Revision returns the revision of an ID or unique ID prefix.
func (s *Store) Revision(ctx context.Context, idOrPrefix string) (statestore.Revision, error) {
	if err := s.check(ctx); err != nil {
		return statestore.Revision{}, err
	}
	ref, err := statestore.NormalizeRef(idOrPrefix)
	if err != nil {
		return statestore.Revision{}, err
	}
	resp, err := s.kv.Get(ctx, s.revPrefix(ref), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return statestore.Revision{}, err
	}
	var ids []string
	for _, kv := range resp.Kvs {
		ids = append(ids, strings.TrimPrefix(string(kv.Key), s.revPrefix("")))
	}
	switch {
	case slices.Contains(ids, ref):
		return s.load(ctx, ref, true)
	case len(ids) == 0:
		return statestore.Revision{}, statestore.NotFoundError(idOrPrefix)
	case len(ids) == 1:
		return s.load(ctx, ids[0], true)
	}
	slices.Sort(ids)
	return statestore.Revision{}, statestore.AmbiguousError(idOrPrefix, ids)
}

// load reads revision id (its design too when withDesign).
func (s *Store) load(ctx context.Context, id string, withDesign bool) (statestore.Revision, error) {
	resp, err := s.kv.Get(ctx, s.revKey(id))
	if err != nil {
		return statestore.Revision{}, err
	}
	if len(resp.Kvs) == 0 {
		return statestore.Revision{}, statestore.NotFoundError(id)
	}
	var m revMeta
	if err := json.Unmarshal(resp.Kvs[0].Value, &m); err != nil {
		return statestore.Revision{}, fmt.Errorf("etcd state store: revision %s: %w", id, err)
	}
	rev := statestore.Revision{ID: id, Created: m.Created, Roots: m.Roots, GitCommit: m.GitCommit, GitDirty: m.GitDirty,
		GitAuthor: m.GitAuthor, GitMessage: m.GitMessage, Counts: m.Counts}
	if withDesign {
		if rev.Design, err = s.decode(ctx, m.Design); err != nil {
			return statestore.Revision{}, fmt.Errorf("etcd state store: revision %s: %w", id, err)
		}
	}
	return rev, nil
}

// Current returns the most recently applied revision.
func (s *Store) Current(ctx context.Context) (statestore.Revision, error) {
	if err := s.check(ctx); err != nil {
		return statestore.Revision{}, err
	}
	resp, err := s.kv.Get(ctx, s.currentKey())
	if err != nil {
		return statestore.Revision{}, err
	}
	if len(resp.Kvs) == 0 {
		return statestore.Revision{}, statestore.NoCurrentError()
	}
	return s.load(ctx, string(resp.Kvs[0].Value), true)
}

// History returns the apply history, oldest first.
func (s *Store) History(ctx context.Context) ([]statestore.RevisionInfo, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	resp, err := s.kv.Get(ctx, s.histPrefix(), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, err
	}
	revs := map[string]statestore.Revision{}
	out := make([]statestore.RevisionInfo, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var h histEntry
		if err := json.Unmarshal(kv.Value, &h); err != nil {
			return nil, fmt.Errorf("etcd state store: %s: %w", kv.Key, err)
		}
		var seq uint64
		if _, err := fmt.Sscan(strings.TrimPrefix(string(kv.Key), s.histPrefix()), &seq); err != nil {
			return nil, fmt.Errorf("etcd state store: history key %q", kv.Key)
		}
		rev, ok := revs[h.ID]
		if !ok {
			if rev, err = s.load(ctx, h.ID, false); err != nil {
				return nil, err
			}
			revs[h.ID] = rev
		}
		out = append(out, rev.Info(h.Applied, seq))
	}
	return out, nil
}

// ImportHistory writes another store's revisions and history into this
// one, which must have none (statestore.HistoryImporter): the designs
// first (each a chunked value), then the metadata, the history entries
// with their own sequence numbers and times, and current, in one
// transaction.
func (s *Store) ImportHistory(ctx context.Context, revs map[string]statestore.Revision, history []statestore.RevisionInfo) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	resp, err := s.kv.Get(ctx, s.histSeqKey())
	if err != nil {
		return err
	}
	if len(resp.Kvs) > 0 {
		return fmt.Errorf("etcd state store under %s already has an apply history: import into an empty prefix", s.prefix)
	}
	writes := []clientv3.Op{}
	var last statestore.RevisionInfo
	for _, id := range slices.Sorted(maps.Keys(revs)) {
		m, err := s.newMeta(ctx, revs[id], time.Now())
		if err != nil {
			return err
		}
		writes = append(writes, clientv3.OpPut(s.revKey(id), string(m)))
	}
	for _, h := range history {
		if _, ok := revs[h.ID]; !ok {
			return fmt.Errorf("history entry %d names revision %s, which is not given", h.Seq, h.ID)
		}
		b, err := json.Marshal(histEntry{ID: h.ID, Applied: statestore.StoreTime(h.Applied)})
		if err != nil {
			return err
		}
		writes = append(writes, clientv3.OpPut(s.histKey(h.Seq), string(b)))
		last = h
	}
	if len(history) > 0 {
		writes = append(writes, clientv3.OpPut(s.histSeqKey(), fmt.Sprint(last.Seq)), clientv3.OpPut(s.currentKey(), last.ID))
	}
	tr, err := s.kv.Txn(ctx).If(s.fenced([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(s.histSeqKey()), "=", 0)})...).
		Then(writes...).Commit()
	if err != nil {
		return err
	}
	if !tr.Succeeded {
		return fmt.Errorf("etcd state store under %s got an apply history meanwhile: import into an empty prefix", s.prefix)
	}
	return nil
}
