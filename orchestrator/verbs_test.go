package orchestrator_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
)

// prepared starts the lab on d with a prepared site and an engine.
func prepared(t *testing.T, d *design.Design, faults *maas.Faults) (*labrun.Env, *orchestrator.Engine) {
	t.Helper()
	env := startEnv(t, d, nil, faults, nil)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	return env, e
}

// deployAll deploys every node of the design and checks the task succeeded.
func deployAll(t *testing.T, e *orchestrator.Engine) record.Task {
	t.Helper()
	task, _ := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test"}, record.TaskSucceeded)
	return task
}

// applyVerb applies a verb to a finished task, waits for the task to end
// and checks its status; it returns the task's results by node.
func applyVerb(t *testing.T, e *orchestrator.Engine, id string, v record.Verb, want record.TaskStatus) map[string]record.NodeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := e.TaskVerb(ctx, id, v, "test"); err != nil {
		t.Fatalf("%s of task %s: %v", v, id, err)
	}
	if _, err := e.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	task, res, err := e.Task(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != want {
		for _, r := range res {
			t.Logf("%s: %s at %s: %s", r.Node, r.Outcome, r.Stage, r.Reason)
		}
		t.Fatalf("after %s, task %s is %s (%s), want %s", v, id, task.Status, task.Message, want)
	}
	return byNode(res)
}

