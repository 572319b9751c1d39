package orchestrator_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/introspection"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/lab"
)

// only selects the named nodes.
func only(names ...string) record.Filter {
	return record.Filter{Sets: []design.NodeFilter{{Names: names}}}
}

// selfStatus is the introspection API's answer to GET /v1/self with tok.
func selfStatus(t *testing.T, env *labrun.Env, tok string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", introspectionURL(t, env)+"/v1/self", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// introspectionURL is where the lab's node agents reach the introspection
// API (the URL of a deployed machine's user data).
func introspectionURL(t *testing.T, env *labrun.Env) string {
	t.Helper()
	for _, m := range env.Lab.Machines() {
		if u := m.Bootstrap().URL; u != "" {
			return u
		}
	}
	t.Fatal("no machine's user data named the introspection API")
	return ""
}

// token is the node's introspection token for its recorded deployment.
func token(t *testing.T, env *labrun.Env, e *orchestrator.Engine, node string) (string, int) {
	t.Helper()
	rec := nodeRecord(t, e, node)
	return env.Introspection.Token(node, strconv.Itoa(rec.Deployment)), rec.Deployment
}

// releaseBehindTheBack releases the node's machine through the driver, as
// someone working in MAAS directly would, and waits until it is Ready.
func releaseBehindTheBack(t *testing.T, env *labrun.Env, e *orchestrator.Engine, node string) {
	t.Helper()
	ref := drivers.NodeRef{Name: node, MachineID: nodeRecord(t, e, node).MachineID}
	res, err := env.Drivers.Server.Release(t.Context(), ref, drivers.EraseNone)
	if err != nil || res.Status == drivers.StatusFailed {
		t.Fatalf("release %s behind the engine's back: %+v, %v", node, res, err)
	}
	eventually(t, 30*time.Second, node+"'s machine to be Ready", func() bool {
		ms, err := env.Drivers.Server.Status(t.Context(), []drivers.NodeRef{ref})
		return err == nil && len(ms) == 1 && ms[0].State == "Ready"
	})
}

// TestSweepEndsDeploymentOfReleasedMachine: a machine released behind the
// engine's back ends its node's deployment at the next sweep: the node's
// introspection token, accepted before, is refused; the record says the
// deployment ended (and still says deployed: the sweep reports drift, it
// does not adopt); an event says so.
func TestSweepEndsDeploymentOfReleasedMachine(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp01"
	env, e := prepared(t, designtest.Example(t), nil)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: only(node), Requester: "test"}, record.TaskSucceeded)
	tok, _ := token(t, env, e, node)
	if code := selfStatus(t, env, tok); code != http.StatusOK {
		t.Fatalf("the deployed node's token: %d", code)
	}
	releaseBehindTheBack(t, env, e, node)
	if _, err := e.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code := selfStatus(t, env, tok); code != http.StatusUnauthorized {
		t.Errorf("after the sweep, the released node's token answers %d, want 401", code)
	}
	if rec := nodeRecord(t, e, node); !rec.DeploymentEnded || rec.Stage != record.StageDeployed {
		t.Errorf("record after the sweep: stage %s, deployment ended %v; want deployed, ended", rec.Stage, rec.DeploymentEnded)
	}
	evs, err := e.Events(t.Context(), 0, 0, "", node)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(ev record.Event) bool {
		return ev.Kind == "drift" && strings.Contains(ev.Message, "token is revoked")
	}) {
		t.Errorf("no drift event says the token was revoked")
	}
	// A second sweep has nothing more to end.
	n := len(evs)
	if _, err := e.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	evs, _ = e.Events(t.Context(), 0, 0, "", node)
	for _, ev := range evs[n:] {
		if strings.Contains(ev.Message, "token is revoked") {
			t.Errorf("the second sweep ended the deployment again: %s", ev.Message)
		}
	}
}

