// Package etcdstore keeps the state store on etcd (go.etcd.io/etcd/client/v3),
// the distributed backend beside the embedded bbolt default: several
// Slipway processes can share it. It passes the same conformance suite
// (statestore/storetest).
//
// # Layout
//
// Under the store's prefix (default "/slipway/"):
//
//	rec/<coll>/<key>       a record's value (see Values)
//	log/<log>/<seq>        a log entry's value, seq as 20 decimal digits
//	logseq/<log>           the log's last sequence number, decimal
//	blob/<id>/<n>          chunk n (6 digits) of a large value
//	rev/<id>               a revision's metadata (JSON) and its design's blob
//	hist/<seq>             an apply: the revision ID and when (JSON)
//	histseq                the last apply's sequence number
//	wid/<id>               a Write's mark: it was applied (writeonce.go)
//
// # Values
//
// etcd bounds a request (1.5 MiB by default), so a value over inlineMax is
// written first as chunks of chunkSize under a blob of its own, in
// requests of their own, and the record holds a reference to it; a Write
// is then one small transaction, all or nothing, whatever it carries. A
// value starts with a tag byte: tagInline (the bytes follow) or tagBlob
// (the blob's ID, then its length). A blob goes with the record that
// refers to it (overwritten or deleted in the same transaction). A Write
// that fails after its blobs were written leaves them: Sweep removes
// blobs no record refers to.
//
// # Concurrency
//
// A Write reads the logs' last sequence numbers and the blob references of
// the records it replaces, then commits only if none of them moved since
// (a transaction comparing their mod revisions); it retries otherwise.
// So concurrent Writes, from this process or another, are each atomic and
// appends to a log get consecutive numbers. A process's own Writes are
// group-committed: the Writes that queue while one commits go together in
// the next transaction, in queue order (they would otherwise race for the
// events log's numbers); a batch that fails is committed again one Write
// at a time, so each Write succeeds or fails on its own.
package etcdstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slipway-dev/slipway/statestore"
)

const (
	// DefaultPrefix is where a store keeps its keys.
	DefaultPrefix = "/slipway/"
	inlineMax     = 256 << 10
	chunkSize     = 512 << 10
	tagInline     = 0
	tagBlob       = 1
	maxRetries    = 64
)

var errClosed = errors.New("etcd state store is closed")

// ErrFenced is wrapped by the error of a write refused because the fence
// it was made under fell: the writer is no longer the leader.
var ErrFenced error = unavailable{errors.New("this replica is no longer the leader: its write was refused")}

// unavailable is an error of a store that can't serve now (the API
// answers 503): a fence that fell, a cluster without its quorum.
type unavailable struct{ error }

func (u unavailable) Unwrap() error     { return u.error }
func (u unavailable) Unavailable() bool { return true }

// Store is the state store on an etcd cluster.
type Store struct {
	c      *clientv3.Client
	kv     quorumKV // c's KV, reads served and writes refused plainly without a quorum (quorum.go)
	own    bool     // Close closes the client
	prefix string
	closed *atomic.Bool
	// w orders this store's Writes (group commit): appends to a log (the
	// events) would otherwise race each other for its sequence number and
	// retry; other processes' writes are still caught by the
	// transaction's comparisons.
	w *writer
	// fence, when set, is a key every write requires to be the one
	// created at fenceRev: the leader's key of an election (Fenced).
	fence    string
	fenceRev int64
	lim      Limits // the members' limits (staged.go)
	// marks is the lease the Writes' marks are attached to (writeonce.go).
	marks *markLease
	// stageHook, set by tests, stops a staged Write at a step as a
	// crash would (staged.go).
	stageHook func(step string) error
}

// Fenced is the store with every write (Write, PutRevision) fenced: it
// commits only while key is the one created at etcd revision rev (the
// leader key of an election, concurrency.Election's Key and Rev), and
// fails with ErrFenced once it is not, so a leader that lost its lease,
// however late its write arrives, writes nothing. Reads are not fenced.
// Close of either closes both.
func (s *Store) Fenced(key string, rev int64) *Store {
	f := *s
	f.fence, f.fenceRev, f.w = key, rev, &writer{} // its Writes are batched with its own only
	return &f
}

