package orchestrator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// labState is the MAAS simulator's status name of a node's machine.
func labState(env *labrun.Env, node string) string {
	for _, m := range env.Lab.MAAS.Machines() {
		if m.Hostname == node {
			return m.Status
		}
	}
	return ""
}

// maasRequest is a request to the lab's MAAS API as an operator makes it
// (the lab's key, PLAINTEXT OAuth); path is relative to /api/2.0.
func maasRequest(t *testing.T, env *labrun.Env, method, path string, form url.Values) *http.Request {
	t.Helper()
	info := env.Lab.Info()
	c, err := maas.ParseAPIKey(info.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	base := strings.TrimSuffix(info.MAASURL, "/")
	if !strings.HasSuffix(base, "/api/2.0") {
		base += "/api/2.0"
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Authorization", fmt.Sprintf(`OAuth oauth_version="1.0", oauth_signature_method="PLAINTEXT", oauth_consumer_key=%q, oauth_token=%q, oauth_signature="&%s", oauth_nonce="%d", oauth_timestamp="%d"`,
		c.ConsumerKey, c.TokenKey, c.TokenSecret, time.Now().UnixNano(), time.Now().Unix()))
	return req
}

// maasOp runs a machine op on the lab's MAAS as an operator would.
func maasOp(t *testing.T, env *labrun.Env, id, op string, form url.Values) {
	t.Helper()
	resp, err := http.DefaultClient.Do(maasRequest(t, env, "POST", "/machines/"+id+"/?op="+op, form))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s of machine %s: HTTP %d", op, id, resp.StatusCode)
	}
}

func hasEvent(t *testing.T, e *orchestrator.Engine, node, kind, text string) bool {
	t.Helper()
	evs, err := e.Events(t.Context(), 0, 0, "", node)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(evs, func(ev record.Event) bool {
		return (kind == "" || ev.Kind == kind) && strings.Contains(ev.Message, text)
	})
}

// nextSecond waits for the next second: MAAS's event times have
// seconds only, and the driver counts the failures of the second a budget
// opens in (it cannot tell them apart), so in the lab, where a task fails
// within milliseconds, the retry waits for the next second as an
// operator's would have.
func nextSecond() {
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
}

// TestCommissioningBudgetRetry: a machine whose commissioning fails
// more often than the driver's retries fails the task with its budget
// spent; the operator's retry opens a fresh budget and commissions it
// again, which succeeds once the fault has played out. (Before, the
// retry failed at once: the driver still counted the old failures.)
func TestCommissioningBudgetRetry(t *testing.T) {
	t.Parallel()
	const bad = "r01-cmp02"
	d := designtest.Example(t)
	env, e := prepared(t, d, &maas.Faults{Machines: map[string]maas.MachineFaults{bad: {FailCommissioning: 3}}})
	task, res := run(t, e, record.Request{Action: record.ActionPrepareNodes, Requester: "test", Filter: only(bad)}, record.TaskFailed)
	if r := res[0]; r.Stage != record.StageCommission || !strings.Contains(r.Reason, "failed 3 times") {
		t.Fatalf("%s: %s at %s: %s; want failed at commission with the budget spent", bad, r.Outcome, r.Stage, r.Reason)
	}
	if n := lifecycle(env)[bad].CommissionStarts; n != 3 {
		t.Fatalf("%s: %d commissionings before the retry, want 3", bad, n)
	}
	nextSecond()
	t0 := time.Now().UTC()
	after := applyVerb(t, e, task.ID, record.VerbRetry, record.TaskSucceeded)
	if r := after[bad]; r.Stage != record.StageReady {
		t.Fatalf("%s after retry: %s at %s: %s", bad, r.Outcome, r.Stage, r.Reason)
	}
	if n := lifecycle(env)[bad].CommissionStarts; n != 4 {
		t.Errorf("%s: %d commissionings after the retry, want 4 (one more)", bad, n)
	}
	if s := labState(env, bad); s != "Ready" {
		t.Errorf("%s: the lab's machine is %s, want Ready", bad, s)
	}
	rec := nodeRecord(t, e, bad)
	if rec.BudgetFrom.Before(t0) || rec.LifecycleState() != record.LifecycleReady {
		t.Errorf("%s: budget from %s (retry at %s), lifecycle %s, want ready", bad, rec.BudgetFrom, t0, rec.LifecycleState())
	}
}

