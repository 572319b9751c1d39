package orchestrator_test

import (
	"bytes"
	"regexp"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// These tests count goroutines in the process's goroutine profile, so
// they do not run in parallel with other tests (whose engines' goroutines
// would count): go test runs them before the parallel ones.

var goroutineGroup = regexp.MustCompile(`(?m)^(\d+) @`)

// goroutinesIn counts the process's goroutines with frame in their stack
// (the runtime's goroutine profile, not the engine's bookkeeping).
func goroutinesIn(t *testing.T, frame string) int {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, group := range strings.Split(b.String(), "\n\n") {
		m := goroutineGroup.FindStringSubmatch(group)
		if m != nil && strings.Contains(group, frame) {
			c, _ := strconv.Atoi(m[1])
			n += c
		}
	}
	return n
}

// TestWaitingNodesHoldNoGoroutine (#39): nodes whose machines commission
// in the lab wait on the batched poll without a goroutine each (a
// goroutine's stack was most of the engine's memory at 10,000 nodes).
// Failed before: each waiting node's goroutine sat in poller.waitAt.
func TestWaitingNodesHoldNoGoroutine(t *testing.T) {
	d := designtest.Example(t)
	env, err := labrun.Start(t.Context(), labrun.Options{Design: d, Store: memory.New(), TimeScale: 0.02, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	// Commissioning lasts until the cancel: at 6 s, the first machine's
	// could end before the last one's started on a loaded machine.
	env.Lab.MAAS.SetDurations(func(d *maas.Durations) { d.Commission, d.NodeTimeout = 1000*time.Hour, 2000*time.Hour })
	nodes := []string{"r01-cmp01", "r01-cmp02", "r02-cmp01"}
	task, err := e.Submit(t.Context(), record.Request{Action: record.ActionPrepareNodes, Filter: only(nodes...), Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	commissioning := func() bool {
		for _, n := range nodes {
			if labStatus(t, env, n).StatusName != "Commissioning" {
				return false
			}
		}
		return true
	}
	eventually(t, time.Minute, "every node's machine commissioning in the lab", commissioning)
	// While the lab commissions them, the nodes wait on the poll: none
	// holds a goroutine (a round in progress may, for a moment).
	deadline := time.Now().Add(time.Minute) // a hang guard: the rounds end at once
	held := goroutinesIn(t, "orchestrator.(*nodeRun)")
	for held > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		held = goroutinesIn(t, "orchestrator.(*nodeRun)")
	}
	if held > 0 || !commissioning() {
		t.Fatalf("%d goroutines of node runs while the lab commissioned the nodes' machines (want 0; still commissioning: %v)", held, commissioning())
	}
	if _, err := e.TaskVerb(t.Context(), task.ID, record.VerbCancel, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(t.Context(), task.ID); err != nil {
		t.Fatal(err)
	}
}

// TestRoundGateBoundsHandlers (#39): with Limits.Rounds 1, at most one
// node runs a stage's handler at a time (counted in the goroutine
// profile), and the deploy still ends with every machine deployed in the
// lab. Failed before: the nodes of a deploy ran their handlers at once.
func TestRoundGateBoundsHandlers(t *testing.T) {
	d := designtest.Example(t)
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) { c.Limits.Rounds = 1 })
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	nodes := []string{"r01-cmp01", "r01-cmp02", "r02-cmp01"}
	task, err := e.Submit(t.Context(), record.Request{Action: record.ActionDeployNodes, Filter: only(nodes...), Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		most = max(most, goroutinesIn(t, "orchestrator.(*nodeRun).stage+"))
		got, _, err := e.Task(t.Context(), task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Finished() {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if most > 1 {
		t.Errorf("%d nodes ran a stage's handler at once, want at most 1 (Limits.Rounds)", most)
	}
	for _, n := range nodes {
		if got := labStatus(t, env, n).StatusName; got != "Deployed" {
			t.Errorf("%s: the lab's machine is %q, want Deployed", n, got)
		}
	}
}
