package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/internal/jsonkeys"
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
	return jsonkeys.Unmarshal(b, v)
}

func (r records) node(ctx context.Context, name string) (NodeRecord, bool, error) {
	var n NodeRecord
	err := r.getJSON(ctx, collNodes, name, &n)
	if errors.Is(err, ErrNotFound) {
		return NodeRecord{Name: name, Stage: StagePending}, false, nil
	}
	return n, err == nil, err
}

func (r records) nodes(ctx context.Context) ([]NodeRecord, error) {
	recs, err := r.s.List(ctx, collNodes, "")
	if err != nil {
		return nil, err
	}
	out := make([]NodeRecord, 0, len(recs))
	for _, rec := range recs {
		var n NodeRecord
		if err := jsonkeys.Unmarshal(rec.Value, &n); err != nil {
			return nil, fmt.Errorf("node record %s: %w", rec.Key, err)
		}
		out = append(out, n)
	}
	return out, nil
}

func (r records) task(ctx context.Context, id string) (Task, error) {
	var t Task
	err := r.getJSON(ctx, collTasks, id, &t)
	return t, err
}

func (r records) tasks(ctx context.Context) ([]Task, error) {
	recs, err := r.s.List(ctx, collTasks, "")
	if err != nil {
		return nil, err
	}
	out := make([]Task, 0, len(recs))
	for _, rec := range recs {
		var t Task
		if err := jsonkeys.Unmarshal(rec.Value, &t); err != nil {
			return nil, fmt.Errorf("task record %s: %w", rec.Key, err)
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (r records) results(ctx context.Context, taskID string) ([]NodeResult, error) {
	recs, err := r.s.List(ctx, collTaskNodes, taskID+"/")
	if err != nil {
		return nil, err
	}
	out := make([]NodeResult, 0, len(recs))
	for _, rec := range recs {
		var nr NodeResult
		if err := jsonkeys.Unmarshal(rec.Value, &nr); err != nil {
			return nil, fmt.Errorf("task node record %s: %w", rec.Key, err)
		}
		out = append(out, nr)
	}
	return out, nil
}

// batch collects the changes of one transition, written atomically.
type batch struct{ ops []statestore.Op }

func (b *batch) put(coll, key string, v any) {
	raw, err := json.Marshal(v)
	if err != nil { // only plain data is marshalled here
		panic(fmt.Sprintf("orchestrator: encode %s %s: %v", coll, key, err))
	}
	b.ops = append(b.ops, statestore.Put(coll, key, raw))
}

func (b *batch) node(n NodeRecord)                 { b.put(collNodes, n.Name, n) }
func (b *batch) task(t Task)                       { b.put(collTasks, t.ID, t) }
func (b *batch) result(task string, nr NodeResult) { b.put(collTaskNodes, task+"/"+nr.Node, nr) }

func (b *batch) event(ev Event) {
	raw, err := json.Marshal(ev)
	if err != nil {
		panic(fmt.Sprintf("orchestrator: encode event: %v", err))
	}
	b.ops = append(b.ops, statestore.Append(logEvents, raw))
}

func (r records) write(ctx context.Context, b *batch) error {
	if len(b.ops) == 0 {
		return nil
	}
	_, err := r.s.Write(ctx, b.ops...)
	return err
}

// events reads the event log after seq, filtered.
func (r records) events(ctx context.Context, after uint64, limit int, task, node string) ([]Event, error) {
	var out []Event
	for {
		entries, err := r.s.ReadLog(ctx, logEvents, after, 1000)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			var ev Event
			if err := jsonkeys.Unmarshal(e.Value, &ev); err != nil {
				return nil, fmt.Errorf("event %d: %w", e.Seq, err)
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