// TestCommissioningBudgetNewTask: a new prepare task opens a fresh
// budget too.
func TestCommissioningBudgetNewTask(t *testing.T) {
	t.Parallel()
	const bad = "r02-cmp01"
	d := designtest.Example(t)
	env, e := prepared(t, d, &maas.Faults{Machines: map[string]maas.MachineFaults{bad: {FailCommissioning: 3}}})
	run(t, e, record.Request{Action: record.ActionPrepareNodes, Requester: "test", Filter: only(bad)}, record.TaskFailed)
	nextSecond()
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(bad)}, record.TaskSucceeded)
	if n := lifecycle(env)[bad].CommissionStarts; n != 4 {
		t.Errorf("%s: %d commissionings, want 4", bad, n)
	}
	if s := labState(env, bad); s != "Deployed" {
		t.Errorf("%s: the lab's machine is %s, want Deployed", bad, s)
	}
}

// TestStuckDeployingAbortRelease: a deployment that hangs past the
// deploy stage's deadline is aborted and the machine released (as a
// MAAS operator would), instead of left Deploying; the node fails with
// what was done and the next step.
func TestStuckDeployingAbortRelease(t *testing.T) {
	t.Parallel()
	const bad = "r01-cmp01"
	d := designtest.Example(t)
	env := startEnv(t, d, nil, &maas.Faults{Machines: map[string]maas.MachineFaults{bad: {HangDeploy: true}}}, func(c *orchestrator.Config) {
		c.Timeouts = map[record.Stage]time.Duration{record.StageDeploy: 700 * time.Millisecond}
	})
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	// MAAS never gives up on the hung deployment (1.8 s at the lab's
	// scale): only the engine's abort ends it, however loaded the machine.
	env.Lab.MAAS.SetDurations(func(d *maas.Durations) { d.NodeTimeout = 1000 * time.Hour })
	_, res := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(bad)}, record.TaskFailed)
	r := res[0]
	if r.Stage != record.StageDeploy || r.Outcome != record.OutcomeFailed ||
		!strings.Contains(r.Reason, "abort, then release") || !strings.Contains(r.Reason, "retry") || !strings.Contains(r.Reason, "Deploying") {
		t.Fatalf("%s: %s at %s: %q; want failed at deploy naming the abort and release", bad, r.Outcome, r.Stage, r.Reason)
	}
	// The lab: one deployment, not failed by MAAS's timeout (aborted
	// before it), the machine released and Ready.
	eventually(t, 10*time.Second, "the machine to be Ready", func() bool { return labState(env, bad) == "Ready" })
	lc := lifecycle(env)[bad]
	if lc.DeployStarts != 1 || lc.DeployFailures != 0 || lc.Releases != 1 {
		t.Errorf("%s: %+v, want 1 deployment, no failure, 1 release", bad, lc)
	}
	rec := nodeRecord(t, e, bad)
	if rec.Recovery != nil || rec.Intent != nil || rec.AllocatedBy != "" || !rec.DeploymentEnded || rec.Lifecycle != record.LifecycleFailed {
		t.Errorf("%s: record %+v", bad, rec)
	}
	if !hasEvent(t, e, bad, "recovery", "abort") {
		t.Errorf("%s: no recovery event", bad)
	}
	audit(t, env, e, 0)
}

