// Package migrate copies a whole state store into another, empty one (a
// bbolt file into etcd, say) and verifies the copy: every collection's
// records, every log's entries under their own sequence numbers, every
// revision and the apply history with its times.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/slipway-dev/slipway/statestore"
)

// batch is how many ops one Write of the copy carries (etcd refuses a
// transaction of more than 128 by default).
const batch = 64

// Source is a store that can name what it holds.
type Source interface {
	statestore.Store
	statestore.Enumerator
}

// Target is a store that can also take a history as it was.
type Target interface {
	Source
	statestore.HistoryImporter
}

// Report counts what was copied (and then found in the target).
type Report struct {
	Revisions, Applies  int
	Collections, Logs   int
	Records, LogEntries int
}

// Copy copies from into to, which must hold nothing, then verifies that
// to holds what from does; progress (may be nil) hears each step.
func Copy(ctx context.Context, from Source, to Target, progress func(string)) (Report, error) {
	say := func(format string, args ...any) {
		if progress != nil {
			progress(fmt.Sprintf(format, args...))
		}
	}
	if err := empty(ctx, to); err != nil {
		return Report{}, err
	}
	var r Report
	hist, err := from.History(ctx)
	if err != nil {
		return r, err
	}
	revs := map[string]statestore.Revision{}
	for _, h := range hist {
		if _, ok := revs[h.ID]; !ok {
			if revs[h.ID], err = from.Revision(ctx, h.ID); err != nil {
				return r, err
			}
		}
	}
	if err := to.ImportHistory(ctx, revs, hist); err != nil {
		return r, err
	}
	r.Revisions, r.Applies = len(revs), len(hist)
	say("%d revisions, %d applies", r.Revisions, r.Applies)
	colls, logs, err := from.Names(ctx)
	if err != nil {
		return r, err
	}
	for _, c := range colls {
		n, err := copyCollection(ctx, from, to, c)
		if err != nil {
			return r, fmt.Errorf("collection %s: %w", c, err)
		}
		r.Collections, r.Records = r.Collections+1, r.Records+n
		say("collection %s: %d records", c, n)
	}
	for _, l := range logs {
		n, err := copyLog(ctx, from, to, l)
		if err != nil {
			return r, fmt.Errorf("log %s: %w", l, err)
		}
		r.Logs, r.LogEntries = r.Logs+1, r.LogEntries+n
		say("log %s: %d entries", l, n)
	}
	return r, verify(ctx, from, to, r)
}

// empty refuses a target that holds anything.
func empty(ctx context.Context, to Target) error {
	colls, logs, err := to.Names(ctx)
	if err != nil {
		return err
	}
	hist, err := to.History(ctx)
	if err != nil {
		return err
	}
	if len(colls)+len(logs)+len(hist) > 0 {
		return fmt.Errorf("the target holds %d collections, %d logs and %d applies: migrate into an empty store", len(colls), len(logs), len(hist))
	}
	return nil
}

func copyCollection(ctx context.Context, from, to statestore.Store, coll string) (int, error) {
	recs, err := from.List(ctx, coll, "")
	if err != nil {
		return 0, err
	}
	for i := 0; i < len(recs); i += batch {
		var ops []statestore.Op
		for _, rec := range recs[i:min(i+batch, len(recs))] {
			ops = append(ops, statestore.Put(coll, rec.Key, rec.Value))
		}
		if _, err := to.Write(ctx, ops...); err != nil {
			return 0, err
		}
	}
	return len(recs), nil
}

// copyLog appends the entries in order; the target log being empty, each
// gets its own sequence number, which is checked.
func copyLog(ctx context.Context, from, to statestore.Store, log string) (int, error) {
	n := 0
	for after := uint64(0); ; {
		es, err := from.ReadLog(ctx, log, after, 1000)
		if err != nil || len(es) == 0 {
			return n, err
		}
		for i := 0; i < len(es); i += batch {
			part := es[i:min(i+batch, len(es))]
			ops := make([]statestore.Op, len(part))
			for j, e := range part {
				ops[j] = statestore.Append(log, e.Value)
			}
			seqs, err := to.Write(ctx, ops...)
			if err != nil {
				return n, err
			}
			for j, e := range part {
				if seqs[j] != e.Seq {
					return n, fmt.Errorf("entry %d became %d in the target: the log was not empty", e.Seq, seqs[j])
				}
			}
			n += len(part)
		}
		after = es[len(es)-1].Seq
	}
}

// verify compares what the target holds with the source.
func verify(ctx context.Context, from Source, to Target, r Report) error {
	fc, fl, err := from.Names(ctx)
	if err != nil {
		return err
	}
	tc, tl, err := to.Names(ctx)
	if err != nil {
		return err
	}
	var errs []error
	if !slices.Equal(fc, tc) || !slices.Equal(fl, tl) {
		errs = append(errs, fmt.Errorf("names differ: collections %v and %v, logs %v and %v", fc, tc, fl, tl))
	}
	for _, c := range fc {
		a, err1 := from.List(ctx, c, "")
		b, err2 := to.List(ctx, c, "")
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if len(a) != len(b) {
			errs = append(errs, fmt.Errorf("collection %s: %d records, %d in the target", c, len(a), len(b)))
		}
	}
	for _, l := range fl {
		a, err1 := from.LastSeq(ctx, l)
		b, err2 := to.LastSeq(ctx, l)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if a != b {
			errs = append(errs, fmt.Errorf("log %s: last entry %d, %d in the target", l, a, b))
		}
	}
	fh, err1 := from.History(ctx)
	th, err2 := to.History(ctx)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if len(fh) != len(th) || (len(fh) > 0 && (fh[len(fh)-1].ID != th[len(th)-1].ID || !fh[0].Applied.Equal(th[0].Applied))) {
		errs = append(errs, fmt.Errorf("history: %d applies, %d in the target (or another current revision)", len(fh), len(th)))
	}
	return errors.Join(errs...)
}
