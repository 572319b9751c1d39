package orchestrator_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// heldIdentify holds the answer of the node's identify call once armed:
// MAAS created the machine (and started commissioning it), and the
// answer naming it has not reached the engine until release is closed.
type heldIdentify struct {
	drivers.Server
	node    string
	armed   atomic.Bool
	created chan struct{} // closed when the held call was carried out
	release chan struct{}
}

func (h *heldIdentify) IdentifyNode(ctx context.Context, n drivers.Node) (drivers.Machine, drivers.Result, error) {
	m, res, err := h.Server.IdentifyNode(ctx, n)
	if n.Name == h.node && h.armed.CompareAndSwap(true, false) {
		close(h.created)
		select {
		case <-h.release:
		case <-ctx.Done():
		}
	}
	return m, res, err
}

// TestCancelWhileMachineCreated cancels a first deploy while MAAS has
// created the node's machine (which it commissions at once) and its
// answer is still on the way: the cancel must not lose the machine, whose
// commissioning it then aborts (MAAS returns a first commissioning to
// New), rather than leave it commissioning unknown to the engine.
func TestCancelWhileMachineCreated(t *testing.T) {
	t.Parallel()
	env, err := labrun.Start(t.Context(), labrun.Options{Design: designtest.Example(t), Store: memory.New(), TimeScale: 0.01, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	cfg := env.Config()
	h := &heldIdentify{Server: cfg.Drivers.Server, node: cancelNode, created: make(chan struct{}), release: make(chan struct{})}
	cfg.Drivers.Server = h
	e, err := orchestrator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	// The commissioning the create starts lasts until the cancel aborts it.
	env.Lab.MAAS.SetDurations(func(d *maas.Durations) { d.Commission, d.NodeTimeout = 1000*time.Hour, 2000*time.Hour })
	h.armed.Store(true)
	task, err := e.Submit(t.Context(), record.Request{Action: record.ActionDeployNodes, Filter: onlyNodes(cancelNode), Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.created:
	case <-time.After(time.Minute):
		t.Fatal("the node's machine was never created")
	}
	if s := labStatus(t, env, cancelNode).StatusName; s != "Commissioning" {
		t.Fatalf("machine of %s is %s once created, want Commissioning", cancelNode, s)
	}
	if got := nodeRecord(t, e, cancelNode); got.MachineID != "" {
		t.Fatalf("%s: the engine knows machine %s already: the create's answer was not held", cancelNode, got.MachineID)
	}
	if _, err := e.TaskVerb(t.Context(), task.ID, record.VerbCancel, "test"); err != nil {
		t.Fatal(err)
	}
	close(h.release) // the answer arrives after the cancel
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := e.Wait(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	if got := labStatus(t, env, cancelNode).StatusName; got != "New" {
		t.Errorf("machine of %s is %s in the lab after the cancel, want New (its commissioning aborted)", cancelNode, got)
	}
	rec := nodeRecord(t, e, cancelNode)
	if rec.MachineID == "" || rec.Outcome != record.OutcomeCancelled || rec.Task != "" {
		t.Errorf("%s: machine %q, outcome %s, lease %q after the cancel, want the machine known, cancelled and free", cancelNode, rec.MachineID, rec.Outcome, rec.Task)
	}
}
