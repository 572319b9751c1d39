package orchestrator_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// slowSightServer's first poll of a machine after its rescue began
// reports "Entering rescue mode", but only once the machine is already in
// rescue mode: the engine's next look (the driver's Recover) then finds
// it there, as under load a poll's answer can be older than the state.
// A first poll that already finds the machine in rescue mode (the lab's
// entry took less than one poll period) answers the state before it, so
// the stale answer does not depend on the machine's speed.
type slowSightServer struct {
	drivers.Server
	stale atomic.Int32 // polls left to answer stale
}

func (s *slowSightServer) Status(ctx context.Context, nodes []drivers.NodeRef) ([]drivers.Machine, error) {
	ms, err := s.Server.Status(ctx, nodes)
	i := slices.IndexFunc(ms, func(m drivers.Machine) bool {
		return m.State == "Entering rescue mode" || m.State == "Rescue mode"
	})
	if err != nil || i < 0 || s.stale.Add(-1) < 0 {
		return ms, err
	}
	for deadline := time.Now().Add(20 * time.Second); ms[i].State != "Rescue mode" && time.Now().Before(deadline); {
		now, err := s.Server.Status(ctx, nodes)
		if err != nil || i < len(now) && now[i].State == "Rescue mode" {
			break
		}
		if !sleepCtx(ctx, 20*time.Millisecond) {
			break
		}
	}
	ms = slices.Clone(ms) // the driver's answer is left as it was
	ms[i].State = "Entering rescue mode"
	return ms, nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// TestRescueRecordsWhatItReached: a node whose rescue_enter succeeded
// records its machine as in rescue mode even when the last poll it waited
// on saw the machine still entering it (a flake of TestRescueEnterExit on
// a loaded machine: the record kept "Entering rescue mode").
func TestRescueRecordsWhatItReached(t *testing.T) {
	t.Parallel()
	node := "r01-gpu01"
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: dcNodes(node), Requester: "test"}, record.TaskSucceeded)
	e.Close()

	slow := &slowSightServer{}
	slow.stale.Store(1)
	e2 := startedEngine(t, env, func(c *orchestrator.Config) {
		slow.Server = c.Drivers.Server
		c.Drivers.Server = slow
	})
	run(t, e2, record.Request{Action: record.ActionRescueEnter, Filter: dcNodes(node), Requester: "test"}, record.TaskSucceeded)
	if slow.stale.Load() > 0 {
		t.Fatalf("the rescue's polls never saw the machine entering rescue mode: nothing was tested")
	}
	if m, _ := dcMachine(env, node); m.Status != "Rescue mode" {
		t.Fatalf("%s: lab status %q, want Rescue mode", node, m.Status)
	}
	if rec := nodeRecord(t, e2, node); rec.Observed != "Rescue mode" {
		t.Errorf("%s: record observed %q at stage %s, want Rescue mode (the lab's)", node, rec.Observed, rec.Stage)
	}
}

// startedEngine starts an engine on env's store and lab with the
// configuration edit makes.
func startedEngine(t *testing.T, env *labrun.Env, edit func(*orchestrator.Config)) *orchestrator.Engine {
	t.Helper()
	cfg := env.Config()
	edit(&cfg)
	e, err := orchestrator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}
