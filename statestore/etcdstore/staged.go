package etcdstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slipway-dev/slipway/statestore"
)

// Limits are the etcd members' --max-txn-ops and --max-request-bytes
// (zero: etcd's defaults, 128 and 1.5 MiB). A transaction of the store
// carries at most ops() operations in each of its lists (compares,
// writes) and bytes() of keys and values, so the store runs on an etcd
// started without flags of its own; members started with larger limits,
// told here, let it merge more Writes in a transaction.
type Limits struct {
	MaxTxnOps       int
	MaxRequestBytes int
}

const (
	defaultMaxTxnOps       = 128
	defaultMaxRequestBytes = 3 << 19 // 1.5 MiB
)

// ops is the most operations a list of a transaction gets (a margin
// under the members' limit).
func (l Limits) ops() int { n := cmp.Or(l.MaxTxnOps, defaultMaxTxnOps); return n - n/16 }

// bytes is the most bytes of keys and values a transaction carries (a
// third under the members' limit, for the request's framing).
func (l Limits) bytes() int { return cmp.Or(l.MaxRequestBytes, defaultMaxRequestBytes) * 2 / 3 }

// Check refuses limits the store can't work under: a value's chunk
// (512 KiB) must fit a request, and a transaction take a few records.
func (l Limits) Check() error {
	if l.MaxTxnOps != 0 && l.MaxTxnOps < 32 {
		return fmt.Errorf("etcd max txn ops %d: at least 32 (etcd's default is 128)", l.MaxTxnOps)
	}
	if l.MaxRequestBytes != 0 && l.MaxRequestBytes < 1<<20 {
		return fmt.Errorf("etcd max request bytes %d: at least 1 MiB (etcd's default is 1.5 MiB)", l.MaxRequestBytes)
	}
	return nil
}

// SetLimits tells the store the members' limits (before its first use).
func (s *Store) SetLimits(l Limits) error {
	if err := l.Check(); err != nil {
		return err
	}
	s.lim = l
	return nil
}

// # Staged Writes
//
// A Write too large for one transaction (an engine task over 10,000
// nodes writes a record per node) commits in stages:
//
//  1. its final writes (records put or deleted, log entries at the
//     sequence numbers it reserves) are written as a plan, a value of its
//     own (a blob when large), that nothing refers to yet;
//  2. one transaction commits it: it puts stage/<id> (the plan's
//     reference) and the logs' new last sequence numbers, if no other
//     staged Write is pending, the logs did not move and the fence holds.
//     From here the Write is committed: it is rolled forward, never back;
//  3. the blobs of the records it replaces are listed under
//     stage/<id>/drops (the first list put wins);
//  4. the plan is applied in transactions of at most Limits' writes, each
//     only while stage/<id> exists;
//  5. one transaction deletes the dropped blobs, the plan and the stage.
//
// Every one-transaction Write requires that no stage exists, so no other
// Write lands while a staged one is applied; a Write that finds one
// applies it first (a process that died at any step leaves the next
// writer, in any process, to finish it: each step is idempotent and
// conditional on the stage). Readers may see a staged Write's records
// land in steps: it is atomic for writers and for a crash, not for
// readers.

// stage is the value of stage/<id>.
type stage struct {
	Plan []byte            `json:"plan"` // the plan, stored as encode stores a value
	Base map[string]uint64 `json:"base"` // each log's last sequence number before the Write
}

// stagedOp is one write of a plan: a record's put or delete, or the
// Nth append (from 1) to a log, numbered from the stage's base.
type stagedOp struct {
	Key    string `json:"k,omitempty"`
	Log    string `json:"l,omitempty"`
	N      uint64 `json:"n,omitempty"`
	Value  []byte `json:"v,omitempty"` // stored form
	Delete bool   `json:"d,omitempty"`
}

// key is the etcd key op writes under the stage's bases.
func (s *Store) key(op stagedOp, base map[string]uint64) string {
	if op.Log != "" {
		return s.logKey(op.Log, base[op.Log]+op.N)
	}
	return op.Key
}

func (s *Store) stagePrefix() string { return s.prefix + "stage/" }

// noStage is the condition a one-transaction Write adds: no staged Write
// is pending.
func (s *Store) noStage() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(s.stagePrefix()), "=", 0).WithPrefix()
}

func stageExists(key string) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(key), ">", 0)
}

// errTooLarge: a plan that seemed to fit one transaction does not (the
// blobs of the records it replaces, deleted with them, made it larger).
var errTooLarge = errors.New("etcd state store: a Write too large for one transaction")