// fenced adds the fence to a transaction's conditions.
func (s *Store) fenced(conds []clientv3.Cmp) []clientv3.Cmp {
	if s.fence == "" {
		return conds
	}
	return append(conds, clientv3.Compare(clientv3.CreateRevision(s.fence), "=", s.fenceRev))
}

// fenceFell reports whether a failed transaction failed on the fence.
func (s *Store) fenceFell(ctx context.Context) (bool, error) {
	if s.fence == "" {
		return false, nil
	}
	resp, err := s.kv.Get(ctx, s.fence)
	if err != nil {
		return false, err
	}
	return len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != s.fenceRev, nil
}

// New is a store over c under prefix ("" : DefaultPrefix). Close does not
// close c.
func New(c *clientv3.Client, prefix string) *Store {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &Store{c: c, kv: quorumKV{kv: c.KV, q: &quorumState{}, ctx: c.Ctx()}, prefix: prefix, closed: &atomic.Bool{}, w: &writer{},
		marks: &markLease{}}
}

// Open connects to the cluster of cfg and returns a store under prefix;
// Close closes the connection.
func Open(cfg clientv3.Config, prefix string) (*Store, error) {
	c, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd %v: %w", cfg.Endpoints, err)
	}
	s := New(c, prefix)
	s.own = true
	return s, nil
}

// Close releases the store; other methods fail after it.
func (s *Store) Close() error {
	if s.closed.Swap(true) || !s.own {
		return nil
	}
	return s.c.Close()
}

func (s *Store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return errClosed
	}
	return nil
}

// keys

func (s *Store) recKey(coll, key string) string { return s.prefix + "rec/" + coll + "/" + key }
func (s *Store) recPrefix(coll string) string   { return s.prefix + "rec/" + coll + "/" }
func (s *Store) logPrefix(log string) string    { return s.prefix + "log/" + log + "/" }
func (s *Store) logKey(log string, seq uint64) string {
	return fmt.Sprintf("%s%020d", s.logPrefix(log), seq)
}
func (s *Store) logSeqKey(log string) string { return s.prefix + "logseq/" + log }
func (s *Store) blobPrefix(id string) string { return s.prefix + "blob/" + id + "/" }

// values

// encode is the stored form of v: inline, or (over inlineMax) a reference
// to a blob written now in chunks.
func (s *Store) encode(ctx context.Context, v []byte) ([]byte, error) {
	if len(v) <= inlineMax {
		return append([]byte{tagInline}, v...), nil
	}
	id := newID()
	for n, off := 0, 0; off < len(v); n, off = n+1, off+chunkSize {
		chunk := v[off:min(off+chunkSize, len(v))]
		if _, err := s.kv.Put(ctx, fmt.Sprintf("%s%06d", s.blobPrefix(id), n), string(chunk)); err != nil {
			return nil, fmt.Errorf("write a value's chunk: %w", err)
		}
	}
	ref := make([]byte, 0, 1+len(id)+8)
	ref = append(ref, tagBlob)
	ref = append(ref, id...)
	return binary.BigEndian.AppendUint64(ref, uint64(len(v))), nil
}

// newID is a random ID of 32 hex digits (a blob's, a stage's).
func newID() string {
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand)
	return hex.EncodeToString(raw[:])
}

// blobRef is the blob a stored value refers to ("" when inline).
func blobRef(stored []byte) (id string, size uint64, ok bool) {
	if len(stored) != 1+32+8 || stored[0] != tagBlob {
		return "", 0, false
	}
	return string(stored[1:33]), binary.BigEndian.Uint64(stored[33:]), true
}

// decode is the value a stored form holds, its blob read when it refers to one.
func (s *Store) decode(ctx context.Context, stored []byte) ([]byte, error) {
	if len(stored) == 0 {
		return nil, errors.New("etcd state store: an empty stored value (not written by this store)")
	}
	if stored[0] == tagInline {
		return append([]byte{}, stored[1:]...), nil
	}
	id, size, ok := blobRef(stored)
	if !ok {
		return nil, fmt.Errorf("etcd state store: a stored value with tag %d (not written by this store)", stored[0])
	}
	resp, err := s.kv.Get(ctx, s.blobPrefix(id), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, size)
	for _, kv := range resp.Kvs {
		out = append(out, kv.Value...)
	}
	if uint64(len(out)) != size {
		return nil, fmt.Errorf("etcd state store: blob %s holds %d bytes, want %d", id, len(out), size)
	}
	return out, nil
}

