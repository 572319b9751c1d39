package etcdstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Write-once marks.
//
// A transaction may commit while its client sees an error: the etcd
// leader changes between the commit and the answer (ambiguous). The store
// then tries the Write again, and a second try would apply it twice (an
// append to a log gets the next number, as if it were new). So every
// Write carries an ID of its own, and its transaction writes a mark,
// wid/<id> holding the sequence numbers its appends got, and commits only
// while that mark is absent. A try that finds its mark answers what the
// first got and writes nothing. A group commit writes the marks of each
// of its Writes: one committed again alone after the group failed
// ambiguously finds its own. Marks are attached to a lease of MarkTTL, so
// etcd removes them by itself; the store's own tries take far less.

// MarkTTL is how long a Write's mark is kept (a retry within it finds it).
var MarkTTL = 2 * time.Minute

// writeMark is one Write's mark in a plan: its ID and how many appends
// of the plan (in order) are its.
type writeMark struct {
	id      string
	appends int
}

func newMark(appends int) writeMark {
	return writeMark{id: rand.Text(), appends: appends}
}

func (s *Store) markKey(id string) string { return s.prefix + "wid/" + id }

// markLease is the lease marks are attached to, granted once for half
// its life: one grant every MarkTTL/2, not one a Write.
type markLease struct {
	mu    sync.Mutex
	id    clientv3.LeaseID
	until time.Time
}

// lease is the lease to attach marks to now.
func (s *Store) lease(ctx context.Context) (clientv3.LeaseID, error) {
	l := s.marks
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.id != 0 && time.Now().Before(l.until) {
		return l.id, nil
	}
	ttl := max(int64(MarkTTL/time.Second), 5)
	resp, err := s.c.Grant(clientv3.WithRequireLeader(ctx), ttl)
	if err != nil {
		return 0, quorumErr(fmt.Errorf("etcd state store: a lease for the Writes' marks: %w", err))
	}
	l.id, l.until = resp.ID, time.Now().Add(time.Duration(ttl)*time.Second/2)
	return l.id, nil
}

// leaseLost forgets a lease etcd no longer has (revoked, or expired
// while the cluster was away): the next try gets a new one.
func (s *Store) leaseLost(err error) bool {
	if !errors.Is(rpctypes.Error(err), rpctypes.ErrLeaseNotFound) {
		return false
	}
	s.marks.mu.Lock()
	s.marks.id = 0
	s.marks.mu.Unlock()
	return true
}

// markReads are the reads of the plan's marks.
func (s *Store) markReads(p *writePlan) []clientv3.Op {
	out := make([]clientv3.Op, 0, len(p.marks))
	for _, m := range p.marks {
		out = append(out, clientv3.OpGet(s.markKey(m.id)))
	}
	return out
}

// applied answers the sequence numbers the plan got when its marks are
// found (resps: the answers of markReads), nil when none is: not applied
// yet. Some found and not all can't come of this store's Writes.
func applied(p *writePlan, resps []*clientv3.GetResponse) ([]uint64, error) {
	var seqs []uint64
	found := 0
	for i, r := range resps {
		if len(r.Kvs) == 0 {
			continue
		}
		var got []uint64
		if err := json.Unmarshal(r.Kvs[0].Value, &got); err != nil || len(got) != p.marks[i].appends {
			return nil, fmt.Errorf("etcd state store: the mark of Write %s is damaged (%q)", p.marks[i].id, r.Kvs[0].Value)
		}
		seqs = append(seqs, got...)
		found++
	}
	switch found {
	case 0:
		return nil, nil
	case len(resps):
		if seqs == nil {
			seqs = []uint64{}
		}
		return seqs, nil
	}
	return nil, fmt.Errorf("etcd state store: %d of the %d Writes committed together are marked applied; try again", found, len(resps))
}

// markConds require the plan's marks to be absent.
func (s *Store) markConds(p *writePlan) []clientv3.Cmp {
	out := make([]clientv3.Cmp, 0, len(p.marks))
	for _, m := range p.marks {
		out = append(out, clientv3.Compare(clientv3.CreateRevision(s.markKey(m.id)), "=", 0))
	}
	return out
}

// markPuts write each Write's mark with the sequence numbers its appends
// got (seqs: the plan's, in order).
func (s *Store) markPuts(p *writePlan, seqs []uint64, lease clientv3.LeaseID) []clientv3.Op {
	out := make([]clientv3.Op, 0, len(p.marks))
	for _, m := range p.marks {
		own := seqs[:m.appends:m.appends]
		seqs = seqs[m.appends:]
		v, _ := json.Marshal(own)
		out = append(out, clientv3.OpPut(s.markKey(m.id), string(v), clientv3.WithLease(lease)))
	}
	return out
}

// errMarked says a staged Write's marks are found: an earlier try
// committed its stage.
var errMarked = errors.New("etcd state store: the Write was committed by an earlier try")

// marked answers the sequence numbers a plan got when its marks are
// found, nil when not.
func (s *Store) marked(ctx context.Context, p *writePlan) ([]uint64, error) {
	resp, err := s.kv.Txn(ctx).Then(s.markReads(p)...).Commit()
	if err != nil {
		return nil, err
	}
	marks := make([]*clientv3.GetResponse, 0, len(resp.Responses))
	for _, r := range resp.Responses {
		marks = append(marks, (*clientv3.GetResponse)(r.GetResponseRange()))
	}
	return applied(p, marks)
}

// finishMarked ends a staged Write an earlier try committed: its stage,
// if still pending, is applied, and the numbers its mark holds answered.
func (s *Store) finishMarked(ctx context.Context, p *writePlan) ([]uint64, error) {
	seqs, err := s.marked(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := s.rollForward(ctx); err != nil {
		return nil, fmt.Errorf("etcd state store: a large Write committed but not yet applied whole (the next Write applies the rest): %w", err)
	}
	return seqs, nil
}

// appendOps are a plan's appends (stagedSeqs counts them).
func appendOps(ops []stagedOp) []stagedOp {
	var out []stagedOp
	for _, op := range ops {
		if op.Log != "" {
			out = append(out, stagedOp{Log: op.Log, N: op.N})
		}
	}
	return out
}
