package orchestrator_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// stageWrites is a memory store that counts, per node and stage, the
// writes that store the node's record.
type stageWrites struct {
	*memory.Store
	mu sync.Mutex
	n  map[string]int // node + "/" + stage → writes
	// inventories: node → the stages of its record in the writes that
	// stored its inventory ("" for a write without its record).
	inventories map[string][]string
}

func (s *stageWrites) Write(ctx context.Context, ops ...statestore.Op) ([]uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var inventory, stage string
	for _, op := range ops {
		var rec struct{ Name, Stage string }
		switch {
		case op.Kind != statestore.OpPut:
		case op.Coll == "inventory":
			inventory = op.Key
		case op.Coll == "nodes" && json.Unmarshal(op.Value, &rec) == nil:
			s.n[rec.Name+"/"+rec.Stage]++
			stage = rec.Stage
		}
	}
	if inventory != "" {
		s.inventories[inventory] = append(s.inventories[inventory], stage)
	}
	return s.Store.Write(ctx, ops...)
}

func (s *stageWrites) count(node string, st record.Stage) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[node+"/"+string(st)]
}

// deployCounted prepares the site and deploys every node of d on a
// stageWrites store; it answers the store and the deploy task's events.
func deployCounted(t *testing.T, d *design.Design) (*stageWrites, []record.Event) {
	t.Helper()
	store := &stageWrites{Store: memory.New(), n: map[string]int{}, inventories: map[string][]string{}}
	e := engine(t, startEnv(t, d, store, nil, nil))
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	task, _ := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test"}, record.TaskSucceeded)
	evs, err := e.Events(t.Context(), 0, 0, task.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	return store, evs
}

// TestConfigureSavesOnce: the configure stage runs networking, storage
// and platform in one round and saves the node once for them (the
// transition into the stage), not once per call, and each call's
// message is still an event of the node: networking and storage as
// "step" events, platform in the transition out. Before, the
// stage saved three times (the transition and one per call done but
// the last).
func TestConfigureSavesOnce(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	store, evs := deployCounted(t, d)
	for _, name := range d.NodeNames() {
		if got := store.count(name, record.StageConfigure); got != 1 {
			t.Errorf("%s: %d writes of its record at stage configure, want 1", name, got)
		}
		var steps []string
		transition := ""
		for _, ev := range evs {
			switch {
			case ev.Node != name || ev.Stage != record.StageConfigure && !(ev.Kind == "transition" && strings.HasPrefix(ev.Message, "configure → ")):
			case ev.Kind == "step":
				steps = append(steps, strings.SplitN(ev.Message, ":", 2)[0])
			case ev.Kind == "transition":
				transition = ev.Message
			}
		}
		if !slices.Equal(steps, []string{"networking", "storage"}) || !strings.Contains(transition, ": platform: ") {
			t.Errorf("%s: configure's step events %q, transition %q", name, steps, transition)
		}
	}
}

// TestCommissionEndSavedOnce: a node whose as-built stage has nothing
// to check (a generated node: no hardware expectations, no hardware
// tags, no switch) goes from commission through as-built to configure
// in one save, its inventory in the same write; both transitions are
// events. Before, that was three writes (the inventory, the transition
// to as-built, the one out of it).
func TestCommissionEndSavedOnce(t *testing.T) {
	t.Parallel()
	d := generated(t, 3)
	store, evs := deployCounted(t, d)
	store.mu.Lock()
	defer store.mu.Unlock()
	for _, name := range d.NodeNames() {
		if got, inv := store.n[name+"/"+string(record.StageAsBuilt)], store.inventories[name]; got != 0 || !slices.Equal(inv, []string{string(record.StageConfigure)}) {
			t.Errorf("%s: %d writes of its record at stage as-built (want 0); its inventory written with its record at stages %q (want [configure])", name, got, inv)
		}
		var moves []string
		for _, ev := range evs {
			if ev.Node == name && ev.Kind == "transition" {
				moves = append(moves, strings.SplitN(ev.Message, ":", 2)[0])
			}
		}
		if !slices.Contains(moves, "commission → as-built") || !slices.Contains(moves, "as-built → configure") {
			t.Errorf("%s: transitions %q", name, moves)
		}
	}
}

// holdNetworking is a server driver whose ApplyNetworking waits (after
// applying) until release is closed; it counts ApplyStorage calls.
type holdNetworking struct {
	drivers.Server
	applied, release chan struct{}
	once             sync.Once
	storage          atomic.Int32
}

func (h *holdNetworking) ApplyNetworking(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	res, err := h.Server.ApplyNetworking(ctx, n)
	h.once.Do(func() { close(h.applied) })
	<-h.release
	return res, err
}

func (h *holdNetworking) ApplyStorage(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	h.storage.Add(1)
	return h.Server.ApplyStorage(ctx, n)
}

// TestConfigureStopsBetweenCalls: a node frozen (marked for manual
// intervention) while the configure stage's networking runs ends the
// round after it, networking's step saved, and no storage call is made
// (a freeze, unlike a cancel, ends no context: only the stage's own
// look between its calls stops it); the node ends manual.
func TestConfigureStopsBetweenCalls(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	h := &holdNetworking{applied: make(chan struct{}), release: make(chan struct{})}
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) { h.Server = c.Drivers.Server; c.Drivers.Server = h })
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	node := d.NodeNames()[0]
	task, err := e.Submit(ctx, record.Request{Action: record.ActionDeployNodes, Filter: only(node), Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.applied:
	case <-ctx.Done():
		t.Fatal("networking was never applied")
	}
	if _, err := e.MarkManual(ctx, node, "test: frozen while networking runs", "test"); err != nil {
		t.Fatal(err)
	}
	close(h.release)
	if _, err := e.Wait(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	_, res, err := e.Task(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Outcome != record.OutcomeManual || h.storage.Load() != 0 {
		t.Errorf("results %+v (want the node manual), %d storage calls after the freeze (want 0)", res, h.storage.Load())
	}
	evs, err := e.Events(ctx, 0, 0, task.ID, node)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(ev record.Event) bool { return ev.Kind == "step" && strings.HasPrefix(ev.Message, "networking: ") }) {
		t.Errorf("no networking step event among %d", len(evs))
	}
}

// TestDeployTransitionWithIntent: a node going from configure to a fresh
// deploy is saved once on entering the deploy stage, the transition in
// the same write as the deploy intent (the deploy's first act), not in a
// write of its own right before it; the transition is still an event.
func TestDeployTransitionWithIntent(t *testing.T) {
	t.Parallel()
	d := generated(t, 3)
	store, evs := deployCounted(t, d)
	for _, name := range d.NodeNames() {
		if got := store.count(name, record.StageDeploy); got != 1 {
			t.Errorf("%s: %d writes of its record at stage deploy, want 1 (the intent, with the transition)", name, got)
		}
		if !slices.ContainsFunc(evs, func(ev record.Event) bool {
			return ev.Node == name && ev.Kind == "transition" && strings.HasPrefix(ev.Message, "configure → deploy")
		}) {
			t.Errorf("%s: no transition event configure → deploy", name)
		}
	}
}