// records

// Write applies ops atomically, in order (see the package comment).
func (s *Store) Write(ctx context.Context, ops ...statestore.Op) ([]uint64, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	ops = statestore.Attach(ctx, ops) // the API's idempotency record, in the same transaction
	if err := statestore.ValidateOps(ops); err != nil {
		return nil, err
	}
	plan, err := s.planWrite(ctx, ops)
	if err != nil {
		return nil, err
	}
	return s.groupCommit(ctx, plan)
}

// writer is a store's commit turn and the Writes queued for it.
type writer struct {
	turn  sync.Mutex
	mu    sync.Mutex // the queue
	queue []*pendingWrite
}

// pendingWrite is a Write waiting for a commit.
type pendingWrite struct {
	plan *writePlan
	done chan writeResult // buffered: the committer never waits
}

type writeResult struct {
	seqs []uint64
	err  error
}

// groupCommit commits plan with the Writes other goroutines of this
// process queued meanwhile, in one transaction (group commit, as bbolt's
// store does): the first to take the commit turn commits the whole queue
// in queue order; a batch that fails is committed again one Write at a
// time, so each Write still succeeds or fails on its own.
func (s *Store) groupCommit(ctx context.Context, plan *writePlan) ([]uint64, error) {
	me := &pendingWrite{plan: plan, done: make(chan writeResult, 1)}
	w := s.w
	w.mu.Lock()
	w.queue = append(w.queue, me)
	w.mu.Unlock()
	w.turn.Lock()
	select {
	case r := <-me.done: // committed by the committer before us
		w.turn.Unlock()
		return r.seqs, r.err
	default:
	}
	w.mu.Lock()
	batch := w.queue
	w.queue = nil
	w.mu.Unlock()
	s.commitBatch(ctx, batch)
	w.turn.Unlock()
	r := <-me.done
	return r.seqs, r.err
}

// commitBatch commits the Writes of batch in queue order, as many
// together as one transaction takes, and delivers each its result.
func (s *Store) commitBatch(ctx context.Context, batch []*pendingWrite) {
	for len(batch) > 0 {
		n := fitting(batch, s.lim)
		s.commitGroup(ctx, batch[:n])
		batch = batch[n:]
	}
}

// fitting is how many of batch's first Writes fit one transaction
// together (one at least): their records, appends, logs and bytes summed,
// an upper bound of what they hold merged.
func fitting(batch []*pendingWrite, l Limits) int {
	sum := &writePlan{last: map[string]int{}}
	for i, w := range batch {
		sum.ops = append(sum.ops, w.plan.ops...)
		sum.encoded = append(sum.encoded, w.plan.encoded...)
		sum.marks = append(sum.marks, w.plan.marks...)
		for k := range w.plan.last {
			sum.last[fmt.Sprint(i, k)] = 0 // counted apart: an upper bound
		}
		for _, l := range w.plan.logs {
			if !containsStr(sum.logs, l) {
				sum.logs = append(sum.logs, l)
			}
		}
		if i > 0 && !sum.fits(l) {
			return i
		}
	}
	return len(batch)
}

// commitGroup commits the Writes of batch together, else one at a time,
// and delivers each its result.
func (s *Store) commitGroup(ctx context.Context, batch []*pendingWrite) {
	if len(batch) == 1 {
		seqs, err := s.commit(ctx, batch[0].plan)
		batch[0].done <- writeResult{seqs, err}
		return
	}
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute) // not one caller's
	defer cancel()
	merged := &writePlan{}
	for _, w := range batch {
		merged.add(w.plan)
	}
	seqs, err := s.commit(bctx, merged)
	if isUnavailable(err) { // no quorum: each alone would wait as long again
		for _, w := range batch {
			w.done <- writeResult{nil, err}
		}
		return
	}
	if err != nil {
		for _, w := range batch {
			seqs, err := s.commit(bctx, w.plan)
			w.done <- writeResult{seqs, err}
		}
		return
	}
	for _, w := range batch {
		n := w.plan.appends()
		w.done <- writeResult{seqs: seqs[:n:n]}
		seqs = seqs[n:]
	}
}

