package orchestrator_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

func startEnv(t *testing.T, d *design.Design, store statestore.Store, faults *maas.Faults, tune func(*orchestrator.Config)) *labrun.Env {
	t.Helper()
	if store == nil {
		store = memory.New()
	}
	tuned := func(c *orchestrator.Config) {
		// A node's first report can come later than the scaled default's
		// 2 s floor when CI runs the race detector beside other labs (two
		// of 50 nodes failed so at load 7); tests of the deadline set theirs.
		c.BootstrapDeadline = 30 * time.Second
		if tune != nil {
			tune(c)
		}
	}
	env, err := labrun.Start(t.Context(), labrun.Options{Design: d, Store: store, TimeScale: 0.001, Faults: faults, Seed: 7, Tune: tuned})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	return env
}

func engine(t *testing.T, env *labrun.Env) *orchestrator.Engine {
	t.Helper()
	e, err := env.Engine(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func run(t *testing.T, e *orchestrator.Engine, req record.Request, want record.TaskStatus) (record.Task, []record.NodeResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	task, err := e.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	task, res, err := e.Task(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != want {
		for _, r := range res {
			t.Logf("%s: %s at %s: %s", r.Node, r.Outcome, r.Stage, r.Reason)
		}
		t.Fatalf("task %s %s: status %s (%s), want %s", task.ID, task.Action, task.Status, task.Message, want)
	}
	return task, res
}

func audit(t *testing.T, env *labrun.Env, e *orchestrator.Engine, deployed int) {
	t.Helper()
	a, err := env.Audit(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	if a.Deployed != deployed || len(a.Leaked) != 0 || a.DuplicateAllocations != 0 || a.DuplicateDeploys != 0 || len(a.Stuck) != 0 {
		t.Fatalf("audit: %d deployed (want %d), leaked %v, %d duplicate allocations, %d duplicate deploys, stuck %v",
			a.Deployed, deployed, a.Leaked, a.DuplicateAllocations, a.DuplicateDeploys, a.Stuck)
	}
}

func TestDeployExampleSite(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	env := startEnv(t, d, nil, nil, nil)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	task, res := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test"}, record.TaskSucceeded)
	if len(res) != len(d.Nodes) {
		t.Fatalf("%d results for %d nodes", len(res), len(d.Nodes))
	}
	// The preflight found the secrets the lab set explicitly (no fallback).
	evs, err := e.Events(t.Context(), 0, 0, task.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(ev record.Event) bool {
		return ev.Kind == "preflight" && strings.Contains(ev.Message, "the 2 secret(s) and 1 image(s) the 8 node(s) need are all there")
	}) {
		t.Errorf("no preflight event among the task's %d events", len(evs))
	}
	for _, r := range res {
		if r.Stage != record.StageDeployed || r.Outcome != record.OutcomeSucceeded {
			t.Errorf("%s: %s %s", r.Node, r.Stage, r.Outcome)
		}
	}
	audit(t, env, e, len(d.Nodes))
	// Every node fetched its assets and reported its boot actions through
	// the introspection API before the engine called it deployed.
	for _, m := range env.Lab.Machines() {
		b := m.Bootstrap()
		if b.State != lab.BootstrapDone || len(b.Reports) == 0 || len(b.Files) == 0 {
			t.Errorf("%s: bootstrap %s (%s), %d reports, %d files", m.Name, b.State, b.Err, len(b.Reports), len(b.Files))
		}
		for _, r := range b.Reports {
			if r.Status == "failure" || r.Code >= 300 {
				t.Errorf("%s: report %+v", m.Name, r)
			}
		}
	}
	// Destroy releases every machine.
	run(t, e, record.Request{Action: record.ActionDestroyNodes, Requester: "test"}, record.TaskSucceeded)
	audit(t, env, e, 0)
}

func generated(t *testing.T, n int) *design.Design {
	t.Helper()
	d, err := labrun.Generated(t.Context(), t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDeploy50Nodes(t *testing.T) {
	t.Parallel()
	d := generated(t, 50)
	env := startEnv(t, d, nil, nil, nil)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	start := time.Now()
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test"}, record.TaskSucceeded)
	t.Logf("50 nodes deployed in %s", time.Since(start).Round(time.Millisecond))
	audit(t, env, e, 50)
	// Redeploy: release, then the whole path again.
	run(t, e, record.Request{Action: record.ActionRedeployNodes, Requester: "test",
		Filter: record.Filter{Sets: []design.NodeFilter{{Racks: []string{d.Nodes[d.NodeNames()[0]].Spec.Rack}}}}},
		record.TaskSucceeded)
	audit(t, env, e, 50)
}

// TestBootActionFailureFailsTheNode: a node whose boot action reports
// failure ends failed at bootstrap with the action's message; its token is
// revoked when destroy releases the machine.
func TestBootActionFailureFailsTheNode(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	bad := d.NodeNames()[0]
	env, err := labrun.Start(t.Context(), labrun.Options{Design: d, Store: memory.New(), TimeScale: 0.001, Seed: 7,
		BootstrapFail: map[string]string{bad: "node-bootstrap"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite}, record.TaskSucceeded)
	_, res := run(t, e, record.Request{Action: record.ActionDeployNodes}, record.TaskPartiallySucceeded)
	for _, r := range res {
		if r.Node == bad {
			if r.Outcome != record.OutcomeFailed || r.Stage != record.StageBootstrap || !strings.Contains(r.Reason, "injected failure") {
				t.Fatalf("%s: %s at %s: %s", r.Node, r.Outcome, r.Stage, r.Reason)
			}
		} else if r.Outcome != record.OutcomeSucceeded {
			t.Errorf("%s: %s at %s: %s", r.Node, r.Outcome, r.Stage, r.Reason)
		}
	}
	rec, err := e.Node(t.Context(), bad)
	if err != nil {
		t.Fatal(err)
	}
	tok := env.Introspection.Token(bad, strconv.Itoa(rec.Deployment))
	get := func() int {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", env.Lab.Machine(bad).Bootstrap().URL+"/v1/self", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != http.StatusOK {
		t.Fatalf("the deployed node's token: %d", code)
	}
	run(t, e, record.Request{Action: record.ActionDestroyNodes, Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{bad}}}}}, record.TaskSucceeded)
	if code := get(); code != http.StatusUnauthorized {
		t.Fatalf("after destroy the token answers %d, want 401", code)
	}
}