// TestRerunAfterReleaseBehindTheBack: two deployed nodes whose machines
// are released behind the engine's back; one is adopted (its record takes
// the machine's Ready state, which ends its deployment: its token is
// refused), the other is not. A rerun of the deploy task deploys both
// machines afresh in a new deployment each: new tokens, the old ones
// refused, and the bootstrap passes on the new deployment's reports, not
// on the old deployment's.
func TestRerunAfterReleaseBehindTheBack(t *testing.T) {
	t.Parallel()
	const adopted, rerun = "r01-cmp02", "r02-cmp01"
	env, e := prepared(t, designtest.Example(t), nil)
	task, _ := run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: only(adopted, rerun), Requester: "test"}, record.TaskSucceeded)
	oldTok, oldDep := map[string]string{}, map[string]int{}
	for _, n := range []string{adopted, rerun} {
		oldTok[n], oldDep[n] = token(t, env, e, n)
		releaseBehindTheBack(t, env, e, n)
	}
	rec, err := e.Adopt(t.Context(), adopted, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Stage != record.StageReady || !rec.DeploymentEnded {
		t.Errorf("adopted as %s, deployment ended %v; want ready, ended", rec.Stage, rec.DeploymentEnded)
	}
	if code := selfStatus(t, env, oldTok[adopted]); code != http.StatusUnauthorized {
		t.Errorf("after adopt of the released machine, its old token answers %d, want 401", code)
	}

	applyVerb(t, e, task.ID, record.VerbRerun, record.TaskSucceeded)
	d := designtest.Example(t)
	for _, n := range []string{adopted, rerun} {
		tok, dep := token(t, env, e, n)
		if dep != oldDep[n]+1 {
			t.Errorf("%s: deployment %d after the rerun deployed its machine again, want %d", n, dep, oldDep[n]+1)
		}
		if code := selfStatus(t, env, oldTok[n]); code != http.StatusUnauthorized {
			t.Errorf("%s: the old deployment's token answers %d, want 401", n, code)
		}
		if code := selfStatus(t, env, tok); code != http.StatusOK {
			t.Errorf("%s: the new deployment's token answers %d, want 200", n, code)
		}
		// The new deployment's reports are there: the new agent sent them.
		p, err := env.Introspection.BootstrapStatus(t.Context(), d, n, strconv.Itoa(dep))
		if err != nil || p.Status != drivers.StatusDone {
			t.Errorf("%s: bootstrap status of deployment %d: %+v %v", n, dep, p, err)
		}
		if b := env.Lab.Machine(n).Bootstrap(); len(b.Reports) == 0 || slices.ContainsFunc(b.Reports, func(r lab.Report) bool { return r.Code != http.StatusOK }) {
			t.Errorf("%s: the new deployment's agent: %s %s, reports %+v", n, b.State, b.Err, b.Reports)
		}
	}
	audit(t, env, e, 2)
}

// silent is a Bootstrapper whose user data for one node carries no
// bootstrap: that node never reports, like a machine whose cloud-init
// did not run the script or that can't reach the introspection API.
type silent struct {
	orchestrator.Bootstrapper
	node string
}

func (s silent) UserData(ctx context.Context, d *design.Design, node, deployment string) ([]byte, error) {
	ud, err := s.Bootstrapper.UserData(ctx, d, node, deployment)
	if err != nil || node != s.node {
		return ud, err
	}
	return []byte("#cloud-config\n{}\n"), nil
}

// envToken reads SLIPWAY_TOKEN from a bootstrap environment file.
func envToken(t *testing.T, env string) string {
	t.Helper()
	for line := range strings.Lines(env) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "SLIPWAY_TOKEN="); ok {
			return strings.Trim(v, "'")
		}
	}
	t.Fatalf("no SLIPWAY_TOKEN in the environment file")
	return ""
}

// noSecretIn fails the test when a node's events or the engine's records
// carry one of the tokens.
func noSecretIn(t *testing.T, e *orchestrator.Engine, node string, secrets ...string) {
	t.Helper()
	evs, err := e.Events(t.Context(), 0, 0, "", "")
	if err != nil {
		t.Fatal(err)
	}
	rec := nodeRecord(t, e, node)
	var all strings.Builder
	for _, ev := range evs {
		all.WriteString(ev.Message + "\n")
	}
	all.WriteString(rec.Reason)
	for _, tr := range rec.History {
		all.WriteString(tr.Message)
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(all.String(), s) {
			t.Errorf("a secret of %s is in an event, its reason or its history", node)
		}
	}
}

