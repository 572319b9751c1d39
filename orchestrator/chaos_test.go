package orchestrator_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// crashStore stands for the process's view of the disk: once tripped
// (the process "dies"), nothing more reaches the store, and the trip
// stops the engine, like kill -9 at that instant. Calls in flight to the
// provisioner still land, as requests already sent would.
type crashStore struct {
	statestore.Store
	writes  atomic.Int64
	tripAt  int64
	tripped atomic.Bool
	onTrip  func()
	once    sync.Once
}

var errCrashed = errors.New("process crashed (test)")

func (c *crashStore) Write(ctx context.Context, ops ...statestore.Op) ([]uint64, error) {
	if c.tripped.Load() {
		return nil, errCrashed
	}
	if c.writes.Add(1) >= c.tripAt {
		c.tripped.Store(true)
		c.once.Do(c.onTrip)
		return nil, errCrashed
	}
	return c.Store.Write(ctx, ops...)
}

// TestChaos deploys 100 nodes (SLIPWAY_CHAOS_NODES sets another count,
// e.g. the 200 it had before #39) through injected MAAS 5xx errors, BMCs
// that do not answer, commissioning and deployment failures, with a crash
// of the engine simulated at 3 random points (a store that stops taking
// writes, then Close; requests in flight still reach MAAS) and a new
// engine started each time; the real SIGKILL run, at 200 nodes, is
// TestChaosKill9 in cmd/orchestrator (make chaos). Every
// node must end deployed or failed with a reason; no machine may leak or
// be allocated twice; the task and its events must survive.
func TestChaos(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("chaos run: skipped with -short")
	}
	nodes := 100
	if s := os.Getenv("SLIPWAY_CHAOS_NODES"); s != "" {
		if _, err := fmt.Sscan(s, &nodes); err != nil || nodes < 20 || nodes > 2000 {
			t.Fatalf("SLIPWAY_CHAOS_NODES=%q: want a node count from 20 to 2000", s)
		}
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("SLIPWAY_CHAOS_SEED"); s != "" {
		if _, err := fmt.Sscan(s, &seed); err != nil {
			t.Fatalf("SLIPWAY_CHAOS_SEED=%q is not a seed: %v (give the integer a failed run logged)", s, err)
		}
	}
	t.Logf("seed %d (SLIPWAY_CHAOS_SEED reproduces the fault and crash points)", seed)
	rnd := rand.New(rand.NewPCG(uint64(seed), 1))
	d := generated(t, nodes)
	names := d.NodeNames()
	faults := &maas.Faults{Seed: seed, Ops: map[string]maas.OpFaults{"*": {Error500: 0.01, Error503: 0.002}},
		Machines: map[string]maas.MachineFaults{}}
	dead := map[string]bool{}
	for i, n := range names {
		switch i % 20 {
		case 3:
			faults.Machines[n] = maas.MachineFaults{FailCommissioning: 1} // within the driver's retries
		case 7:
			faults.Machines[n] = maas.MachineFaults{FailDeploy: 1} // within the engine's deploy retries
		case 11:
			faults.Machines[n] = maas.MachineFaults{FailDeploy: 5} // beyond them: must fail with a reason
			dead[n] = true
		case 15:
			faults.Machines[n] = maas.MachineFaults{BMCUnreachable: true} // never answers
			dead[n] = true
		}
	}
	base := memory.New()
	env := startEnv(t, d, base, faults, func(c *orchestrator.Config) {
		c.Retry = orchestrator.RetryPolicy{Attempts: 4, Base: time.Second, Max: 10 * time.Second}
	})
	// Prepare the site before the chaos begins.
	{
		e := engine(t, env)
		run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "chaos"}, record.TaskSucceeded)
		e.Close()
	}
	var taskID string
	deadline := time.Now().Add(4 * time.Minute)
	for crash := 0; ; crash++ {
		ctx, cancel := context.WithCancel(t.Context())
		// A crash point within the first ~4.5 writes a node (900 at 200
		// nodes): the deploy writes more than that, so each run dies.
		cs := &crashStore{Store: base, tripAt: int64(50 + rnd.IntN(max(nodes*9/2, 100))), onTrip: cancel}
		if crash >= 3 {
			cs.tripAt = 1 << 62 // the last run goes to the end
		}
		cfg := env.Config()
		cfg.Store = cs
		e, err := orchestrator.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if taskID == "" {
			task, err := e.Submit(ctx, record.Request{Action: record.ActionDeployNodes, Requester: "chaos"})
			if err != nil {
				t.Fatal(err)
			}
			taskID = task.ID
		}
		_, err = e.Wait(ctx, taskID)
		e.Close()
		cancel()
		if crash < 3 {
			if err == nil {
				t.Logf("run %d: the task finished before the crash point (%d writes)", crash+1, cs.writes.Load())
				break
			}
			t.Logf("run %d: killed after %d writes", crash+1, cs.tripAt)
			continue
		}
		if err != nil {
			t.Fatalf("final run: %v", err)
		}
		break
	}
	if time.Now().After(deadline) {
		t.Fatalf("chaos run took too long")
	}
	// Inspect the outcome with a fresh engine on the surviving state.
	e := engine(t, env)
	task, res, err := e.Task(t.Context(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	if !task.Status.Finished() {
		t.Fatalf("task %s is %s after the final run", task.ID, task.Status)
	}
	deployed := 0
	for _, r := range res {
		switch {
		case r.Outcome == record.OutcomeSucceeded && r.Stage == record.StageDeployed:
			deployed++
			if dead[r.Node] {
				t.Errorf("%s: deployed although its faults should have failed it", r.Node)
			}
		case r.Outcome == record.OutcomeFailed && r.Reason != "":
			if !dead[r.Node] {
				t.Logf("%s failed (not scripted to): %s: %s", r.Node, r.Stage, r.Reason)
			}
		default:
			t.Errorf("%s: ends %s at %s with reason %q", r.Node, r.Outcome, r.Stage, r.Reason)
		}
	}
	if len(res) != nodes {
		t.Errorf("%d node results, want %d", len(res), nodes)
	}
	if deployed < nodes-len(dead)-nodes/20 {
		t.Errorf("only %d of %d nodes deployed (%d scripted to fail)", deployed, nodes, len(dead))
	}
	a, err := env.Audit(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Leaked) != 0 || a.DuplicateAllocations != 0 || a.DuplicateDeploys != 0 || len(a.Stuck) != 0 {
		t.Fatalf("leaked %v, %d duplicate allocations, %d duplicate deploys, stuck %v", a.Leaked, a.DuplicateAllocations, a.DuplicateDeploys, a.Stuck)
	}
	if a.Deployed != deployed {
		t.Errorf("the lab has %d deployed machines, the task says %d", a.Deployed, deployed)
	}
	// No lost event: the task's start, the verdict of every node, its end.
	evs, err := e.Events(t.Context(), 0, 0, taskID, "")
	if err != nil {
		t.Fatal(err)
	}
	final := map[string]bool{}
	ends := 0
	for _, ev := range evs {
		if ev.Kind == "succeeded" || ev.Kind == "failed" {
			final[ev.Node] = true
		}
		if ev.Kind == "task" && ev.Node == "" && len(ev.Message) > 5 && ev.Message[:5] == "task " && task.Status.Finished() {
			ends++
		}
	}
	if len(final) != nodes {
		t.Errorf("final events for %d nodes, want %d", len(final), nodes)
	}
	t.Logf("%d deployed, %d failed (%d scripted), %d MAAS requests, %d events", deployed, nodes-deployed, len(dead), a.MAASRequests, len(evs))
}