// TestBrokenWhileDeployingMarkFixedRelease: a machine that turns Broken
// while this deployment deploys it is marked fixed and released, then
// deployed again (a deploy round); when that one hangs too, it is
// aborted and released. The lab shows both.
func TestBrokenWhileDeployingMarkFixedRelease(t *testing.T) {
	t.Parallel()
	const bad = "r02-cmp02"
	d := designtest.Example(t)
	// The deploy stage's timeout is the test's window to mark the first
	// deployment broken (the second hangs until it); the lab's MAAS never
	// gives up on a hung deployment here, so only the engine ends it. (The
	// lab runs at twice startEnv's scale from when its scaled timeout was
	// the window's end; the scale no longer bounds the window.)
	env, err := labrun.Start(t.Context(), labrun.Options{Design: d, Store: memory.New(), TimeScale: 0.002, Seed: 7,
		Faults: &maas.Faults{Machines: map[string]maas.MachineFaults{bad: {HangDeploy: true}}}, Tune: func(c *orchestrator.Config) {
			c.Timeouts = map[record.Stage]time.Duration{record.StageDeploy: 10 * time.Second}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	env.Lab.MAAS.SetDurations(func(d *maas.Durations) { d.NodeTimeout = 1000 * time.Hour })
	task, err := e.Submit(t.Context(), record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(bad)})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the machine to be Deploying", func() bool { return labState(env, bad) == "Deploying" })
	maasOp(t, env, nodeRecord(t, e, bad).MachineID, "mark_broken", url.Values{"comment": {"test: a disk died"}})
	if _, err := e.Wait(t.Context(), task.ID); err != nil {
		t.Fatal(err)
	}
	res := results(t, e, task.ID)[bad]
	if res.Outcome != record.OutcomeFailed || !strings.Contains(res.Reason, "abort") {
		t.Fatalf("%s: %s at %s: %s", bad, res.Outcome, res.Stage, res.Reason)
	}
	if !hasEvent(t, e, bad, "recovery", "mark-fixed") {
		t.Errorf("%s: no mark-fixed recovery event", bad)
	}
	eventually(t, 10*time.Second, "the machine to be Ready", func() bool { return labState(env, bad) == "Ready" })
	if lc := lifecycle(env)[bad]; lc.DeployStarts != 2 || lc.DeployFailures != 0 {
		t.Errorf("%s: %+v, want 2 deployments (the second after mark-fixed), none failed by MAAS", bad, lc)
	}
	// The lab counts the second deployment a duplicate (the first did not
	// end in Failed deployment: it was marked broken); nothing else.
	a, err := env.Audit(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	if a.Deployed != 0 || len(a.Leaked) != 0 || a.DuplicateAllocations != 0 || len(a.Stuck) != 0 {
		t.Errorf("audit: %+v", a)
	}
}

// TestBrokenNotOursManual: a machine Broken while deploying that the
// node's deployment did not allocate is not touched: the node goes to
// manual intervention with the reason and the next step.
// (Covered by TestPlanRecovery; an end-to-end version needs a machine
// allocated behind the engine's back mid-deploy.)

// TestLifecycleSurvivesPowerAndVerify: power_cycle and verify_nodes
// tasks leave a deployed node deployed; their result is the last task's
// (action, stage, outcome).
func TestLifecycleSurvivesPowerAndVerify(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp01"
	d := designtest.Example(t)
	_, e := prepared(t, d, nil)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	if rec := nodeRecord(t, e, node); rec.Lifecycle != record.LifecycleDeployed {
		t.Fatalf("after deploy: lifecycle %q", rec.Lifecycle)
	}
	for _, a := range []record.Action{record.ActionPowerCycle, record.ActionVerifyNodes} {
		task, _ := run(t, e, record.Request{Action: a, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
		rec := nodeRecord(t, e, node)
		if rec.Lifecycle != record.LifecycleDeployed || rec.LifecycleState() != record.LifecycleDeployed {
			t.Errorf("after %s: lifecycle %q, want deployed", a, rec.Lifecycle)
		}
		if rec.LastTask != task.ID || rec.Action != a || rec.Outcome != record.OutcomeSucceeded {
			t.Errorf("after %s: last task %s %s %s %s", a, rec.LastTask, rec.Action, rec.Stage, rec.Outcome)
		}
	}
	if rec := nodeRecord(t, e, node); rec.Stage != record.StageVerified {
		t.Errorf("last task's stage %s, want verified", rec.Stage)
	}
}

// TestAdoptLeakedMachine: a machine allocated and marked for a node
// behind the engine's back (no record claims it) is a leak; `adopt NODE
// --machine ID` attaches it to the node, the leak is gone from the
// sweep, and destroy releases it.
func TestAdoptLeakedMachine(t *testing.T) {
	t.Parallel()
	const node = "r02-cmp01"
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	id := leak(t, env, d, node)

	rep, err := e.Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Leaks) != 1 || rep.Leaks[0].MachineID != id {
		t.Fatalf("sweep leaks %+v, want %s", rep.Leaks, id)
	}
	// Refusals: a node not in the design; a machine another record claims.
	if _, err := e.AdoptMachine(t.Context(), "no-such-node", id, "", "test"); err == nil {
		t.Error("adopt into a node outside the design: no error")
	}
	other := "r01-cmp01"
	run(t, e, record.Request{Action: record.ActionPrepareNodes, Requester: "test", Filter: only(other)}, record.TaskSucceeded)
	if _, err := e.AdoptMachine(t.Context(), node, nodeRecord(t, e, other).MachineID, "", "test"); err == nil || !strings.Contains(err.Error(), other) {
		t.Errorf("adopt of %s's machine: %v, want a conflict naming it", other, err)
	}
	if _, err := e.AdoptMachine(t.Context(), "r02-cmp02", id, "", "test"); err == nil || !strings.Contains(err.Error(), "marked for node "+node) {
		t.Errorf("adopt into another node than the marker's: %v", err)
	}

	// Another orchestrator's marker: refused, nothing recorded.
	ours := ownerData(t, env, id)["slipway_instance"]
	if ours == "" {
		t.Fatalf("machine %s carries no instance marker: %v", id, ownerData(t, env, id))
	}
	maasOp(t, env, id, "set_owner_data", url.Values{"slipway_instance": {"another-orchestrator"}})
	if _, err := e.AdoptMachine(t.Context(), node, id, "", "test"); err == nil || !strings.Contains(err.Error(), "another orchestrator") {
		t.Errorf("adopt of another orchestrator's machine: %v", err)
	}
	if rec, err := e.Node(t.Context(), node); err == nil && rec.MachineID == id {
		t.Errorf("a refused adopt recorded the machine")
	}
	maasOp(t, env, id, "set_owner_data", url.Values{"slipway_instance": {ours}})

	rec, err := e.AdoptMachine(t.Context(), node, id, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	if rec.MachineID != id || rec.Stage != record.StageDeployed || rec.Lifecycle != record.LifecycleDeployed {
		t.Fatalf("adopted: machine %s, stage %s, lifecycle %s", rec.MachineID, rec.Stage, rec.Lifecycle)
	}
	if !hasEvent(t, e, node, "verb", "adopt by test: machine "+id) {
		t.Error("no audit event of the adoption")
	}
	rep, err = e.Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Leaks) != 0 {
		t.Errorf("after adopt the sweep still finds leaks %+v", rep.Leaks)
	}
	run(t, e, record.Request{Action: record.ActionDestroyNodes, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	if s := labState(env, node); s != "Ready" {
		t.Errorf("after destroy the lab's machine is %s, want Ready", s)
	}
	if n := lifecycle(env)[node].Releases; n != 1 {
		t.Errorf("%d releases, want 1", n)
	}
}

// leak deploys node's machine with the drivers alone, as an engine that
// lost its record would have left it: enlisted, commissioned, allocated
// and marked for the node, deployed. It returns the machine's ID.
func leak(t *testing.T, env *labrun.Env, d *design.Design, node string) string {
	t.Helper()
	ctx := t.Context()
	n := d.Nodes[node]
	pw := drivers.NewSecret(labrun.DefaultSecrets()["bmc-admin"])
	dn := driverspec.Node(d, n, "")
	dn.Power = driverspec.Power(d, n, pw)
	if m := env.Lab.Machine(node); m != nil {
		dn.Power.Address, dn.Power.Port = m.BMC.Address, m.BMC.Port
		dn.BMCAddress = net.JoinHostPort(m.BMC.Address, strconv.Itoa(m.BMC.Port)) // as the engine's lab config has it
	}
	// No boot MAC in the design: the machine enlists when it PXE-boots.
	b := driverspec.BMC(d, n, pw)
	b.Address, b.Port = dn.Power.Address, dn.Power.Port
	if _, err := env.Drivers.OOB.SetBootDevice(ctx, b, drivers.BootDevice{Device: "pxe", EFI: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Drivers.OOB.PowerOn(ctx, b); err != nil {
		t.Fatal(err)
	}
	srv := env.Drivers.Server
	poll := func(what string, call func() (drivers.Result, error)) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			res, err := call()
			if err != nil || res.Status == drivers.StatusFailed {
				t.Fatalf("%s: %+v, %v", what, res, err)
			}
			if res.Status == drivers.StatusDone {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: still %s", what, res.Message)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	poll("identify", func() (drivers.Result, error) {
		m, res, err := srv.IdentifyNode(ctx, dn)
		dn.MachineID = m.MachineID
		return res, err
	})
	poll("commission", func() (drivers.Result, error) { return srv.Commission(ctx, dn.NodeRef) })
	poll("deploy", func() (drivers.Result, error) { return srv.Deploy(ctx, dn, drivers.Deployment{}) })
	return dn.MachineID
}

// recoveryCrashStore "kills the process" at the write that would record
// a recovery's first step done (the step itself reached MAAS).
type recoveryCrashStore struct {
	statestore.Store
	tripped atomic.Bool
	onTrip  func()
}

func (c *recoveryCrashStore) Write(ctx context.Context, ops ...statestore.Op) ([]uint64, error) {
	if c.tripped.Load() {
		return nil, errCrashed
	}
	for _, op := range ops {
		if op.Kind == statestore.OpPut && bytes.Contains(op.Value, []byte(`"recovery":{`)) && bytes.Contains(op.Value, []byte(`"done":1`)) {
			c.tripped.Store(true)
			c.onTrip()
			return nil, errCrashed
		}
	}
	return c.Store.Write(ctx, ops...)
}

// TestRecoveryResumesAfterCrash: the engine dies right after a stuck
// deployment's abort reached MAAS, before it recorded the step; the next
// engine resumes the recorded plan at that step (the abort, asked again,
// is found done) and releases the machine once.
func TestRecoveryResumesAfterCrash(t *testing.T) {
	t.Parallel()
	const bad = "r01-cmp01"
	d := designtest.Example(t)
	base := memory.New()
	tune := func(c *orchestrator.Config) {
		c.Timeouts = map[record.Stage]time.Duration{record.StageDeploy: 700 * time.Millisecond}
	}
	env := startEnv(t, d, base, &maas.Faults{Machines: map[string]maas.MachineFaults{bad: {HangDeploy: true}}}, tune)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	e.Close()
	// MAAS never gives up on the hung deployment (1.8 s at the lab's
	// scale): only the engine's abort ends it, however loaded the machine.
	env.Lab.MAAS.SetDurations(func(d *maas.Durations) { d.NodeTimeout = 1000 * time.Hour })

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cs := &recoveryCrashStore{Store: base, onTrip: cancel}
	cfg := env.Config()
	cfg.Store = cs
	e1, task := runToCrash(ctx, t, cfg, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(bad)})
	e1.Close()
	if !cs.tripped.Load() {
		t.Fatal("no crash")
	}
	if s := labState(env, bad); s != "Allocated" {
		t.Fatalf("after the crash the machine is %s, want Allocated (aborted, not yet released)", s)
	}

	// The surviving checkpoint, read before an engine is started on it
	// (a started engine resumes the recovery at once).
	reader, err := orchestrator.New(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	rec := nodeRecord(t, reader, bad)
	reader.Close()
	if rec.Recovery == nil || rec.Recovery.Done != 0 || len(rec.Recovery.Steps) != 2 {
		t.Fatalf("the surviving checkpoint's recovery: %+v", rec.Recovery)
	}
	e2 := engine(t, env)
	wctx, wcancel := context.WithTimeout(t.Context(), time.Minute)
	defer wcancel()
	if _, err := e2.Wait(wctx, task.ID); err != nil {
		t.Fatal(err)
	}
	r := results(t, e2, task.ID)[bad]
	if r.Outcome != record.OutcomeFailed || !strings.Contains(r.Reason, "abort, then release") {
		t.Fatalf("%s: %s at %s: %s", bad, r.Outcome, r.Stage, r.Reason)
	}
	eventually(t, 10*time.Second, "the machine to be Ready", func() bool { return labState(env, bad) == "Ready" })
	if lc := lifecycle(env)[bad]; lc.Releases != 1 || lc.DeployStarts != 1 {
		t.Errorf("%s: %+v, want one deployment and one release", bad, lc)
	}
	if rec := nodeRecord(t, e2, bad); rec.Recovery != nil {
		t.Errorf("the recovery is still recorded: %+v", rec.Recovery)
	}
}

// TestRetryAfterAnotherTask: a deploy whose node failed, then a
// power_cycle of that node, then the deploy's retry: the retry resumes
// from the stage the deploy failed at, not from the power task's
// checkpoint (before, it failed: stage "powered" has no handler in the
// deploy workflow); the node's lifecycle ends deployed.
func TestRetryAfterAnotherTask(t *testing.T) {
	t.Parallel()
	const bad = "r01-cmp02"
	d := designtest.Example(t)
	env, e := prepared(t, d, &maas.Faults{Machines: map[string]maas.MachineFaults{bad: {FailDeploy: 2}}})
	task, res := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(bad)}, record.TaskFailed)
	if res[0].Stage != record.StageDeploy {
		t.Fatalf("%s: %s at %s: %s", bad, res[0].Outcome, res[0].Stage, res[0].Reason)
	}
	if l := nodeRecord(t, e, bad).Lifecycle; l != record.LifecycleFailed {
		t.Errorf("after the failed deploy: lifecycle %s, want failed", l)
	}
	run(t, e, record.Request{Action: record.ActionPowerCycle, Requester: "test", Filter: only(bad)}, record.TaskSucceeded)
	if l := nodeRecord(t, e, bad).Lifecycle; l != record.LifecycleFailed {
		t.Errorf("after power_cycle: lifecycle %s, want still failed", l)
	}
	after := applyVerb(t, e, task.ID, record.VerbRetry, record.TaskSucceeded)
	if r := after[bad]; r.Stage != record.StageDeployed {
		t.Fatalf("%s after retry: %s at %s: %s", bad, r.Outcome, r.Stage, r.Reason)
	}
	if rec := nodeRecord(t, e, bad); rec.Lifecycle != record.LifecycleDeployed || rec.LastTask != task.ID {
		t.Errorf("lifecycle %s, last task %s", rec.Lifecycle, rec.LastTask)
	}
	if s := labState(env, bad); s != "Deployed" {
		t.Errorf("lab: %s, want Deployed", s)
	}
}

// TestFailedDeploymentRefusingRelease: after a failed deployment MAAS
// refuses every release (409); the engine marks the machine broken, then
// fixed (back to Ready, as a MAAS operator would), and the deploy round
// goes on: the second deployment succeeds. Before, the node failed with
// the 409 and the machine stayed in Failed deployment.
func TestFailedDeploymentRefusingRelease(t *testing.T) {
	t.Parallel()
	const bad = "r01-cmp02"
	d := designtest.Example(t)
	env, e := prepared(t, d, &maas.Faults{
		Ops:      map[string]maas.OpFaults{"POST release": {Error409: 1}},
		Machines: map[string]maas.MachineFaults{bad: {FailDeploy: 1}},
	})
	_, res := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(bad)}, record.TaskSucceeded)
	if r := res[0]; r.Stage != record.StageDeployed {
		t.Fatalf("%s: %s at %s: %s", bad, r.Outcome, r.Stage, r.Reason)
	}
	for _, step := range []string{"mark-broken", "mark-fixed"} {
		if !hasEvent(t, e, bad, "recovery", step+" of machine") {
			t.Errorf("%s: no recovery event for %s", bad, step)
		}
	}
	if s := labState(env, bad); s != "Deployed" {
		t.Errorf("lab: %s, want Deployed", s)
	}
	if lc := lifecycle(env)[bad]; lc.DeployStarts != 2 || lc.DeployFailures != 1 || lc.Releases != 0 {
		t.Errorf("%s: %+v, want 2 deployments, 1 failed, no release accepted", bad, lc)
	}
	if rec := nodeRecord(t, e, bad); rec.Lifecycle != record.LifecycleDeployed || rec.Recovery != nil {
		t.Errorf("record: lifecycle %s, recovery %+v", rec.Lifecycle, rec.Recovery)
	}
}

// TestRecoveryGivesUpToOperator: MAAS refuses the release after a failed
// deployment and refuses to mark the machine broken too: the engine gives
// up and the node goes to manual intervention (frozen), its reason naming
// the machine, the refused step, what is left to do and the next step;
// the machine is left as it was.
func TestRecoveryGivesUpToOperator(t *testing.T) {
	t.Parallel()
	const bad = "r02-cmp02"
	d := designtest.Example(t)
	env, e := prepared(t, d, &maas.Faults{
		Ops:      map[string]maas.OpFaults{"POST release": {Error409: 1}, "POST mark_broken": {Error409: 1}},
		Machines: map[string]maas.MachineFaults{bad: {FailDeploy: 1}},
	})
	_, res := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(bad)}, record.TaskFailed)
	r := res[0]
	id := nodeRecord(t, e, bad).MachineID
	if r.Outcome != record.OutcomeManual || r.Stage != record.StageDeploy {
		t.Fatalf("%s: %s at %s: %s; want manual-intervention at deploy", bad, r.Outcome, r.Stage, r.Reason)
	}
	for _, want := range []string{id, "mark-broken", "mark-fixed, then release", "release-manual"} {
		if !strings.Contains(r.Reason, want) {
			t.Errorf("reason %q does not name %q", r.Reason, want)
		}
	}
	rec := nodeRecord(t, e, bad)
	if !rec.Frozen || rec.Recovery == nil || rec.Recovery.Done != 0 || rec.Lifecycle != record.LifecycleFailed {
		t.Errorf("record: frozen %v, recovery %+v, lifecycle %s", rec.Frozen, rec.Recovery, rec.Lifecycle)
	}
	if s := labState(env, bad); s != "Failed deployment" {
		t.Errorf("lab: %s, want Failed deployment (left as it was)", s)
	}
	evs, err := e.Events(t.Context(), 0, 0, "", bad)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(ev record.Event) bool {
		return ev.Type == record.EventOnboardingManual && strings.Contains(ev.Message, "release-manual")
	}) {
		t.Error("no typed manual-intervention-required event naming the next step")
	}
	// The operator fixes it (here: gives up on it), releases the node
	// from manual intervention: its next task starts no stale recovery.
	if _, err := e.ReleaseManual(t.Context(), bad, "test"); err != nil {
		t.Fatal(err)
	}
}