// TestBootstrapDeadlineThenRebootstrap: a node that never reports fails
// at bootstrap once the bootstrap deadline passed (2 s here, the scaled
// default's floor in the lab), long before the stage timeout, with
// what to check and do. Rebootstrap reissues its token (the previous one
// is refused), puts it back at bootstrap in its deploy task, and once the
// new environment file runs on the node, the node reports and the task
// succeeds. No token is in any event or reason.
func TestBootstrapDeadlineThenRebootstrap(t *testing.T) {
	t.Parallel()
	// The node alone: a healthy node beside it would have to report
	// within the 2 s deadline too, which a loaded machine can miss.
	const node = "r01-cmp01"
	env := startEnv(t, designtest.Example(t), nil, nil, func(c *orchestrator.Config) {
		c.Bootstrap = silent{c.Bootstrap, node}
		c.BootstrapDeadline = 2 * time.Second
	})
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	start := time.Now()
	task, res := run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: only(node), Requester: "test"}, record.TaskFailed)
	took := time.Since(start)
	r := byNode(res)[node]
	if r.Outcome != record.OutcomeFailed || r.Stage != record.StageBootstrap ||
		!strings.Contains(r.Reason, "no report from the node since ") || !strings.Contains(r.Reason, "(deployment 1)") ||
		!strings.Contains(r.Reason, "can reach ") || !strings.Contains(r.Reason, "`rebootstrap`") {
		t.Fatalf("%s: %s at %s: %s", node, r.Outcome, r.Stage, r.Reason)
	}
	if took > 30*time.Second { // the bootstrap stage's timeout is a minute here
		t.Errorf("the silent node failed after %s", took)
	}

	oldTok, _ := token(t, env, e, node)
	out, err := e.Rebootstrap(t.Context(), node, "test")
	if err != nil {
		t.Fatal(err)
	}
	if out.Task != task.ID || out.Node.Stage != record.StageBootstrap || out.Node.Outcome != record.OutcomeRunning ||
		!strings.Contains(out.UserData, envToken(t, out.Env)) {
		t.Fatalf("rebootstrap: task %s (want %s), node %s/%s", out.Task, task.ID, out.Node.Stage, out.Node.Outcome)
	}
	newTok := envToken(t, out.Env)
	if err := env.Lab.Machine(node).RunBootstrap([]byte(out.Env)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if got, err := e.Wait(ctx, task.ID); err != nil || got.Status != record.TaskSucceeded {
		t.Fatalf("after the node ran its bootstrap again, task %s: %s (%s) %v", task.ID, got.Status, got.Message, err)
	}
	if rec := nodeRecord(t, e, node); rec.Stage != record.StageDeployed || rec.Deployment != 1 {
		t.Errorf("%s: stage %s, deployment %d; want deployed, still deployment 1", node, rec.Stage, rec.Deployment)
	}
	// The engine saw the last report; the agent may still be finishing.
	if b, err := env.Lab.Machine(node).WaitBootstrap(ctx); err != nil || b.State != lab.BootstrapDone || len(b.Reports) == 0 {
		t.Errorf("%s's bootstrap: %s %s (%v)", node, b.State, b.Err, err)
	}
	// The introspection API the node reached, by the lab's node agent:
	// the failure's reason named it, and so did the new environment.
	url := introspectionURL(t, env)
	if !strings.Contains(r.Reason, "can reach "+url) || !strings.Contains(out.Env, "SLIPWAY_URL='"+url+"'") {
		t.Errorf("the node reached %s; the failure's reason %q, the new environment names it: %v", url, r.Reason, strings.Contains(out.Env, url))
	}
	if code := selfStatus(t, env, oldTok); code != http.StatusUnauthorized {
		t.Errorf("the previous token answers %d, want 401", code)
	}
	if code := selfStatus(t, env, newTok); code != http.StatusOK {
		t.Errorf("the reissued token answers %d, want 200", code)
	}
	noSecretIn(t, e, node, oldTok, newTok)
	audit(t, env, e, 1)
}

