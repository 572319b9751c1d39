package orchestrator

import (
	"context"
	"errors"
	"slices"
	"sort"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
)

// Collections of reconciliation.
const (
	collDrift     = "drift"          // node/kind → DriftRecord
	collAccepted  = "drift_accepted" // node/kind → the observed value an operator accepted
	collReconcile = "reconciliation" // "last" → ReconcileRun
)

func (r records) drift(ctx context.Context) (map[string]record.DriftRecord, error) {
	return listMap[record.DriftRecord](ctx, r, collDrift)
}

func (r records) accepted(ctx context.Context) (map[string]string, error) {
	return listMap[string](ctx, r, collAccepted)
}

// listMap is every record of coll by key.
func listMap[T any](ctx context.Context, r records, coll string) (map[string]T, error) {
	out := map[string]T{}
	if err := listRecords(ctx, r.s, coll, "", func(k string, v T) { out[k] = v }); err != nil {
		return nil, err
	}
	return out, nil
}

func (b *batch) del(coll, key string) { b.ops = append(b.ops, statestore.Delete(coll, key)) }

// Drift lists the open drift records, by node then kind.
func (e *Engine) Drift(ctx context.Context) ([]record.DriftRecord, error) {
	m, err := e.rec.drift(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]record.DriftRecord, 0, len(m))
	for _, d := range m {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return slices.Index(record.DriftKinds, out[i].Kind) < slices.Index(record.DriftKinds, out[j].Kind)
	})
	return out, nil
}

// ReconcileStatus reports the last run, the next and the open drift.
func (e *Engine) ReconcileStatus(ctx context.Context) (record.ReconcileStatus, error) {
	st := record.ReconcileStatus{Counts: map[record.DriftKind]int{}}
	var last record.ReconcileRun
	switch err := e.rec.getJSON(ctx, collReconcile, "last", &last); {
	case err == nil:
		st.LastRun = &last
	case !errors.Is(err, ErrNotFound):
		return st, err
	}
	e.recon.mu.Lock()
	st.NextRun, st.Running = e.recon.next, e.recon.running
	e.recon.mu.Unlock()
	st.Interval = e.reconcileInterval(ctx).String()
	if e.cfg.SweepInterval < 0 {
		st.Interval = "none (at start only)"
	}
	ds, err := e.rec.drift(ctx)
	if err != nil {
		return st, err
	}
	for _, d := range ds {
		st.Counts[d.Kind]++
	}
	st.Open = len(ds)
	return st, nil
}

// reconcileInterval is the current design's reconciliation interval,
// else the engine's SweepInterval.
func (e *Engine) reconcileInterval(ctx context.Context) time.Duration {
	if d := e.currentDesign(ctx); d != nil {
		if i, ok := d.ReconcileInterval(); ok {
			return i
		}
	}
	return e.cfg.SweepInterval
}

// currentDesign is the current design revision, nil when there is none
// (or it can't be read).
func (e *Engine) currentDesign(ctx context.Context) *design.Design {
	rev, err := statestore.CurrentID(ctx, e.cfg.Store)
	if err != nil {
		return nil
	}
	d, _, err := e.design(ctx, rev)
	if err != nil {
		return nil
	}
	return d
}