// TestOldRecordLifecycle: a record written by the previous version (no
// lifecycle; its last task a power_cycle after a deploy) reads with the
// lifecycle its history means, and a verify task keeps it.
func TestOldRecordLifecycle(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp01"
	d := designtest.Example(t)
	store := memory.New()
	old := `{"name":"` + node + `","machineId":"abc123","observed":"Deployed","action":"power_cycle","stage":"powered","outcome":"succeeded",
	 "deployment":1,"history":[{"at":"2026-01-01T00:00:00Z","from":"bootstrap","to":"deployed"},{"at":"2026-01-02T00:00:00Z","from":"power","to":"powered"}]}`
	if _, err := store.Write(t.Context(), statestore.Put("nodes", node, []byte(old))); err != nil {
		t.Fatal(err)
	}
	env := startEnv(t, d, store, nil, nil)
	e := engine(t, env)
	if rec := nodeRecord(t, e, node); rec.Lifecycle != record.LifecycleDeployed || rec.Stage != record.StagePowered {
		t.Fatalf("old record reads as lifecycle %q, stage %s; want deployed, powered", rec.Lifecycle, rec.Stage)
	}
	recs, err := e.Nodes(t.Context())
	if err != nil || len(recs) != 1 || recs[0].Lifecycle != record.LifecycleDeployed {
		t.Fatalf("Nodes: %v %+v", err, recs)
	}
	run(t, e, record.Request{Action: record.ActionVerifyNodes, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	if rec := nodeRecord(t, e, node); rec.Lifecycle != record.LifecycleDeployed || rec.Stage != record.StageVerified {
		t.Errorf("after verify_nodes: lifecycle %q, stage %s; want deployed, verified", rec.Lifecycle, rec.Stage)
	}
}

// TestCancelReleaseRefused: a deploy cancelled while its machine hangs in
// Deploying, with MAAS refusing every release: the cancel's compensation
// recovers the machine (aborts the deployment) and, the release still
// refused, leaves the node to an operator (manual intervention naming
// the machine and the step) instead of failing it with the machine still
// deploying.
func TestCancelReleaseRefused(t *testing.T) {
	t.Parallel()
	const bad = "r01-cmp01"
	d := designtest.Example(t)
	env, e := prepared(t, d, &maas.Faults{
		Ops:      map[string]maas.OpFaults{"POST release": {Error409: 1}},
		Machines: map[string]maas.MachineFaults{bad: {HangDeploy: true}},
	})
	// MAAS never gives up on the hung deployment (1.8 s at the lab's
	// scale): only the engine's abort ends it, however loaded the machine.
	env.Lab.MAAS.SetDurations(func(d *maas.Durations) { d.NodeTimeout = 1000 * time.Hour })
	task, err := e.Submit(t.Context(), record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(bad)})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the machine to be Deploying", func() bool { return labState(env, bad) == "Deploying" })
	if _, err := e.TaskVerb(t.Context(), task.ID, record.VerbCancel, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(t.Context(), task.ID); err != nil {
		t.Fatal(err)
	}
	r := results(t, e, task.ID)[bad]
	id := nodeRecord(t, e, bad).MachineID
	if r.Outcome != record.OutcomeManual || !strings.Contains(r.Reason, id) || !strings.Contains(r.Reason, "release-manual") {
		t.Fatalf("%s: %s at %s: %s; want manual-intervention naming the machine and release-manual", bad, r.Outcome, r.Stage, r.Reason)
	}
	if s := labState(env, bad); s != "Allocated" {
		t.Errorf("lab: %s, want Allocated (the deployment aborted)", s)
	}
	if !hasEvent(t, e, bad, "recovery", "abort of machine") {
		t.Errorf("no abort recovery event")
	}
}

// TestRebootstrapAfterPowerCycle: a deployed node power_cycle'd since
// (its last task's stage: powered) is still deployed: rebootstrap
// applies (before, it was refused: "at stage powered"), and its deploy
// task waits for the node's new reports.
func TestRebootstrapAfterPowerCycle(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp01"
	env, e := prepared(t, designtest.Example(t), nil)
	task, _ := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionPowerCycle, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	out, err := e.Rebootstrap(t.Context(), node, "test")
	if err != nil {
		t.Fatalf("rebootstrap after power_cycle: %v", err)
	}
	if out.Task != task.ID || out.Node.Stage != record.StageBootstrap {
		t.Fatalf("rebootstrap: task %s (want %s), stage %s", out.Task, task.ID, out.Node.Stage)
	}
	if err := env.Lab.Machine(node).RunBootstrap([]byte(out.Env)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if got, err := e.Wait(ctx, task.ID); err != nil || got.Status != record.TaskSucceeded {
		t.Fatalf("task %s: %s (%s) %v", task.ID, got.Status, got.Message, err)
	}
	if rec := nodeRecord(t, e, node); rec.Lifecycle != record.LifecycleDeployed || rec.Stage != record.StageDeployed {
		t.Errorf("lifecycle %s, stage %s", rec.Lifecycle, rec.Stage)
	}
}

// ownerData reads a machine's owner data from the lab's MAAS API.
func ownerData(t *testing.T, env *labrun.Env, id string) map[string]string {
	t.Helper()
	req := maasRequest(t, env, "GET", "/machines/"+id+"/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		OwnerData map[string]string `json:"owner_data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m.OwnerData
}
