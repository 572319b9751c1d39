package main

// The randomized lifecycle runs' runner: one sequence against a lab
// process and a serve process of its own, each operation through the API
// client, then a wait until nothing runs and the invariants of
// lifecycle_check_test.go, counted from the lab.

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
)

// lrSpec sizes a sequence.
type lrSpec struct {
	nodes int
	ops   int
	scale float64       // the lab's time scale
	quiet time.Duration // how long a step's tasks may run (their deadline here)
	// anyRequest: MAAS faults on every request, not only on deploys
	// (make chaos): the verbs answered at once, such as adopt, meet
	// them too.
	anyRequest bool
}

// lrRun is one sequence being run.
type lrRun struct {
	t         *testing.T
	seed      uint64
	spec      lrSpec
	lv        *labView
	srv       *lrServe
	cl        *client.Client
	names     []string
	noPower   map[string]bool // hostnames whose BMC never answers
	calls     []string        // X-Request-Ids of the mutating calls serve answered
	lastTask  string
	taskNodes map[string][]string
	lastEvent int
	deployed  map[string]bool // system ID → a deploy started and neither failed nor was released since
	counts    lrCounts
	seq       int // request IDs drawn
}

// lrCounts are what a sequence did and checked.
type lrCounts struct {
	ops, calls, refused, checks, kills int
	events, releases, deploys          int // lab events the checks read; releases and deploy starts among them
}

// startLRRun starts the lab with the seed's faults, applies and prepares
// the site, and starts serve on its state.
func startLRRun(t *testing.T, seed uint64, spec lrSpec) *lrRun {
	dir, bin, d := generatedSite(t, spec.nodes)
	names := d.NodeNames()
	faults, noPower := lifecycleFaults(seed, names)
	if !spec.anyRequest {
		delete(faults.Ops, "*")
	}
	lv := startLabProc(t, bin, dir, faults, int64(seed), spec.scale)
	state, _ := writeEngineFiles(t, bin, dir, d.Site.Metadata.Name, lv.info)
	if seed%2 == 0 {
		noDeployRetries(t, dir, state)
	}
	srv := startLRServe(t, bin, dir, state, spec.scale, childEnv(lv.info))
	return &lrRun{t: t, seed: seed, spec: spec, lv: lv, srv: srv, cl: srv.client(t), names: names, noPower: noPower,
		taskNodes: map[string][]string{}, deployed: map[string]bool{}}
}