// TestRebootstrapWhileWaiting: a node waiting at bootstrap in a running
// task gets its new token at once, and the running task sees its new
// reports; a deployed node is put back at bootstrap in its finished task,
// which runs again. Nodes with no deployment are refused.
func TestRebootstrapWhileWaiting(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp03"
	env := startEnv(t, designtest.Example(t), nil, nil, func(c *orchestrator.Config) {
		c.Bootstrap = silent{c.Bootstrap, node}
		c.BootstrapDeadline = time.Minute
	})
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	for _, n := range []string{node, "no-such-node"} {
		if _, err := e.Rebootstrap(t.Context(), n, "test"); !errors.Is(err, orchestrator.ErrConflict) {
			t.Errorf("rebootstrap of %s, which has no deployment: %v, want ErrConflict", n, err)
		}
	}
	task, err := e.Submit(t.Context(), record.Request{Action: record.ActionDeployNodes, Filter: only(node), Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, node+" to wait at bootstrap", func() bool {
		rec, err := e.Node(t.Context(), node)
		return err == nil && rec.Stage == record.StageBootstrap && rec.Task == task.ID
	})
	out, err := e.Rebootstrap(t.Context(), node, "test")
	if err != nil || out.Task != task.ID {
		t.Fatalf("rebootstrap while waiting: task %q, %v", out.Task, err)
	}
	if err := env.Lab.Machine(node).RunBootstrap([]byte(out.Env)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if got, err := e.Wait(ctx, task.ID); err != nil || got.Status != record.TaskSucceeded {
		t.Fatalf("task %s: %s (%s) %v", task.ID, got.Status, got.Message, err)
	}

	// Deployed: back at bootstrap in the finished task, which runs again.
	out, err = e.Rebootstrap(t.Context(), node, "test")
	if err != nil || out.Task != task.ID || out.Node.Stage != record.StageBootstrap {
		t.Fatalf("rebootstrap of the deployed node: task %q, stage %s, %v", out.Task, out.Node.Stage, err)
	}
	if rec := nodeRecord(t, e, node); rec.Outcome != record.OutcomeRunning || rec.Task != task.ID {
		t.Errorf("record while waiting again: %s in task %q", rec.Outcome, rec.Task)
	}
	second, err := e.Rebootstrap(t.Context(), node, "test")
	if err != nil {
		t.Fatalf("a second rebootstrap while the task waits: %v", err)
	}
	m := env.Lab.Machine(node)
	if err := m.RunBootstrap([]byte(out.Env)); err != nil { // the replaced token
		t.Fatal(err)
	}
	if b, _ := m.WaitBootstrap(ctx); b.State != lab.BootstrapFailed || !strings.Contains(b.Err, "401") {
		t.Errorf("the agent with the replaced token: %s %s", b.State, b.Err)
	}
	if err := m.RunBootstrap([]byte(second.Env)); err != nil {
		t.Fatal(err)
	}
	if got, err := e.Wait(ctx, task.ID); err != nil || got.Status != record.TaskSucceeded {
		t.Fatalf("task %s run again: %s (%s) %v", task.ID, got.Status, got.Message, err)
	}
	if _, err := e.Rebootstrap(t.Context(), "r02-gpu02", "test"); !errors.Is(err, orchestrator.ErrConflict) {
		t.Errorf("rebootstrap of a node no task deployed: %v, want ErrConflict", err)
	}
}

// TestRenderFailureFailsNodeAtBootstrap: a boot action asset that can't
// be rendered when the node asks for it fails the node at bootstrap at
// once (not at the deadline, not at the stage timeout), with the action,
// the asset and the reason, and without the secret's value.
func TestRenderFailureFailsNodeAtBootstrap(t *testing.T) {
	t.Parallel()
	const node = "r02-gpu01"
	d := designtest.Example(t)
	d.BootActions["broken"] = &design.BootAction{Metadata: design.ObjectMeta{Name: "broken"},
		Spec: design.BootActionSpec{NodeFilter: &design.NodeFilter{Names: []string{node}},
			Assets: []design.Asset{{Path: "/etc/broken.list", Type: "pkgList", Template: `{{ secret "kubeadm-join-token" }}!`}}}}
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) { c.BootstrapDeadline = time.Minute })
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	_, res := run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: only(node), Requester: "test"}, record.TaskFailed)
	r := res[0]
	want := `boot action broken, assets[0] (/etc/broken.list): package name "(secret kubeadm-join-token)!"`
	if r.Stage != record.StageBootstrap || !strings.Contains(r.Reason, want) || !strings.Contains(r.Reason, "`rebootstrap`") {
		t.Fatalf("%s: %s at %s: %s", node, r.Outcome, r.Stage, r.Reason)
	}
	noSecretIn(t, e, node, labrun.DefaultSecrets()["kubeadm-join-token"])
}

// TestReportWakesBootstrap: a node waiting for its boot action reports
// is woken by the report itself. The bootstrapper asks for look-ups
// 1,000 h apart (1 h at the lab's time scale, capped to MaxWait, 10 min):
// without the wake-up the node would finish 10 min after its first look,
// long past this test's 3 min bound, however loaded the machine is.
func TestReportWakesBootstrap(t *testing.T) {
	t.Parallel()
	const node = "r01-cmp01"
	env := startEnv(t, designtest.Example(t), nil, nil, func(c *orchestrator.Config) {
		c.MaxWait = 10 * time.Minute
		c.Bootstrap = rareLooks{c.Bootstrap.(*introspection.Server)}
	})
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	start := time.Now()
	task, err := e.Submit(t.Context(), record.Request{Action: record.ActionDeployNodes, Filter: only(node), Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	got, err := e.Wait(ctx, task.ID)
	if err != nil || got.Status != record.TaskSucceeded {
		t.Fatalf("deploy with bootstrap look-ups 10 min apart: %s %v after %s (the report did not wake the node?)", got.Status, err, time.Since(start).Round(time.Millisecond))
	}
}

// rareLooks is the lab's introspection API (its report notifications
// included) asking a waiting node to look again only after 1,000 h.
type rareLooks struct{ *introspection.Server }

func (r rareLooks) BootstrapStatus(ctx context.Context, d *design.Design, node, deployment string) (orchestrator.BootstrapProgress, error) {
	p, err := r.Server.BootstrapStatus(ctx, d, node, deployment)
	if p.Status == drivers.StatusInProgress {
		p.RetryAfter = 1000 * time.Hour
	}
	return p, err
}
