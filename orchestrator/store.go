package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
)

// Store is what the engine needs of the state store: its records and
// logs, and the stored design revisions.
type Store interface {
	statestore.Records
	Revision(ctx context.Context, idOrPrefix string) (statestore.Revision, error)
	History(ctx context.Context) ([]statestore.RevisionInfo, error)
}

// Collections and logs the engine keeps in the store.
const (
	collNodes     = "nodes"      // key: node name → NodeRecord
	collTasks     = "tasks"      // key: task ID → Task
	collTaskNodes = "task_nodes" // key: task ID + "/" + node → NodeResult
	logEvents     = "events"     // Event
)

// kinds are the engine's kinds of stored record, by collection (the
// event log's under its name): each record carries its schema version,
// and one a newer release wrote is refused (internal/storedrec).
var kinds = map[string]*storedrec.Kind{
	collNodes:     storedrec.NewKind("node record", reflect.TypeFor[record.NodeRecord]()),
	collTasks:     storedrec.NewKind("task record", reflect.TypeFor[record.Task]()),
	collTaskNodes: storedrec.NewKind("task node record", reflect.TypeFor[record.NodeResult]()),
	logEvents:     storedrec.NewKind("event", reflect.TypeFor[record.Event]()),
	collInventory: storedrec.NewKind("inventory", reflect.TypeFor[drivers.Inventory]()),
	collAsBuilt:   storedrec.NewKind("as-built record", reflect.TypeFor[record.AsBuiltRecord]()),
	collDrift:     storedrec.NewKind("drift record", reflect.TypeFor[record.DriftRecord]()),
	collAccepted:  storedrec.NewKind("accepted drift", reflect.TypeFor[string]()),
	collReconcile: storedrec.NewKind("reconciliation record", reflect.TypeFor[record.ReconcileRun]()),
}

// kindOf is coll's kind of record; it panics for a collection without
// one (a programming error any test of the engine finds).
func kindOf(coll string) *storedrec.Kind {
	k := kinds[coll]
	if k == nil {
		panic("orchestrator: no kind of record for collection " + coll)
	}
	return k
}

// ErrNotFound is wrapped by errors for unknown tasks and nodes.
var ErrNotFound = errors.New("not found")

// records reads and writes the engine's typed records.
type records struct{ s Store }

func (r records) getJSON(ctx context.Context, coll, key string, v any) error {
	b, err := r.s.Get(ctx, coll, key)
	if errors.Is(err, statestore.ErrNoRecord) {
		return fmt.Errorf("%w: %s %q", ErrNotFound, strings.TrimSuffix(coll, "s"), key)
	}
	if err != nil {
		return err
	}
	return kindOf(coll).Decode(key, b, v)
}

func (r records) node(ctx context.Context, name string) (record.NodeRecord, bool, error) {
	var n record.NodeRecord
	err := r.getJSON(ctx, collNodes, name, &n)
	if errors.Is(err, ErrNotFound) {
		return record.NodeRecord{Name: name, Stage: record.StagePending}, false, nil
	}
	return n, err == nil, err
}

// listRecords decodes every record of coll under prefix (converted from
// the version it was stored in) and hands each to add with its key.
func listRecords[T any](ctx context.Context, s Store, coll, prefix string, add func(key string, v T)) error {
	recs, err := s.List(ctx, coll, prefix)
	if err != nil {
		return err
	}
	k := kindOf(coll)
	for _, rec := range recs {
		var v T
		if err := k.Decode(rec.Key, rec.Value, &v); err != nil {
			return err
		}
		add(rec.Key, v)
	}
	return nil
}

// listSlice is listRecords into a slice, in the store's key order.
func listSlice[T any](ctx context.Context, s Store, coll, prefix string) ([]T, error) {
	out := []T{}
	err := listRecords(ctx, s, coll, prefix, func(_ string, v T) { out = append(out, v) })
	return out, err
}

func (r records) nodes(ctx context.Context) ([]record.NodeRecord, error) {
	out, err := listSlice[record.NodeRecord](ctx, r.s, collNodes, "")
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (r records) task(ctx context.Context, id string) (record.Task, error) {
	var t record.Task
	err := r.getJSON(ctx, collTasks, id, &t)
	return t, err
}

func (r records) tasks(ctx context.Context) ([]record.Task, error) {
	out, err := listSlice[record.Task](ctx, r.s, collTasks, "")
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (r records) results(ctx context.Context, taskID string) ([]record.NodeResult, error) {
	out, err := listSlice[record.NodeResult](ctx, r.s, collTaskNodes, taskID+"/")
	if err != nil {
		return nil, err
	}
	return out, nil
}

// batch collects the changes of one transition, written atomically.
type batch struct{ ops []statestore.Op }

func (b *batch) put(coll, key string, v any) {
	raw, err := kindOf(coll).Encode(v)
	if err != nil { // only plain data is marshalled here
		panic(fmt.Sprintf("orchestrator: encode %s %s: %v", coll, key, err))
	}
	b.ops = append(b.ops, statestore.Put(coll, key, raw))
}

func (b *batch) node(n record.NodeRecord)                 { b.put(collNodes, n.Name, n) }
func (b *batch) task(t record.Task)                       { b.put(collTasks, t.ID, t) }
func (b *batch) result(task string, nr record.NodeResult) { b.put(collTaskNodes, task+"/"+nr.Node, nr) }

func (b *batch) event(ev record.Event) {
	op, err := EventOp(ev)
	if err != nil {
		panic(fmt.Sprintf("orchestrator: encode event: %v", err))
	}
	b.ops = append(b.ops, op)
}

// EventOp is the write that appends ev to the engine's event log in its
// stored form (with its schema version); the log's other writers
// (introspection's reports) use it too.
func EventOp(ev record.Event) (statestore.Op, error) {
	raw, err := kindOf(logEvents).Encode(ev)
	if err != nil {
		return statestore.Op{}, err
	}
	return statestore.Append(logEvents, raw), nil
}

func (r records) write(ctx context.Context, b *batch) error {
	if len(b.ops) == 0 {
		return nil
	}
	_, err := r.s.Write(ctx, b.ops...)
	return err
}

// events reads the event log after seq, filtered.
func (r records) events(ctx context.Context, after uint64, limit int, task, node string) ([]record.Event, error) {
	var out []record.Event
	for {
		entries, err := r.s.ReadLog(ctx, logEvents, after, 1000)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			var ev record.Event
			if err := kindOf(logEvents).Decode(fmt.Sprint(e.Seq), e.Value, &ev); err != nil {
				return nil, err
			}
			ev.Seq = e.Seq
			after = e.Seq
			if (task == "" || ev.Task == task) && (node == "" || ev.Node == node) {
				out = append(out, ev)
				if limit > 0 && len(out) >= limit {
					return out, nil
				}
			}
		}
		if len(entries) < 1000 {
			return out, nil
		}
	}
}

// newTaskID returns a task ID that sorts by creation time.
func newTaskID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405.000") + "-" + hex.EncodeToString(b[:])
}