// noDeployRetries applies the site again, its Site saying
// lifecycle.deployRetries: 0 (even seeds): a failed deployment fails
// the node at once, and retry, rerun and a new deploy must recover it.
func noDeployRetries(t *testing.T, dir, state string) {
	layer := filepath.Join(dir, "layer", "site.yaml")
	b, err := os.ReadFile(layer)
	if err == nil {
		err = os.WriteFile(layer, append(b, "  lifecycle: {deployRetries: 0}\n"...), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errs := cli(t, "apply", "--state", state, filepath.Join(dir, "site"), filepath.Dir(layer)); code != 0 {
		t.Fatalf("apply with deployRetries 0: %d %s %s", code, out, errs)
	}
}

// lifecycleFaults is the seed's fault mix: MAAS answering 500 and 503
// now and then, and one node each whose first deployment, commissioning,
// hardware test, rescue entry or disk erasure fails; in a fifth of the
// runs one node's BMC never answers (noPower: each task on it waits out
// the IPMI driver's real timeouts, some 40 s).
func lifecycleFaults(seed uint64, names []string) (*maas.Faults, map[string]bool) {
	rnd := mrand.New(mrand.NewPCG(seed, 11))
	f := &maas.Faults{Seed: int64(seed), Ops: map[string]maas.OpFaults{
		"*":           {Error500: 0.01, Error503: 0.005, RetryAfter: 1},
		"POST deploy": {Error500: 0.02, Error503: 0.03, RetryAfter: 1},
	}, Machines: map[string]maas.MachineFaults{}}
	scripts := []maas.MachineFaults{{FailDeploy: 1}, {FailCommissioning: 1}, {FailTesting: 1}, {FailRescue: 1}, {FailErase: 1}}
	for _, mf := range scripts {
		f.Machines[names[rnd.IntN(len(names))]] = mf
	}
	noPower := map[string]bool{}
	if rnd.IntN(5) == 0 {
		n := names[rnd.IntN(len(names))]
		f.Machines[n] = maas.MachineFaults{BMCUnreachable: true}
		noPower[n] = true
	}
	return f, noPower
}

// runSteps runs the ops; it stops at the first step that breaks an
// invariant and returns its index (-1: none) with what broke.
func (r *lrRun) runSteps(ops []lrOp) (int, []string) {
	for i, op := range ops {
		begun := time.Now()
		v := r.step(op)
		r.t.Logf("  step %d: %s: %s, %d violations; last task %s", i, op, time.Since(begun).Round(10*time.Millisecond), len(v), r.lastOutcome())
		if len(v) > 0 {
			return i, v
		}
	}
	if v := r.checkAudit(); len(v) > 0 {
		return len(ops) - 1, v
	}
	return -1, nil
}

// lastOutcome says how the last task ended, for the step's log line.
func (r *lrRun) lastOutcome() string {
	if r.lastTask == "" {
		return "none"
	}
	tk, err := r.cl.Task(r.t.Context(), r.lastTask)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s %s %s", tk.ID, tk.Action, tk.Status)
}

// step runs one operation, waits until nothing runs and checks.
func (r *lrRun) step(op lrOp) []string {
	before := r.claims()
	r.counts.ops++
	v := r.do(op)
	if q := r.quiet(); q != "" {
		return append(v, q)
	}
	return append(v, r.check(op, before)...)
}

// call makes one mutating call, and again (at most 3 times, a second
// apart) while serve answers 503 (a transient provisioner error: try
// again), as an operator would.
func (r *lrRun) call(f func(ctx context.Context) error) error {
	err := r.callOnce(f)
	for try := 0; try < 3 && client.IsStatus(err, http.StatusServiceUnavailable); try++ {
		r.t.Logf("  503, sent again in 1 s: %v", err)
		time.Sleep(time.Second)
		err = r.callOnce(f)
	}
	return err
}

// callOnce makes one mutating call with its own request ID; an answer
// from serve (any status) counts it as a call the audit must hold once.
func (r *lrRun) callOnce(f func(ctx context.Context) error) error {
	r.seq++
	id := fmt.Sprintf("lr-%d-%d", r.seed, r.seq)
	err := f(withRID(r.t.Context(), id))
	var pe *client.ProblemError
	if err == nil || errors.As(err, &pe) {
		r.calls = append(r.calls, id)
	}
	if pe != nil {
		r.counts.refused++
	}
	return err
}

// do runs op through the API; it returns the invariants the answer
// itself breaks (a server error, an invalid op accepted).
func (r *lrRun) do(op lrOp) []string {
	var err error
	switch op.Kind {
	case lrRetry, lrResume, lrRerun, lrRestartClean:
		err = r.verb(record.Verb(op.Kind))
	case lrMarkManual, lrReleaseManual, lrAdopt:
		for _, n := range op.Nodes {
			err = errors.Join(err, r.call(func(ctx context.Context) error {
				_, e := r.cl.NodeVerb(ctx, n, op.Kind, "lifecycle run")
				return e
			}))
		}
	case lrCancel, lrKill9, lrOverlap:
		err = r.timed(op)
	case lrMAASRelease:
		err = r.releaseBehind(op)
	default:
		err = r.task(op)
	}
	return r.judgeAnswer(op, err)
}

// judgeAnswer: a 5xx is a defect; an invalid op must be refused (4xx)
// unless it is a task, whose effect check() judges.
func (r *lrRun) judgeAnswer(op lrOp, err error) []string {
	var pe *client.ProblemError
	switch {
	case err != nil && errors.As(err, &pe) && pe.Status >= 500:
		return []string{fmt.Sprintf("%s: serve answered %d: %v", op, pe.Status, err)}
	case err != nil && !errors.As(err, &pe):
		return []string{fmt.Sprintf("%s: no answer from serve: %v", op, err)}
	case err == nil && op.Invalid && op.Kind == lrReleaseManual:
		return []string{fmt.Sprintf("%s: accepted, the node was not frozen", op)}
	case err != nil:
		r.t.Logf("  refused: %v", err)
	}
	return nil
}

// lrActions are the task actions of the operation kinds.
var lrActions = map[string]record.Action{lrDeploy: record.ActionDeployNodes, lrRedeploy: record.ActionRedeployNodes,
	lrDestroy: record.ActionDestroyNodes, lrDecommission: record.ActionDecommissionNodes, lrCancel: record.ActionDeployNodes,
	lrKill9: record.ActionDeployNodes, lrOverlap: record.ActionDeployNodes, lrRescueEnter: record.ActionRescueEnter, lrRescueExit: record.ActionRescueExit,
	lrTest: record.ActionTestNodes, lrPowerCycle: record.ActionPowerCycle}

// task creates the op's task.
func (r *lrRun) task(op lrOp) error {
	req := client.TaskRequest{Action: lrActions[op.Kind], NodeFilter: apitypes.Filter{Sets: []apitypes.NodeFilter{{Names: op.Nodes}}}}
	if op.Erase != "" {
		req.Options = &apitypes.TaskOptions{Erase: op.Erase}
	}
	return r.call(func(ctx context.Context) error {
		tk, err := r.cl.CreateTask(ctx, req)
		if err == nil {
			r.lastTask, r.taskNodes[tk.ID] = tk.ID, op.Nodes
		}
		return err
	})
}

// timed creates a deploy, waits the op's delay, and cancels the task,
// starts the overlapping task, or kills serve with SIGKILL and starts it
// again (it resumes the task).
func (r *lrRun) timed(op lrOp) error {
	if err := r.task(op); err != nil {
		return err
	}
	time.Sleep(op.Delay)
	if op.Kind == lrOverlap {
		return r.task(*op.Then)
	}
	if op.Kind == lrCancel {
		return r.call(func(ctx context.Context) error {
			_, err := r.cl.TaskVerb(ctx, r.lastTask, record.VerbCancel)
			return err
		})
	}
	r.counts.kills++
	if err := r.srv.kill9(); err != nil {
		r.t.Fatal(err)
	}
	if err := r.srv.start(); err != nil {
		r.t.Fatal(err)
	}
	return nil
}

// releaseBehind releases the nodes' machines in MAAS directly, then
// adopts each node (its machine's state taken as the truth).
func (r *lrRun) releaseBehind(op lrOp) error {
	nodes := r.claims()
	var err error
	for _, n := range op.Nodes {
		if id := nodes[n].MachineID; id != "" {
			if e := r.lv.maasRelease(r.t, id); e != nil {
				r.t.Logf("  seed %d: %v (the node is adopted all the same)", r.seed, e)
			}
		}
		err = errors.Join(err, r.call(func(ctx context.Context) error {
			_, e := r.cl.NodeVerb(ctx, n, lrAdopt, "")
			return e
		}))
	}
	return err
}

// verb applies a recovery verb to the last task (none yet: nothing).
func (r *lrRun) verb(v record.Verb) error {
	if r.lastTask == "" {
		return nil
	}
	return r.call(func(ctx context.Context) error {
		tk, err := r.cl.TaskVerb(ctx, r.lastTask, v)
		if err == nil && tk.ID != r.lastTask {
			r.taskNodes[tk.ID] = r.taskNodes[r.lastTask]
			r.lastTask = tk.ID
		}
		return err
	})
}

// quiet waits, at most spec.quiet, until serve runs no task and every
// machine in the lab is at rest; else it names what still runs.
func (r *lrRun) quiet() string {
	deadline := time.Now().Add(r.spec.quiet)
	running := ""
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		page, err := r.cl.Tasks(r.t.Context(), client.TaskQuery{Status: []string{string(record.TaskQueued), string(record.TaskRunning)}, Limit: 5})
		if err != nil {
			running = "tasks: " + err.Error()
			continue
		}
		if len(page.Items) > 0 {
			running = fmt.Sprintf("task %s (%s) still %s", page.Items[0].ID, page.Items[0].Action, page.Items[0].Status)
			continue
		}
		if running = r.moving(); running == "" {
			return ""
		}
	}
	return fmt.Sprintf("deadline: %s after %s", running, r.spec.quiet)
}

// moving names a machine the lab shows in a transient state ("" none).
func (r *lrRun) moving() string {
	for _, m := range r.lv.machines(r.t) {
		if !lrRestful[m.StatusName] {
			return fmt.Sprintf("machine %s (%s) still %s in the lab", m.SystemID, m.Hostname, m.StatusName)
		}
	}
	return ""
}

// lrRestful are the MAAS states in which nothing happens to a machine by
// itself.
var lrRestful = map[string]bool{"": true, "New": true, "Ready": true, "Deployed": true, "Allocated": true, "Broken": true,
	"Rescue mode": true, "Failed commissioning": true, "Failed deployment": true, "Failed disk erasing": true,
	"Releasing failed": true, "Failed testing": true, "Failed to enter rescue mode": true, "Failed to exit rescue mode": true}
