package orchestrator_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// flakyServer answers its first reads of machines with the transient
// error a MAAS region's 500 becomes, then passes them on.
type flakyServer struct {
	drivers.Server
	identify, status atomic.Int32 // failures left
}

func (f *flakyServer) IdentifyNode(ctx context.Context, n drivers.Node) (drivers.Machine, drivers.Result, error) {
	if f.identify.Add(-1) >= 0 {
		return drivers.Machine{}, drivers.Result{}, drivers.Errorf(drivers.Transient, "maas GET machines/: 500 Internal server error (injected fault)")
	}
	return f.Server.IdentifyNode(ctx, n)
}

func (f *flakyServer) Status(ctx context.Context, nodes []drivers.NodeRef) ([]drivers.Machine, error) {
	if f.status.Add(-1) >= 0 {
		return nil, drivers.Errorf(drivers.Transient, "maas GET machines/: 500 Internal server error (injected fault)")
	}
	return f.Server.Status(ctx, nodes)
}

// TestAdoptRetriesTransientReads: adopt reads the provisioner (which
// machine is the node's, or the machine named) and nothing else before
// its record; a transient error of those reads is retried as a task's
// calls are, not answered as an internal error that leaves the node's
// record disagreeing with its machine (found by the lifecycle runs, seed
// 423: a MAAS 500 during adopt answered 500 and the node stayed deployed
// on a Ready machine).
func TestAdoptRetriesTransientReads(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	deployAll(t, e)
	ids := machines(t, e)
	e.Close()

	flaky := &flakyServer{}
	fresh := emptyStoreEngine(t, env, func(c *orchestrator.Config) {
		flaky.Server = c.Drivers.Server
		c.Drivers.Server = flaky
	})
	if err := fresh.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fresh.Close)
	names := d.NodeNames()
	flaky.identify.Store(2)
	rec, err := fresh.Adopt(t.Context(), names[0], "", "test")
	if err != nil {
		t.Fatalf("adopt %s through two transient errors: %v", names[0], err)
	}
	if rec.MachineID != ids[names[0]] || rec.Stage != record.StageDeployed {
		t.Errorf("%s adopted machine %q at %s, want %s at deployed", names[0], rec.MachineID, rec.Stage, ids[names[0]])
	}
	flaky.status.Store(2)
	rec, err = fresh.AdoptMachine(t.Context(), names[1], ids[names[1]], "", "test")
	if err != nil {
		t.Fatalf("adopt %s by machine ID through two transient errors: %v", names[1], err)
	}
	if rec.MachineID != ids[names[1]] {
		t.Errorf("%s adopted machine %q, want %s", names[1], rec.MachineID, ids[names[1]])
	}
	if left := flaky.identify.Load() + flaky.status.Load(); left > 0 {
		t.Errorf("%d injected failures never reached the driver", left)
	}
}