// commit commits one plan, retrying while other processes' writes move
// what it read.
func (s *Store) commit(ctx context.Context, plan *writePlan) ([]uint64, error) {
	if !plan.fits(s.lim) {
		return s.commitStaged(ctx, plan)
	}
	wait := newQuorumWaiter(s.kv.q)
	for range maxRetries {
		seqs, done, err := s.tryWrite(ctx, plan)
		for err != nil && wait.again(ctx, err) { // the etcd leader changed, or is being elected
			seqs, done, err = s.tryWrite(ctx, plan)
		}
		if errors.Is(err, errTooLarge) { // the blobs it replaces made it so
			return s.commitStaged(ctx, plan)
		}
		if err != nil || done {
			return seqs, err
		}
		if fell, err := s.fenceFell(ctx); err != nil || fell {
			return nil, cmp.Or(err, ErrFenced)
		}
		if err := s.rollForward(ctx); err != nil { // a staged Write pending: finish it first
			return nil, err
		}
	}
	return nil, fmt.Errorf("etcd state store: a Write lost %d races in a row to concurrent writers; try again", maxRetries)
}

// writePlan is a Write's ops with their values encoded, the last op of
// each record (etcd takes a key once in a transaction), and the logs
// appended to.
type writePlan struct {
	ops     []statestore.Op
	encoded [][]byte       // by op index (Put and Append)
	last    map[string]int // record key -> index of its last op
	logs    []string
	marks   []writeMark // each Write's (writeonce.go)
}

// add appends q's ops to p, as if q's Write came right after p's.
func (p *writePlan) add(q *writePlan) {
	if p.last == nil {
		p.last = map[string]int{}
	}
	off := len(p.ops)
	p.ops = append(p.ops, q.ops...)
	p.encoded = append(p.encoded, q.encoded...)
	for k, i := range q.last {
		p.last[k] = off + i
	}
	for _, l := range q.logs {
		if !containsStr(p.logs, l) {
			p.logs = append(p.logs, l)
		}
	}
	p.marks = append(p.marks, q.marks...)
}

// appends counts the plan's Append ops (the sequence numbers it gets).
func (p *writePlan) appends() int {
	n := 0
	for _, op := range p.ops {
		if op.Kind == statestore.OpAppend {
			n++
		}
	}
	return n
}

func (s *Store) planWrite(ctx context.Context, ops []statestore.Op) (*writePlan, error) {
	p := &writePlan{ops: ops, encoded: make([][]byte, len(ops)), last: map[string]int{}}
	for i, op := range ops {
		switch op.Kind {
		case statestore.OpPut, statestore.OpAppend:
			v, err := s.encode(ctx, op.Value)
			if err != nil {
				return nil, err
			}
			p.encoded[i] = v
		}
		switch op.Kind {
		case statestore.OpPut, statestore.OpDelete:
			p.last[s.recKey(op.Coll, op.Key)] = i
		case statestore.OpAppend:
			if !containsStr(p.logs, op.Coll) {
				p.logs = append(p.logs, op.Coll)
			}
		}
	}
	p.marks = []writeMark{newMark(p.appends())}
	return p, nil
}