// fits reports whether p should commit in one transaction: its reads and
// compares, and its writes, within l's operations, its values within l's
// bytes. A replaced record's blob adds a delete, known only once read: a
// plan it pushes over is staged then (errTooLarge).
func (p *writePlan) fits(l Limits) bool {
	recs := len(p.last) + len(p.marks)
	writes := recs + p.appends() + len(p.logs)
	return recs+len(p.logs)+2 <= l.ops() && writes <= l.ops() && p.bytes() <= l.bytes()
}

// bytes is the size of p's encoded values.
func (p *writePlan) bytes() int {
	n := 0
	for _, v := range p.encoded {
		n += len(v) + 64 // and its key, about
	}
	return n
}

// commitStaged commits a plan too large for one transaction (see Staged
// Writes above). The plan is written once; each try then reads the logs'
// last numbers and commits at once, so a writer appending often in
// another process does not keep it out.
func (s *Store) commitStaged(ctx context.Context, p *writePlan) ([]uint64, error) {
	ops, appends := s.planOps(p)
	raw, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	planVal, err := s.encode(ctx, raw)
	if err != nil {
		return nil, err
	}
	logOps := appendOps(ops) // what the marks need, apart: a try commits right after its reads
	wait := newQuorumWaiter(s.kv.q)
	for range maxRetries {
		id, base, done, err := s.tryStage(ctx, p, logOps, appends, planVal)
		for err != nil && wait.again(ctx, err) {
			id, base, done, err = s.tryStage(ctx, p, logOps, appends, planVal)
		}
		if errors.Is(err, errMarked) { // an earlier try committed it (writeonce.go)
			seqs, err := s.finishMarked(ctx, p)
			if err == nil {
				s.dropBlobOf(ctx, planVal) // gone with the stage, or this call's own copy of a plan committed by another
			}
			return seqs, err
		}
		if err != nil {
			if !isUnavailable(err) && ctx.Err() == nil { // else the stage may have committed: Sweep removes the plan if not
				s.dropBlobOf(ctx, planVal)
			}
			return nil, err
		}
		if done {
			if err := s.hook("committed"); err != nil {
				return nil, err
			}
			err := s.applyStage(ctx, id)
			for err != nil && wait.again(ctx, err) { // each step is idempotent
				err = s.applyStage(ctx, id)
			}
			if err != nil {
				return nil, fmt.Errorf("etcd state store: a large Write committed but not yet applied whole (the next Write applies the rest): %w", err)
			}
			return stagedSeqs(ops, base), nil
		}
		if fell, err := s.fenceFell(ctx); err != nil || fell {
			s.dropBlobOf(ctx, planVal)
			return nil, cmp.Or(err, ErrFenced)
		}
		if err := s.rollForward(ctx); err != nil {
			return nil, err
		}
	}
	s.dropBlobOf(ctx, planVal)
	return nil, fmt.Errorf("etcd state store: a staged Write lost %d races in a row to concurrent writers; try again", maxRetries)
}

// tryStage commits a written plan (step 2), its appends counted by log,
// with the plan's marks; done is false when a log moved meanwhile or
// another stage is pending; errMarked when an earlier try committed it.
func (s *Store) tryStage(ctx context.Context, p *writePlan, logOps []stagedOp, appends map[string]uint64, planVal []byte) (id string, base map[string]uint64, done bool, err error) {
	if seqs, err := s.marked(ctx, p); err != nil || seqs != nil {
		return "", nil, false, cmp.Or(err, errMarked)
	}
	lease, err := s.lease(ctx)
	if err != nil {
		return "", nil, false, err
	}
	logs := slices.Sorted(maps.Keys(appends))
	base, conds, err := s.readLogSeqs(ctx, logs)
	if err != nil {
		return "", nil, false, err
	}
	id = newID()
	val, _ := json.Marshal(stage{Plan: planVal, Base: base})
	writes := []clientv3.Op{clientv3.OpPut(s.stagePrefix()+id, string(val))}
	writes = append(writes, s.logSeqPuts(logs, base, appends)...)
	writes = append(writes, s.markPuts(p, stagedSeqs(logOps, base), lease)...)
	conds = append(append(conds, s.noStage()), s.markConds(p)...)
	tr, err := s.kv.Txn(ctx).If(s.fenced(conds)...).Then(writes...).Commit()
	if s.leaseLost(err) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, s.limitsErr(err, len(writes))
	}
	return id, base, tr.Succeeded, nil
}