func results(t *testing.T, e *orchestrator.Engine, id string) map[string]record.NodeResult {
	t.Helper()
	_, res, err := e.Task(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return byNode(res)
}

func byNode(res []record.NodeResult) map[string]record.NodeResult {
	m := map[string]record.NodeResult{}
	for _, r := range res {
		m[r.Node] = r
	}
	return m
}

func nodeRecord(t *testing.T, e *orchestrator.Engine, node string) record.NodeRecord {
	t.Helper()
	rec, err := e.Node(t.Context(), node)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// machines maps node names to the machine IDs their records hold.
func machines(t *testing.T, e *orchestrator.Engine) map[string]string {
	t.Helper()
	recs, err := e.Nodes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range recs {
		if r.MachineID != "" {
			out[r.Name] = r.MachineID
		}
	}
	return out
}

// lifecycle returns the MAAS simulator's counters by hostname (the node name).
func lifecycle(env *labrun.Env) map[string]maas.MachineLifecycle {
	out := map[string]maas.MachineLifecycle{}
	for _, lc := range env.Lab.MAAS.Lifecycle() {
		out[lc.Hostname] = lc
	}
	return out
}

// since returns the transitions of a node's history recorded at or after t.
func since(rec record.NodeRecord, at time.Time) []record.Transition {
	var out []record.Transition
	for _, tr := range rec.History {
		if !tr.At.Before(at) {
			out = append(out, tr)
		}
	}
	return out
}

func targets(trs []record.Transition) []record.Stage {
	var out []record.Stage
	for _, tr := range trs {
		out = append(out, tr.To)
	}
	return out
}

// eventually polls cond every few milliseconds until it holds.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// The deploy workflow's stages, in order.
var deployPath = []record.Stage{record.StageOOBPrepare, record.StageIdentify, record.StageCommission,
	record.StageAsBuilt, record.StageConfigure, record.StageDeploy, record.StageBootstrap, record.StageDeployed}

// pathOf is node n's deploy path: deployPath, from the baseline stage
// when its hardware profile has a baseline (the example's GPU nodes).
func pathOf(d *design.Design, n string) []record.Stage {
	path := deployPath
	if im := d.ImageOf(d.Nodes[n]); im != nil && d.Images[im.Metadata.Name] != nil { // an Image document: synced first
		path = slices.Insert(slices.Clone(path), slices.Index(path, record.StageDeploy), record.StageImages)
	}
	hw := d.Nodes[n].Spec.Hardware
	if hw != nil && (len(hw.Firmware) > 0 || hw.RAID != nil || hw.BIOS != nil && len(hw.BIOS.Attributes) > 0) {
		return append([]record.Stage{record.StageBaseline}, path...)
	}
	return path
}

// TestVerbRetry: a node whose deployments fail beyond the engine's deploy
// retries fails the task partially; retry runs that node only, from the
// deploy stage, and the task succeeds. The other nodes' results are left
// exactly as they were.
func TestVerbRetry(t *testing.T) {
	t.Parallel()
	const bad = "r01-cmp02"
	d := designtest.Example(t)
	// Two failed deployments: the engine's one deploy retry is used up,
	// the third deployment (the retry's) succeeds.
	env, e := prepared(t, d, &maas.Faults{Machines: map[string]maas.MachineFaults{bad: {FailDeploy: 2}}})
	task, res := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test"}, record.TaskPartiallySucceeded)
	before := byNode(res)
	if r := before[bad]; r.Outcome != record.OutcomeFailed || r.Stage != record.StageDeploy || r.Reason == "" {
		t.Fatalf("%s: %s at %s (%q), want failed at deploy with a reason", bad, r.Outcome, r.Stage, r.Reason)
	}
	for n, r := range before {
		if n != bad && r.Outcome != record.OutcomeSucceeded {
			t.Fatalf("%s: %s at %s: %s", n, r.Outcome, r.Stage, r.Reason)
		}
	}
	lcBefore := lifecycle(env)
	if lc := lcBefore[bad]; lc.DeployStarts != 2 || lc.DeployFailures != 2 {
		t.Fatalf("%s before retry: %+v, want 2 deployments, both failed", bad, lc)
	}
	ids := machines(t, e)

	t0 := time.Now().UTC()
	after := applyVerb(t, e, task.ID, record.VerbRetry, record.TaskSucceeded)

	// The other nodes did not run again: their results are untouched.
	for n := range before {
		if n == bad {
			continue
		}
		if diff := cmp.Diff(before[n], after[n]); diff != "" {
			t.Errorf("%s was touched by the retry (-before +after):\n%s", n, diff)
		}
		if diff := cmp.Diff(lcBefore[n], lifecycle(env)[n]); diff != "" {
			t.Errorf("%s: the provisioner saw the retry act on its machine (-before +after):\n%s", n, diff)
		}
	}
	if r := after[bad]; r.Outcome != record.OutcomeSucceeded || r.Stage != record.StageDeployed {
		t.Fatalf("%s after retry: %s at %s: %s", bad, r.Outcome, r.Stage, r.Reason)
	}
	// From the stage that failed: no earlier stage ran again.
	rec := nodeRecord(t, e, bad)
	trs := since(rec, t0)
	if len(trs) == 0 || trs[0].From != record.StageDeploy {
		t.Fatalf("%s: transitions after the retry %v, want the first from deploy", bad, trs)
	}
	if diff := cmp.Diff([]record.Stage{record.StageBootstrap, record.StageDeployed}, targets(trs)); diff != "" {
		t.Errorf("%s: stages entered by the retry (-want +got):\n%s", bad, diff)
	}
	for _, tr := range trs {
		if tr.Task != task.ID {
			t.Errorf("%s: transition %v by task %q, want %s", bad, tr, tr.Task, task.ID)
		}
	}
	if rec.MachineID != ids[bad] {
		t.Errorf("%s: machine %s after the retry, %s before", bad, rec.MachineID, ids[bad])
	}
	if lc := lifecycle(env)[bad]; lc.DeployStarts != 3 || lc.CommissionStarts != lcBefore[bad].CommissionStarts {
		t.Errorf("%s after retry: %+v, want a third deployment and no new commissioning", bad, lc)
	}
	audit(t, env, e, len(d.Nodes))
}

// TestVerbCancelResume: a deploy cancelled while nodes run ends
// cancelled, with nothing left allocated by it (a machine it allocated is
// released); resume continues each cancelled node from its checkpoint (no
// stage before it runs again) and the task succeeds, without a machine
// deployed twice.
func TestVerbCancelResume(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// when says when to cancel, from the task's results and the
		// node records.
		when func(t *testing.T, env *labrun.Env, e *orchestrator.Engine, id string) bool
		// hold is the lab's phase that lasts until the cancel (at the
		// lab's scale it could end first on a loaded machine).
		hold func(*maas.Durations) *time.Duration
	}{
		{"in commission", func(t *testing.T, _ *labrun.Env, e *orchestrator.Engine, id string) bool {
			for _, r := range results(t, e, id) {
				if r.Stage == record.StageCommission {
					return true
				}
			}
			return false
		}, func(d *maas.Durations) *time.Duration { return &d.Commission }},
		{"while a machine deploys", func(t *testing.T, env *labrun.Env, e *orchestrator.Engine, id string) bool {
			lc := lifecycle(env)
			for _, r := range results(t, e, id) {
				if r.Stage == record.StageDeploy && r.Outcome == record.OutcomeRunning && lc[r.Node].DeployStarts > 0 {
					return true
				}
			}
			return false
		}, func(d *maas.Durations) *time.Duration { return &d.Deploy }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := designtest.Example(t)
			env, e := prepared(t, d, nil)
			var lab maas.Durations
			env.Lab.MAAS.SetDurations(func(d *maas.Durations) {
				lab = *d
				*tc.hold(d), d.NodeTimeout = 1000*time.Hour, 2000*time.Hour
			})
			task, err := e.Submit(t.Context(), record.Request{Action: record.ActionDeployNodes, Requester: "test"})
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, 30*time.Second, "a node "+tc.name, func() bool { return tc.when(t, env, e, task.ID) })
			if _, err := e.TaskVerb(t.Context(), task.ID, record.VerbCancel, "test"); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			if _, err := e.Wait(ctx, task.ID); err != nil {
				t.Fatal(err)
			}
			env.Lab.MAAS.SetDurations(func(d *maas.Durations) { *d = lab }) // for the resume
			got, res, err := e.Task(ctx, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != record.TaskCancelled {
				t.Fatalf("task %s after cancel, want cancelled (%s)", got.Status, got.Message)
			}
			cancelled := map[string]record.Stage{} // node → checkpoint
			succeeded := map[string]bool{}
			for _, r := range res {
				switch r.Outcome {
				case record.OutcomeCancelled:
					rec := nodeRecord(t, e, r.Node)
					if rec.Task != "" || rec.Outcome != record.OutcomeCancelled || rec.Intent != nil {
						t.Errorf("%s: record still leased by %q, outcome %s, intent %+v", r.Node, rec.Task, rec.Outcome, rec.Intent)
					}
					cancelled[r.Node] = rec.Stage
				case record.OutcomeSucceeded:
					succeeded[r.Node] = true
				default:
					t.Errorf("%s: %s at %s after cancel: %s", r.Node, r.Outcome, r.Stage, r.Reason)
				}
			}
			if len(cancelled) == 0 {
				t.Fatal("no node was cancelled")
			}
			t.Logf("checkpoints at cancel: %v", cancelled)
			// Compensation: the task keeps no machine it allocated for a
			// node it did not finish.
			owned, err := env.Drivers.Server.Owned(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			ids := machines(t, e)
			for _, m := range owned {
				node := ""
				for n, id := range ids {
					if id == m.MachineID {
						node = n
					}
				}
				if !succeeded[node] {
					t.Errorf("machine %s (%s, node %q) is still owned after the cancel", m.MachineID, m.State, node)
				}
			}
			lc := lifecycle(env)
			released := 0
			for n := range cancelled {
				if c := lc[n]; c.Allocations != c.Releases {
					t.Errorf("%s: cancelled, but its machine was allocated %d times and released %d times", n, c.Allocations, c.Releases)
				}
				if lc[n].Releases > 0 {
					released++
					if cancelled[n] != record.StageReleased {
						t.Errorf("%s: its machine was released, but the checkpoint says %s", n, cancelled[n])
					}
				}
			}
			if tc.name == "while a machine deploys" && released == 0 {
				t.Errorf("no machine was released by the cancel")
			}
			if _, err := e.TaskVerb(t.Context(), task.ID, record.VerbCancel, "test"); !errors.Is(err, orchestrator.ErrConflict) {
				t.Errorf("cancel of a cancelled task: %v, want ErrConflict", err)
			}

			t0 := time.Now().UTC()
			after := applyVerb(t, e, task.ID, record.VerbResume, record.TaskSucceeded)
			for n, r := range after {
				if r.Outcome != record.OutcomeSucceeded || r.Stage != record.StageDeployed {
					t.Errorf("%s after resume: %s at %s: %s", n, r.Outcome, r.Stage, r.Reason)
				}
			}
			for n, at := range cancelled {
				trs := since(nodeRecord(t, e, n), t0)
				if len(trs) == 0 {
					t.Errorf("%s: no transition after the resume", n)
					continue
				}
				// Where the checkpoint says the node continues: a node
				// released by the compensation continues at deploy.
				from := at
				switch at {
				case record.StageReleased:
					from = record.StageDeploy
				case record.StagePending:
					from = record.StagePending
				}
				if trs[0].From != from {
					t.Errorf("%s: cancelled at %s, resumed from %s (%v), want from %s", n, at, trs[0].From, targets(trs), from)
				}
				for _, tr := range trs {
					if i := slices.Index(deployPath, tr.To); i >= 0 && i <= slices.Index(deployPath, from) {
						t.Errorf("%s: resumed from %s but entered %s again (%v)", n, from, tr.To, targets(trs))
					}
				}
			}
			lc = lifecycle(env)
			for n := range succeeded {
				if lc[n].DeployStarts != 1 {
					t.Errorf("%s: finished before the cancel, but deployed %d times", n, lc[n].DeployStarts)
				}
			}
			audit(t, env, e, len(d.Nodes))
		})
	}
}

// TestVerbResumeNotStarted: a node cancelled while it waited for another
// task's lease never started in its task; resume runs it from the top of
// its own workflow (here destroy), whatever stage the other task left in
// its record.
func TestVerbResumeNotStarted(t *testing.T) {
	t.Parallel()
	const held, free = "r01-cmp01", "r01-cmp02"
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	names := func(n ...string) record.Filter {
		return record.Filter{Sets: []design.NodeFilter{{Names: n}}}
	}
	run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: names(held, free), Requester: "test"}, record.TaskSucceeded)
	redeploy, err := e.Submit(t.Context(), record.Request{Action: record.ActionRedeployNodes, Filter: names(held), Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the redeploy to hold "+held, func() bool {
		return results(t, e, redeploy.ID)[held].Outcome == record.OutcomeRunning
	})
	destroy, err := e.Submit(t.Context(), record.Request{Action: record.ActionDestroyNodes, Filter: names(held, free), Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, held+" to wait in the destroy", func() bool {
		return strings.Contains(results(t, e, destroy.ID)[held].Reason, "waiting for task "+redeploy.ID)
	})
	if _, err := e.TaskVerb(t.Context(), destroy.ID, record.VerbCancel, "test"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for id, want := range map[string]record.TaskStatus{destroy.ID: record.TaskCancelled, redeploy.ID: record.TaskSucceeded} {
		if got, err := e.Wait(ctx, id); err != nil || got.Status != want {
			t.Fatalf("task %s: %s (%s), %v; want %s", id, got.Status, got.Message, err, want)
		}
	}
	if r := results(t, e, destroy.ID)[held]; r.Outcome != record.OutcomeCancelled || !r.Started.IsZero() {
		t.Fatalf("%s in the destroy: %s, started %s; want cancelled before it started", held, r.Outcome, r.Started)
	}
	if rec := nodeRecord(t, e, held); rec.Stage != record.StageDeployed {
		t.Fatalf("%s after the redeploy: %s", held, rec.Stage)
	}
	t0 := time.Now().UTC()
	after := applyVerb(t, e, destroy.ID, record.VerbResume, record.TaskSucceeded)
	if r := after[held]; r.Stage != record.StageReleased || r.Started.Before(t0) {
		t.Errorf("%s after resume: %s, started %s (resume at %s)", held, r.Stage, r.Started, t0)
	}
	rec := nodeRecord(t, e, held)
	if diff := cmp.Diff([]record.Stage{record.StageReleased}, targets(since(rec, t0))); diff != "" || rec.Stage != record.StageReleased {
		t.Errorf("%s: stage %s, stages entered by the resume (-want +got):\n%s", held, rec.Stage, diff)
	}
	audit(t, env, e, 0)
}

// TestVerbRerun: rerun of a deployed task runs every node from the top,
// adopting what the provisioner has: nothing is allocated, commissioned
// or deployed a second time.
func TestVerbRerun(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	task := deployAll(t, e)
	lcBefore := lifecycle(env)
	ids := machines(t, e)

	t0 := time.Now().UTC()
	applyVerb(t, e, task.ID, record.VerbRerun, record.TaskSucceeded)
	for _, n := range d.NodeNames() {
		rec := nodeRecord(t, e, n)
		trs := since(rec, t0)
		path := pathOf(d, n)
		if len(trs) == 0 || trs[0].From != path[0] {
			t.Errorf("%s: transitions after rerun %v, want the first from %s", n, trs, path[0])
			continue
		}
		if diff := cmp.Diff(path[1:], targets(trs)); diff != "" {
			t.Errorf("%s: stages entered by the rerun (-want +got):\n%s", n, diff)
		}
		if rec.MachineID != ids[n] {
			t.Errorf("%s: machine %s after rerun, %s before", n, rec.MachineID, ids[n])
		}
	}
	lc := lifecycle(env)
	for _, n := range d.NodeNames() {
		if lc[n].DeployStarts != 1 || lc[n].Allocations != 1 || lc[n].Releases != 0 {
			t.Errorf("%s: %+v, want one allocation, one deployment, no release", n, lc[n])
		}
	}
	if diff := cmp.Diff(lcBefore, lc); diff != "" {
		t.Errorf("the rerun changed machines in the provisioner (-before +after):\n%s", diff)
	}
	audit(t, env, e, len(d.Nodes))
}

// TestVerbRerunAfterFailedDeploy: rerun of a partially succeeded deploy
// runs every node from the top; the node whose deployments failed adopts
// its machine as it is (allocated, Failed deployment) and is deployed
// again, without a duplicate; the deployed nodes are not deployed again.
func TestVerbRerunAfterFailedDeploy(t *testing.T) {
	t.Parallel()
	const bad = "r02-gpu01"
	d := designtest.Example(t)
	env, e := prepared(t, d, &maas.Faults{Machines: map[string]maas.MachineFaults{bad: {FailDeploy: 2}}})
	task, _ := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test"}, record.TaskPartiallySucceeded)
	ids := machines(t, e)
	t0 := time.Now().UTC()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := e.TaskVerb(ctx, task.ID, record.VerbRerun, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	got, res, err := e.Task(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != record.TaskSucceeded {
		for _, r := range res {
			t.Logf("%s: %s at %s: %s", r.Node, r.Outcome, r.Stage, r.Reason)
		}
		t.Fatalf("after rerun, task %s (%s), want succeeded", got.Status, got.Message)
	}
	lc := lifecycle(env)
	for _, n := range d.NodeNames() {
		trs := since(nodeRecord(t, e, n), t0)
		if first := pathOf(d, n)[0]; len(trs) == 0 || trs[0].From != first {
			t.Errorf("%s: transitions after rerun %v, want the first from %s", n, trs, first)
		}
		want := 1
		if n == bad {
			want = 3
		}
		if lc[n].DeployStarts != want {
			t.Errorf("%s: %+v, want %d deployment(s)", n, lc[n], want)
		}
	}
	if rec := nodeRecord(t, e, bad); rec.MachineID != ids[bad] {
		t.Errorf("%s: machine %s after rerun, %s before", bad, rec.MachineID, ids[bad])
	}
	audit(t, env, e, len(d.Nodes))
}

// TestVerbRestartClean: restart-clean releases each machine once, then
// runs the whole workflow again: every machine is deployed a second time,
// after its release, never twice without one.
func TestVerbRestartClean(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	task := deployAll(t, e)

	t0 := time.Now().UTC()
	applyVerb(t, e, task.ID, record.VerbRestartClean, record.TaskSucceeded)
	lc := lifecycle(env)
	for _, n := range d.NodeNames() {
		want := pathOf(d, n)
		rec := nodeRecord(t, e, n)
		trs := since(rec, t0)
		if len(trs) == 0 || trs[0].From != record.StageReleasing {
			t.Errorf("%s: transitions after restart-clean %v, want the first from %s", n, trs, record.StageReleasing)
			continue
		}
		if diff := cmp.Diff(want, targets(trs)); diff != "" {
			t.Errorf("%s: stages entered by restart-clean (-want +got):\n%s", n, diff)
		}
		if c := lc[n]; c.Releases != 1 || c.DeployStarts != 2 || c.Allocations != 2 {
			t.Errorf("%s: %+v, want one release, two allocations and two deployments", n, c)
		}
	}
	audit(t, env, e, len(d.Nodes))
}

// TestVerbConflicts: verbs that the task's state does not allow are
// refused with ErrConflict, and change nothing.
func TestVerbConflicts(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	_, e := prepared(t, d, nil)
	one := record.Filter{Sets: []design.NodeFilter{{Names: []string{"r01-cmp01"}}}}
	task, err := e.Submit(t.Context(), record.Request{Action: record.ActionDeployNodes, Filter: one, Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []record.Verb{record.VerbRetry, record.VerbResume, record.VerbRerun, record.VerbRestartClean} {
		if _, err := e.TaskVerb(t.Context(), task.ID, v, "test"); !errors.Is(err, orchestrator.ErrConflict) {
			t.Errorf("%s of a running task: %v, want ErrConflict", v, err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if got, err := e.Wait(ctx, task.ID); err != nil || got.Status != record.TaskSucceeded {
		t.Fatalf("task %s: %s, %v (the refused verbs must not disturb it)", task.ID, got.Status, err)
	}
	before := results(t, e, task.ID)
	for _, v := range []record.Verb{record.VerbCancel, record.VerbRetry, record.VerbResume} {
		if _, err := e.TaskVerb(t.Context(), task.ID, v, "test"); !errors.Is(err, orchestrator.ErrConflict) {
			t.Errorf("%s of a succeeded task: %v, want ErrConflict", v, err)
		}
	}
	if _, err := e.TaskVerb(t.Context(), task.ID, record.Verb("redo"), "test"); err == nil || errors.Is(err, orchestrator.ErrConflict) {
		t.Errorf("unknown verb: %v, want an error other than a conflict", err)
	}
	if _, err := e.TaskVerb(t.Context(), "no-such-task", record.VerbRetry, "test"); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Errorf("retry of an unknown task: %v, want ErrNotFound", err)
	}
	if _, err := e.TaskVerb(t.Context(), "no-such-task", record.VerbCancel, "test"); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Errorf("cancel of an unknown task: %v, want ErrNotFound", err)
	}
	got, err := e.Wait(ctx, task.ID)
	if err != nil || got.Status != record.TaskSucceeded || got.Cancel {
		t.Errorf("task after the refused verbs: %+v, %v", got, err)
	}
	if diff := cmp.Diff(before, results(t, e, task.ID)); diff != "" {
		t.Errorf("refused verbs changed the results (-before +after):\n%s", diff)
	}
}

// TestMarkManual: a node frozen before a deploy is not touched by it (its
// machine never powers on and MAAS never sees it) while the others
// deploy; release-manual makes it a failed node that retry then deploys.
func TestMarkManual(t *testing.T) {
	t.Parallel()
	const frozen = "r01-cmp02"
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	if _, err := e.ReleaseManual(t.Context(), frozen, "test"); !errors.Is(err, orchestrator.ErrConflict) {
		t.Errorf("release-manual of a node not frozen: %v, want ErrConflict", err)
	}
	rec, err := e.MarkManual(t.Context(), frozen, "disk replacement", "test")
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Frozen || rec.FrozenWhy != "disk replacement" {
		t.Fatalf("record after mark-manual: frozen %v (%q)", rec.Frozen, rec.FrozenWhy)
	}
	task, res := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test"}, record.TaskPartiallySucceeded)
	for n, r := range byNode(res) {
		want := record.OutcomeSucceeded
		if n == frozen {
			want = record.OutcomeManual
		}
		if r.Outcome != want {
			t.Errorf("%s: %s at %s (%s), want %s", n, r.Outcome, r.Stage, r.Reason, want)
		}
	}
	if r := byNode(res)[frozen]; !strings.Contains(r.Reason, "disk replacement") {
		t.Errorf("%s: reason %q does not say why it is frozen", frozen, r.Reason)
	}
	m := env.Lab.Machine(frozen)
	if m.IsPoweredOn() || m.OS() != "" {
		t.Errorf("the frozen node's machine was touched: powered on %v, OS %q", m.IsPoweredOn(), m.OS())
	}
	if lc, ok := lifecycle(env)[frozen]; ok {
		t.Errorf("MAAS acted on the frozen node's machine: %+v", lc)
	}
	if rec := nodeRecord(t, e, frozen); !rec.Frozen || rec.MachineID != "" || rec.Task != "" {
		t.Errorf("frozen record after the task: frozen %v, machine %q, lease %q", rec.Frozen, rec.MachineID, rec.Task)
	}
	// Nothing automatic touches it: not even retry, while it is frozen.
	if _, err := e.TaskVerb(t.Context(), task.ID, record.VerbRetry, "test"); !errors.Is(err, orchestrator.ErrConflict) {
		t.Errorf("retry with only a frozen node to run: %v, want ErrConflict", err)
	}

	rec, err = e.ReleaseManual(t.Context(), frozen, "test")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Frozen || rec.Outcome != record.OutcomeFailed {
		t.Errorf("record after release-manual: frozen %v, outcome %s", rec.Frozen, rec.Outcome)
	}
	if r := results(t, e, task.ID)[frozen]; r.Outcome != record.OutcomeFailed {
		t.Fatalf("%s after release-manual: task result %s, want failed (so that retry picks it)", frozen, r.Outcome)
	}
	before := results(t, e, task.ID)
	after := applyVerb(t, e, task.ID, record.VerbRetry, record.TaskSucceeded)
	if r := after[frozen]; r.Outcome != record.OutcomeSucceeded || r.Stage != record.StageDeployed {
		t.Errorf("%s after retry: %s at %s: %s", frozen, r.Outcome, r.Stage, r.Reason)
	}
	for n := range before {
		if n != frozen {
			if diff := cmp.Diff(before[n], after[n]); diff != "" {
				t.Errorf("%s was touched by the retry (-before +after):\n%s", n, diff)
			}
		}
	}
	if m.OS() == "" {
		t.Errorf("%s: machine not deployed after the retry", frozen)
	}
	audit(t, env, e, len(d.Nodes))
}

// TestAdopt: an engine on an empty store sees the machines another
// deployed as leaks (owned, claimed by no record); adopting each node
// takes the provisioner's state as truth, without touching the machine,
// and the next sweep finds nothing.
func TestAdopt(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	deployAll(t, e)
	ids := machines(t, e)
	e.Close()

	fresh := emptyStoreEngine(t, env, nil)
	if err := fresh.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fresh.Close)
	lcBefore := lifecycle(env)

	rep, err := fresh.Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	leaked := map[string]string{}
	for _, m := range rep.Leaks {
		leaked[m.Node] = m.MachineID
	}
	if diff := cmp.Diff(ids, leaked); diff != "" {
		t.Errorf("leaks seen by the fresh engine (-deployed +leaked):\n%s", diff)
	}
	if rep.Owned != len(d.Nodes) || len(rep.Drift) != 0 || len(rep.Released) != 0 {
		t.Errorf("sweep: %d owned, drift %v, released %v", rep.Owned, rep.Drift, rep.Released)
	}
	if _, err := fresh.Adopt(t.Context(), "no-such-node", "", "test"); !errors.Is(err, orchestrator.ErrNotFound) {
		t.Errorf("adopt of a node not in the design: %v, want ErrNotFound", err)
	}
	for _, n := range d.NodeNames() {
		rec, err := fresh.Adopt(t.Context(), n, "", "test")
		if err != nil {
			t.Fatalf("adopt %s: %v", n, err)
		}
		if rec.Stage != record.StageDeployed || rec.Outcome != record.OutcomeSucceeded ||
			rec.MachineID != ids[n] || rec.Observed != "Deployed" || rec.Intent != nil {
			t.Errorf("%s adopted as %s/%s machine %q (%q), want deployed/succeeded machine %s", n, rec.Stage, rec.Outcome, rec.MachineID, rec.Observed, ids[n])
		}
		if stored := nodeRecord(t, fresh, n); stored.MachineID != ids[n] || stored.Stage != record.StageDeployed {
			t.Errorf("%s: stored record %s machine %q", n, stored.Stage, stored.MachineID)
		}
	}
	rep, err = fresh.Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Leaks) != 0 || len(rep.Drift) != 0 || rep.Owned != len(d.Nodes) {
		t.Errorf("sweep after adopting every node: %d owned, leaks %v, drift %v", rep.Owned, rep.Leaks, rep.Drift)
	}
	if diff := cmp.Diff(lcBefore, lifecycle(env)); diff != "" {
		t.Errorf("sweep or adopt acted on machines (-before +after):\n%s", diff)
	}
	audit(t, env, fresh, len(d.Nodes))
}