func containsStr(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// tryWrite reads what the Write depends on and commits it if that did not
// move; done is false when it did (try again). A Write whose marks are
// found was committed by an earlier try: it answers what that one got.
func (s *Store) tryWrite(ctx context.Context, p *writePlan) (seqs []uint64, done bool, err error) {
	lease, err := s.lease(ctx) // before the reads: a try commits right after them
	if err != nil {
		return nil, false, err
	}
	deps, err := s.readDeps(ctx, p)
	if err != nil || deps.applied != nil {
		return deps.applied, err == nil, err
	}
	ops, appends := s.planOps(p)
	writes := append(s.etcdOps(ops, deps.last), s.logSeqPuts(p.logs, deps.last, appends)...)
	seqs = stagedSeqs(ops, deps.last)
	for _, id := range deps.dropBlobs {
		writes = append(writes, clientv3.OpDelete(s.blobPrefix(id), clientv3.WithPrefix()))
	}
	writes = append(writes, s.markPuts(p, seqs, lease)...)
	conds := append(deps.conds, s.noStage())
	if len(writes) > s.lim.ops() || len(conds) >= s.lim.ops() {
		return nil, false, errTooLarge
	}
	tr, err := s.kv.Txn(ctx).If(s.fenced(conds)...).Then(writes...).Commit()
	if s.leaseLost(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.limitsErr(err, len(writes))
	}
	return seqs, tr.Succeeded, nil
}

// writeDeps is what a Write read: the comparisons its commit makes, the
// logs' last numbers, the blobs of the records it replaces, and what it
// got when its marks say an earlier try committed it.
type writeDeps struct {
	conds     []clientv3.Cmp
	last      map[string]uint64
	dropBlobs []string
	applied   []uint64
}

// readDeps reads, in one transaction, the logs' last numbers, the
// records the Write replaces and its marks.
func (s *Store) readDeps(ctx context.Context, p *writePlan) (writeDeps, error) {
	var keys []string
	for _, l := range p.logs {
		keys = append(keys, s.logSeqKey(l))
	}
	for k := range p.last {
		keys = append(keys, k)
	}
	var reads []clientv3.Op
	for _, k := range keys {
		reads = append(reads, clientv3.OpGet(k))
	}
	resp, err := s.kv.Txn(ctx).Then(append(reads, s.markReads(p)...)...).Commit()
	if err != nil {
		return writeDeps{}, err
	}
	var marks []*clientv3.GetResponse
	for _, r := range resp.Responses[len(keys):] {
		marks = append(marks, (*clientv3.GetResponse)(r.GetResponseRange()))
	}
	d := writeDeps{last: map[string]uint64{}, conds: s.markConds(p)}
	if d.applied, err = applied(p, marks); err != nil || d.applied != nil {
		return d, err
	}
	for i, r := range resp.Responses[:len(keys)] {
		rr := r.GetResponseRange()
		var mod int64
		if len(rr.Kvs) > 0 {
			mod = rr.Kvs[0].ModRevision
			if i < len(p.logs) {
				if d.last[p.logs[i]], err = parseSeq(rr.Kvs[0]); err != nil {
					return d, err
				}
			} else if id, _, ok := blobRef(rr.Kvs[0].Value); ok {
				d.dropBlobs = append(d.dropBlobs, id)
			}
		}
		d.conds = append(d.conds, clientv3.Compare(clientv3.ModRevision(keys[i]), "=", mod))
	}
	return d, nil
}

// limitsErr says which etcd settings a transaction of this store needs
// when the cluster refuses one as too large: the store keeps under the
// limits it was told (etcd's defaults unless SetLimits said otherwise).
func (s *Store) limitsErr(err error, ops int) error {
	if err == nil {
		return nil
	}
	if msg := err.Error(); strings.Contains(msg, "too many operations in txn request") || strings.Contains(msg, "request is too large") {
		return fmt.Errorf("%w (a transaction of %d operations): the etcd members' --max-txn-ops must be at least %d and --max-request-bytes at least %d (etcd's defaults unless etcdMaxTxnOps and etcdMaxRequestBytes say otherwise; docs/operations.md)",
			err, ops, cmp.Or(s.lim.MaxTxnOps, defaultMaxTxnOps), cmp.Or(s.lim.MaxRequestBytes, defaultMaxRequestBytes))
	}
	return err
}

// Get returns a record's value.
func (s *Store) Get(ctx context.Context, coll, key string) ([]byte, error) {
	if err := s.checkRecord(ctx, coll, key); err != nil {
		return nil, err
	}
	resp, err := s.kv.Get(ctx, s.recKey(coll, key))
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 {
		return nil, statestore.NoRecordError(coll, key)
	}
	return s.decode(ctx, resp.Kvs[0].Value)
}

// ViewRecord calls fn with a record's value.
func (s *Store) ViewRecord(ctx context.Context, coll, key string, fn func(value []byte) error) error {
	v, err := s.Get(ctx, coll, key)
	if err != nil {
		return err
	}
	return fn(v)
}

// List returns the records of coll whose key starts with prefix, in key
// order.
func (s *Store) List(ctx context.Context, coll, prefix string) ([]statestore.Record, error) {
	if err := s.checkName(ctx, "collection", coll); err != nil {
		return nil, err
	}
	base := s.recPrefix(coll)
	resp, err := s.kv.Get(ctx, base+prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, err
	}
	out := make([]statestore.Record, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		v, err := s.decode(ctx, kv.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, statestore.Record{Key: strings.TrimPrefix(string(kv.Key), base), Value: v})
	}
	return out, nil
}

// ReadLog returns up to limit entries of log after seq after.
func (s *Store) ReadLog(ctx context.Context, log string, after uint64, limit int) ([]statestore.LogEntry, error) {
	if err := s.checkName(ctx, "log", log); err != nil {
		return nil, err
	}
	if after == math.MaxUint64 {
		return []statestore.LogEntry{}, nil
	}
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(s.logPrefix(log))),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(int64(limit)))
	}
	resp, err := s.kv.Get(ctx, s.logKey(log, after+1), opts...)
	if err != nil {
		return nil, err
	}
	out := make([]statestore.LogEntry, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		seq, err := strconv.ParseUint(strings.TrimPrefix(string(kv.Key), s.logPrefix(log)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("etcd state store: log key %q: %w", kv.Key, err)
		}
		v, err := s.decode(ctx, kv.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, statestore.LogEntry{Seq: seq, Value: v})
	}
	return out, nil
}