// readLogSeqs reads the logs' last sequence numbers and the conditions
// that they did not move.
func (s *Store) readLogSeqs(ctx context.Context, logs []string) (map[string]uint64, []clientv3.Cmp, error) {
	last := map[string]uint64{}
	var conds []clientv3.Cmp
	for _, l := range logs {
		resp, err := s.kv.Get(ctx, s.logSeqKey(l))
		if err != nil {
			return nil, nil, err
		}
		var mod int64
		if len(resp.Kvs) > 0 {
			if last[l], err = parseSeq(resp.Kvs[0]); err != nil {
				return nil, nil, err
			}
			mod = resp.Kvs[0].ModRevision
		}
		conds = append(conds, clientv3.Compare(clientv3.ModRevision(s.logSeqKey(l)), "=", mod))
	}
	return last, conds, nil
}

// parseSeq is the sequence number a logseq key holds.
func parseSeq(kv *mvccpb.KeyValue) (uint64, error) {
	n, err := strconv.ParseUint(string(kv.Value), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd state store: %s holds %q, not a sequence number", kv.Key, kv.Value)
	}
	return n, nil
}

// logSeqPuts set each log's last sequence number after its appends.
func (s *Store) logSeqPuts(logs []string, base, appends map[string]uint64) []clientv3.Op {
	out := make([]clientv3.Op, 0, len(logs))
	for _, l := range logs {
		out = append(out, clientv3.OpPut(s.logSeqKey(l), strconv.FormatUint(base[l]+appends[l], 10)))
	}
	return out
}

// planOps are p's final writes, its appends numbered from 1 in each log,
// and how many each log gets.
func (s *Store) planOps(p *writePlan) ([]stagedOp, map[string]uint64) {
	var ops []stagedOp
	appends := map[string]uint64{}
	for i, op := range p.ops {
		if op.Kind == statestore.OpAppend {
			appends[op.Coll]++
			ops = append(ops, stagedOp{Log: op.Coll, N: appends[op.Coll], Value: p.encoded[i]})
			continue
		}
		k := s.recKey(op.Coll, op.Key)
		if p.last[k] == i {
			ops = append(ops, stagedOp{Key: k, Value: p.encoded[i], Delete: op.Kind == statestore.OpDelete})
		}
	}
	return ops, appends
}

// etcdOps are the etcd operations of a plan's writes, its appends
// numbered after base.
func (s *Store) etcdOps(ops []stagedOp, base map[string]uint64) []clientv3.Op {
	out := make([]clientv3.Op, 0, len(ops))
	for _, op := range ops {
		if op.Delete {
			out = append(out, clientv3.OpDelete(op.Key))
		} else {
			out = append(out, clientv3.OpPut(s.key(op, base), string(op.Value)))
		}
	}
	return out
}

// stagedSeqs are the sequence numbers the plan's appends got, in order.
func stagedSeqs(ops []stagedOp, base map[string]uint64) []uint64 {
	var seqs []uint64
	for _, op := range ops {
		if op.Log != "" {
			seqs = append(seqs, base[op.Log]+op.N)
		}
	}
	return seqs
}

// hook is the test's crash point at step (nil: none).
func (s *Store) hook(step string) error {
	if s.stageHook == nil {
		return nil
	}
	return s.stageHook(step)
}

// FinishStaged applies the staged Writes a process left pending (it died
// applying one), as the next Write would: a new leader calls it before
// its engine reads its records.
func (s *Store) FinishStaged(ctx context.Context) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return s.rollForward(ctx)
}

// rollForward applies every pending stage.
func (s *Store) rollForward(ctx context.Context) error {
	resp, err := s.kv.Get(ctx, s.stagePrefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return err
	}
	for _, kv := range resp.Kvs {
		id := strings.TrimPrefix(string(kv.Key), s.stagePrefix())
		if strings.Contains(id, "/") {
			continue // a stage's drops
		}
		if err := s.applyStage(ctx, id); err != nil {
			return fmt.Errorf("etcd state store: finishing the staged Write %s: %w", id, err)
		}
	}
	return nil
}

// applyStage applies a committed stage (steps 3 to 5); a stage already
// gone was applied by another writer.
func (s *Store) applyStage(ctx context.Context, id string) error {
	key := s.stagePrefix() + id
	resp, err := s.kv.Get(ctx, key)
	if err != nil || len(resp.Kvs) == 0 {
		return err
	}
	var st stage
	if err := json.Unmarshal(resp.Kvs[0].Value, &st); err != nil {
		return fmt.Errorf("stage %s: %w", id, err)
	}
	raw, err := s.decode(ctx, st.Plan)
	if err != nil {
		if gone, gerr := s.kv.Get(ctx, key, clientv3.WithCountOnly()); gerr == nil && gone.Count == 0 {
			return nil // another writer finished it and took its plan with it
		}
		return err
	}
	var ops []stagedOp
	if err := json.Unmarshal(raw, &ops); err != nil {
		return fmt.Errorf("stage %s's plan: %w", id, err)
	}
	drops, ok, err := s.stageDrops(ctx, key, ops)
	if err != nil || !ok {
		return err
	}
	for _, group := range groupOps(ops, s.lim) {
		writes := s.etcdOps(group, st.Base)
		tr, err := s.kv.Txn(ctx).If(stageExists(key)).Then(writes...).Commit()
		if err != nil || !tr.Succeeded {
			return s.limitsErr(err, len(writes)) // nil: another writer finished it
		}
		if err := s.hook("applied"); err != nil {
			return err
		}
	}
	return s.endStage(ctx, key, st.Plan, drops)
}

