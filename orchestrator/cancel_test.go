package orchestrator_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
)

// cancelNode is the node the cancel paths run on.
const cancelNode = "r01-cmp01"

func onlyNodes(n ...string) record.Filter {
	return record.Filter{Sets: []design.NodeFilter{{Names: n}}}
}

// labStatus reads the status of the node's machine from the lab's MAAS
// API (not from the engine or its driver).
func labStatus(t *testing.T, env *labrun.Env, hostname string) labMachine {
	t.Helper()
	var ms []labMachine // reconcile_test.go
	labCall(t, env, "GET", "/machines/", "", nil, &ms)
	for _, m := range ms {
		if m.Hostname == hostname {
			return m
		}
	}
	return labMachine{}
}

// waitLab waits (bounded) until the lab's machine of the node is in
// status, or the task ends first (a failure: the instant was missed).
func waitLab(t *testing.T, env *labrun.Env, e *orchestrator.Engine, task, status string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for labStatus(t, env, cancelNode).StatusName != status {
		got, _, err := e.Task(t.Context(), task)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Finished() || time.Now().After(deadline) {
			t.Fatalf("task %s is %s and machine of %s is %s: never saw it %s", task, got.Status, cancelNode, labStatus(t, env, cancelNode).StatusName, status)
		}
		time.Sleep(3 * time.Millisecond)
	}
}

// cancelAndWait cancels the task and waits (bounded) for its end.
func cancelAndWait(t *testing.T, e *orchestrator.Engine, task string) {
	t.Helper()
	if _, err := e.TaskVerb(t.Context(), task, record.VerbCancel, "test"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := e.Wait(ctx, task); err != nil {
		t.Fatal(err)
	}
}

// deployFirst deploys the node before the task under test.
func deployFirst(t *testing.T, _ *labrun.Env, e *orchestrator.Engine) {
	t.Helper()
	run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: onlyNodes(cancelNode), Requester: "test"}, record.TaskSucceeded)
}

// releasedInMAASThenAdopted deploys the node, releases its machine in
// MAAS directly (behind the engine's back) and adopts it again.
func releasedInMAASThenAdopted(t *testing.T, env *labrun.Env, e *orchestrator.Engine) {
	t.Helper()
	deployFirst(t, env, e)
	id := labStatus(t, env, cancelNode).SystemID
	if _, err := env.MAASCall(t.Context(), "POST", "/machines/"+id+"/", "release", url.Values{"comment": {"by hand"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the machine released in MAAS to be Ready", func() bool {
		return labStatus(t, env, cancelNode).StatusName == "Ready"
	})
	rec, err := e.Adopt(t.Context(), cancelNode, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	if rec.MachineID != id || rec.Stage != record.StageReady {
		t.Fatalf("adopted: machine %s at %s, want %s at ready", rec.MachineID, rec.Stage, id)
	}
}

// TestCancelCompensates: a task cancelled mid-way aborts what MAAS can
// abort on the node's machine and releases what the task (or an
// adoption before it) holds: counted from the lab's MAAS API, a machine
// the task took ends Ready (New when it was in its first commissioning)
// and the node's lifecycle is cancelled; a machine deployed before a
// task that did not take it stays Deployed.
func TestCancelCompensates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		before   func(*testing.T, *labrun.Env, *orchestrator.Engine)
		action   record.Action
		at       string // the lab's machine status to cancel at
		want     string // the lab's machine status once the task ended
		lifecyle record.Lifecycle
	}{
		// MAAS's abort returns a machine's first commissioning to New
		// (src/maasserver/models/node.py, _abort_commissioning_async): where
		// it was before the task, unallocated.
		{"first deploy while commissioning", nil, record.ActionDeployNodes, "Commissioning", "New", record.LifecycleCancelled},
		{"first deploy while deploying", nil, record.ActionDeployNodes, "Deploying", "Ready", record.LifecycleCancelled},
		{"adopted after a release in MAAS, deploy while deploying", releasedInMAASThenAdopted, record.ActionDeployNodes, "Deploying", "Ready", record.LifecycleCancelled},
		{"redeploy while deploying", deployFirst, record.ActionRedeployNodes, "Deploying", "Ready", record.LifecycleCancelled},
		{"test of a deployed node while testing", deployFirst, record.ActionTestNodes, "Testing", "Deployed", record.LifecycleDeployed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env, e := prepared(t, designtest.Example(t), nil)
			if tc.before != nil {
				tc.before(t, env, e)
			}
			// The phase the cancel lands in lasts until it does: a phase of
			// the lab's scale (300 ms of commissioning) could end first on a
			// loaded machine.
			env.Lab.MAAS.SetDurations(func(d *maas.Durations) {
				*map[string]*time.Duration{"Commissioning": &d.Commission, "Deploying": &d.Deploy, "Testing": &d.Test}[tc.at] = 1000 * time.Hour
				d.NodeTimeout = 2000 * time.Hour
			})
			task, err := e.Submit(t.Context(), record.Request{Action: tc.action, Filter: onlyNodes(cancelNode), Requester: "test"})
			if err != nil {
				t.Fatal(err)
			}
			waitLab(t, env, e, task.ID, tc.at)
			cancelAndWait(t, e, task.ID)
			if got := labStatus(t, env, cancelNode).StatusName; got != tc.want {
				t.Errorf("machine of %s is %s in the lab after the cancel, want %s", cancelNode, got, tc.want)
			}
			rec := nodeRecord(t, e, cancelNode)
			if l := rec.LifecycleState(); l != tc.lifecyle {
				t.Errorf("%s: lifecycle %s after the cancel (stage %s, %s: %s), want %s", cancelNode, l, rec.Stage, rec.Outcome, rec.Reason, tc.lifecyle)
			}
			if rec.Outcome != record.OutcomeCancelled || rec.Task != "" {
				t.Errorf("%s: outcome %s, lease %q after the cancel, want cancelled and free", cancelNode, rec.Outcome, rec.Task)
			}
			// Nothing moves it afterwards: the lab's machine stays so.
			time.Sleep(300 * time.Millisecond)
			if got := labStatus(t, env, cancelNode).StatusName; got != tc.want {
				t.Errorf("machine of %s turned %s after the task ended, want it to stay %s", cancelNode, got, tc.want)
			}
		})
	}
}

// TestCancelAfterRebootstrap: rebootstrap of a deployed node opens its
// finished deploy task again, waiting at bootstrap; cancelling it then
// must not release the machine, deployed before this run of the task:
// counted from the lab's MAAS API it stays Deployed, and the node's
// lifecycle stays deployed.
func TestCancelAfterRebootstrap(t *testing.T) {
	t.Parallel()
	env, e := prepared(t, designtest.Example(t), nil)
	task, _ := run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: onlyNodes(cancelNode), Requester: "test"}, record.TaskSucceeded)
	out, err := e.Rebootstrap(t.Context(), cancelNode, "test")
	if err != nil {
		t.Fatal(err)
	}
	if out.Task != task.ID {
		t.Fatalf("rebootstrap opened task %s, want %s", out.Task, task.ID)
	}
	cancelAndWait(t, e, task.ID)
	if got := labStatus(t, env, cancelNode).StatusName; got != "Deployed" {
		t.Errorf("machine of %s is %s in the lab after the cancel, want Deployed", cancelNode, got)
	}
	if rec := nodeRecord(t, e, cancelNode); rec.LifecycleState() != record.LifecycleDeployed {
		t.Errorf("%s: lifecycle %s after the cancel (stage %s), want deployed", cancelNode, rec.LifecycleState(), rec.Stage)
	}
}
