package orchestrator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestLeaseOverlappingTasks runs two tasks on overlapping node sets. The
// node both select is driven by one task at a time: the other task's copy
// waits (its result says for which task) and starts only after the first
// finished it, while that task's other nodes run at once (no barrier).
// Both tasks succeed and no machine is allocated or deployed twice.
func TestLeaseOverlappingTasks(t *testing.T) {
	t.Parallel()
	const shared = "r01-cmp03"
	tests := []struct {
		name  string
		first record.Action
		// atOnce: both tasks are submitted together, and either may take
		// the shared node first; else the second is submitted once the
		// first holds it.
		atOnce bool
	}{
		{"two deploys at once", record.ActionDeployNodes, true},
		{"deploy while prepare holds the node", record.ActionPrepareNodes, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := designtest.Example(t)
			env, e := prepared(t, d, nil)
			names := func(n ...string) record.Filter {
				return record.Filter{Sets: []design.NodeFilter{{Names: n}}}
			}
			a, err := e.Submit(t.Context(), record.Request{Action: tc.first, Requester: "test",
				Filter: names("r01-cmp01", "r01-cmp02", shared)})
			if err != nil {
				t.Fatal(err)
			}
			if !tc.atOnce {
				eventually(t, time.Minute, "the first task to hold "+shared, func() bool {
					return results(t, e, a.ID)[shared].Outcome == record.OutcomeRunning
				})
			}
			b, err := e.Submit(t.Context(), record.Request{Action: record.ActionDeployNodes, Requester: "test",
				Filter: names(shared, "r01-gpu01")})
			if err != nil {
				t.Fatal(err)
			}
			other := map[string]string{a.ID: b.ID, b.ID: a.ID}
			// One task's copy of the shared node waits for the other.
			var holder, waiter, reason string
			eventually(t, time.Minute, "a task's shared node to wait, or both tasks to end", func() bool {
				ended := 0
				for _, id := range []string{a.ID, b.ID} {
					task, res, err := e.Task(t.Context(), id)
					if err != nil {
						t.Fatal(err)
					}
					if r := byNode(res)[shared]; strings.Contains(r.Reason, "waiting") {
						waiter, holder, reason = id, other[id], r.Reason
						return true
					}
					if task.Status.Finished() {
						ended++
					}
				}
				return ended == 2
			})
			if waiter == "" {
				t.Fatalf("neither task's %s waited for the other", shared)
			}
			if !strings.Contains(reason, "waiting for task "+holder) {
				t.Errorf("%s in task %s: reason %q while task %s holds it, want it waiting for that task", shared, waiter, reason, holder)
			}
			if !tc.atOnce && holder != a.ID {
				t.Fatalf("task %s took %s from task %s, which held it", holder, shared, a.ID)
			}

			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			for _, id := range []string{a.ID, b.ID} {
				if _, err := e.Wait(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			th, rh, err := e.Task(ctx, holder)
			if err != nil {
				t.Fatal(err)
			}
			tw, rw, err := e.Task(ctx, waiter)
			if err != nil {
				t.Fatal(err)
			}
			resH, resW := byNode(rh), byNode(rw)

			// One task at a time on the shared node: every event and
			// transition of the holder precedes those of the waiter.
			evs, err := e.Events(ctx, 0, 0, "", shared)
			if err != nil {
				t.Fatal(err)
			}
			var lastH, firstW uint64
			for _, ev := range evs {
				switch ev.Task {
				case holder:
					lastH = max(lastH, ev.Seq)
				case waiter:
					if firstW == 0 {
						firstW = ev.Seq
					}
				}
			}
			if lastH == 0 || firstW == 0 || firstW < lastH {
				t.Errorf("%s: events of the two tasks interleave (last of %s: %d, first of %s: %d)", shared, holder, lastH, waiter, firstW)
			}
			var order []string
			for _, tr := range nodeRecord(t, e, shared).History {
				if len(order) == 0 || order[len(order)-1] != tr.Task {
					order = append(order, tr.Task)
				}
			}
			if diff := cmp.Diff([]string{holder, waiter}, order); diff != "" {
				t.Errorf("%s: tasks in the history's order (-want +got):\n%s", shared, diff)
			}
			if sh, sw := resH[shared], resW[shared]; sw.Started.Before(sh.Finished) {
				t.Errorf("%s: started in %s at %s, before %s finished it at %s", shared, waiter, sw.Started, holder, sh.Finished)
			}
			// No barrier: the waiting task's other nodes did not wait.
			for n, r := range resW {
				if n != shared && !r.Started.Before(resH[shared].Finished) {
					t.Errorf("%s in %s started at %s, after %s was released (%s): it waited for no reason", n, waiter, r.Started, shared, resH[shared].Finished)
				}
			}
			if th.Status != record.TaskSucceeded || tw.Status != record.TaskSucceeded {
				for _, r := range append(rh, rw...) {
					t.Logf("%s: %s at %s: %s", r.Node, r.Outcome, r.Stage, r.Reason)
				}
				t.Fatalf("holder %s (%s), waiter %s (%s), want both succeeded", th.Status, th.Message, tw.Status, tw.Message)
			}
			if rec := nodeRecord(t, e, shared); rec.Task != "" || rec.Stage != record.StageDeployed {
				t.Errorf("%s after both tasks: lease %q, stage %s", shared, rec.Task, rec.Stage)
			}
			if lc := lifecycle(env)[shared]; lc.DeployStarts != 1 || lc.Allocations != 1 {
				t.Errorf("%s: %+v, want one allocation and one deployment", shared, lc)
			}
			deployed := 2 // the shared node and r01-gpu01
			if tc.first == record.ActionDeployNodes {
				deployed += 2 // r01-cmp01 and r01-cmp02
			}
			audit(t, env, e, deployed)
		})
	}
}