// LastSeq returns the log's highest sequence number.
func (s *Store) LastSeq(ctx context.Context, log string) (uint64, error) {
	if err := s.checkName(ctx, "log", log); err != nil {
		return 0, err
	}
	resp, err := s.kv.Get(ctx, s.logSeqKey(log))
	if err != nil || len(resp.Kvs) == 0 {
		return 0, err
	}
	return strconv.ParseUint(string(resp.Kvs[0].Value), 10, 64)
}

func (s *Store) checkName(ctx context.Context, what, name string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return statestore.ValidateName(what, name)
}

func (s *Store) checkRecord(ctx context.Context, coll, key string) error {
	if err := s.checkName(ctx, "collection", coll); err != nil {
		return err
	}
	return statestore.ValidateKey(coll, key)
}

// Sweep removes the blobs no record, log entry or revision refers to (left
// by Writes that failed after writing them) and answers how many.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	if err := s.rollForward(ctx); err != nil { // a pending stage's plan refers to blobs no record does yet
		return 0, err
	}
	used := map[string]bool{}
	for _, p := range []string{"rec/", "log/", "rev/"} {
		resp, err := s.kv.Get(ctx, s.prefix+p, clientv3.WithPrefix())
		if err != nil {
			return 0, err
		}
		for _, kv := range resp.Kvs {
			if id, _, ok := blobRef(kv.Value); ok {
				used[id] = true
			}
			if p == "rev/" {
				if id := revBlob(kv.Value); id != "" {
					used[id] = true
				}
			}
		}
	}
	resp, err := s.kv.Get(ctx, s.prefix+"blob/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return 0, err
	}
	n := 0
	for _, kv := range resp.Kvs {
		rest := strings.TrimPrefix(string(kv.Key), s.prefix+"blob/")
		id, _, _ := strings.Cut(rest, "/")
		if used[id] {
			continue
		}
		used[id] = true // once
		if _, err := s.kv.Delete(ctx, s.blobPrefix(id), clientv3.WithPrefix()); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Names returns the collections and logs the store holds
// (statestore.Enumerator).
func (s *Store) Names(ctx context.Context) (colls, logs []string, err error) {
	if err := s.check(ctx); err != nil {
		return nil, nil, err
	}
	collect := func(prefix string) ([]string, error) {
		resp, err := s.kv.Get(ctx, s.prefix+prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		if err != nil {
			return nil, err
		}
		var out []string
		for _, kv := range resp.Kvs {
			name, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), s.prefix+prefix), "/")
			if len(out) == 0 || out[len(out)-1] != name {
				out = append(out, name)
			}
		}
		return out, nil
	}
	if colls, err = collect("rec/"); err != nil {
		return nil, nil, err
	}
	logs, err = collect("logseq/")
	slices.Sort(colls)
	slices.Sort(logs)
	return colls, logs, err
}

var _ statestore.Store = (*Store)(nil)
var _ statestore.RecordViewer = (*Store)(nil)

// Prefix is where the store keeps its keys (ending in "/").
func (s *Store) Prefix() string { return s.prefix }