// stageDrops is the stage's list of blobs to drop: the one put first, or
// (when none is yet, so no write of the plan landed) the blobs the plan's
// records hold now; ok is false when the stage is gone.
func (s *Store) stageDrops(ctx context.Context, key string, ops []stagedOp) (drops []string, ok bool, err error) {
	for _, group := range groupOps(ops, s.lim) {
		var gets []clientv3.Op
		for _, op := range group {
			if op.Log == "" { // a log entry is new: it replaces nothing
				gets = append(gets, clientv3.OpGet(op.Key))
			}
		}
		resp, err := s.kv.Txn(ctx).Then(gets...).Commit()
		if err != nil {
			return nil, false, err
		}
		for _, r := range resp.Responses {
			if kvs := r.GetResponseRange().Kvs; len(kvs) > 0 {
				if id, _, ok := blobRef(kvs[0].Value); ok {
					drops = append(drops, id)
				}
			}
		}
	}
	val, _ := json.Marshal(drops)
	dkey := key + "/drops"
	if len(val) > s.lim.bytes()/2 {
		return nil, false, fmt.Errorf("etcd state store: a Write replaces %d large values at once; write them in parts", len(drops))
	}
	tr, err := s.kv.Txn(ctx).
		If(stageExists(key), clientv3.Compare(clientv3.CreateRevision(dkey), "=", 0)).
		Then(clientv3.OpPut(dkey, string(val))).
		Else(clientv3.OpGet(key), clientv3.OpGet(dkey)).Commit()
	if err != nil || tr.Succeeded {
		return drops, err == nil, err
	}
	stageKV, dropsKV := tr.Responses[0].GetResponseRange().Kvs, tr.Responses[1].GetResponseRange().Kvs
	if len(stageKV) == 0 {
		return nil, false, nil // applied by another writer
	}
	drops = nil
	if err := json.Unmarshal(dropsKV[0].Value, &drops); err != nil {
		return nil, false, fmt.Errorf("stage drops %s: %w", dkey, err)
	}
	return drops, true, nil
}

// endStage deletes the replaced records' blobs, then the plan and the
// stage together (a writer finishing the stage after a crash here still
// reads the plan).
func (s *Store) endStage(ctx context.Context, key string, plan []byte, drops []string) error {
	var writes []clientv3.Op
	for _, id := range drops {
		writes = append(writes, clientv3.OpDelete(s.blobPrefix(id), clientv3.WithPrefix()))
	}
	for len(writes) > 0 {
		n := min(len(writes), s.lim.ops())
		if _, err := s.kv.Txn(ctx).If(stageExists(key)).Then(writes[:n]...).Commit(); err != nil {
			return err
		}
		writes = writes[n:]
	}
	last := []clientv3.Op{clientv3.OpDelete(key, clientv3.WithPrefix())}
	if id, _, ok := blobRef(plan); ok {
		last = append(last, clientv3.OpDelete(s.blobPrefix(id), clientv3.WithPrefix()))
	}
	_, err := s.kv.Txn(ctx).If(stageExists(key)).Then(last...).Commit()
	return err
}

// groupOps splits ops into groups a transaction under l takes.
func groupOps(ops []stagedOp, l Limits) [][]stagedOp {
	maxOps, maxBytes := l.ops(), l.bytes()
	var out [][]stagedOp
	start, size := 0, 0
	for i, op := range ops {
		n := len(op.Key) + len(op.Value)
		if i > start && (i-start >= maxOps || size+n > maxBytes) {
			out = append(out, ops[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(ops) {
		out = append(out, ops[start:])
	}
	return out
}

// dropBlobOf deletes the blob a stored value refers to, if any (best
// effort: Sweep removes what this misses).
func (s *Store) dropBlobOf(ctx context.Context, stored []byte) {
	if id, _, ok := blobRef(stored); ok {
		_, _ = s.kv.Delete(ctx, s.blobPrefix(id), clientv3.WithPrefix())
	}
}
