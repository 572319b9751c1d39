package orchestrator_test

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/labrun"
	"github.com/slipway-dev/slipway/internal/testsite"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/sim/lab"
)

// only selects the named nodes.
func only(names ...string) orchestrator.Filter {
	return orchestrator.Filter{Sets: []design.NodeFilter{{Names: names}}}
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
	rec := record(t, e, node)
	return env.Introspection.Token(node, strconv.Itoa(rec.Deployment)), rec.Deployment
}

// releaseBehindTheBack releases the node's machine through the driver, as
// someone working in MAAS directly would, and waits until it is Ready.
func releaseBehindTheBack(t *testing.T, env *labrun.Env, e *orchestrator.Engine, node string) {
	t.Helper()
	ref := drivers.NodeRef{Name: node, MachineID: record(t, e, node).MachineID}
	res, err := env.Drivers.Server.Release(t.Context(), ref, false)
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
	env, e := prepared(t, testsite.Example(t), nil)
	run(t, e, orchestrator.Request{Action: orchestrator.ActionDeployNodes, Filter: only(node), Requester: "test"}, orchestrator.TaskSucceeded)
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
	if rec := record(t, e, node); !rec.DeploymentEnded || rec.Stage != orchestrator.StageDeployed {
		t.Errorf("record after the sweep: stage %s, deployment ended %v; want deployed, ended", rec.Stage, rec.DeploymentEnded)
	}
	evs, err := e.Events(t.Context(), 0, 0, "", node)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(ev orchestrator.Event) bool {
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
	env, e := prepared(t, testsite.Example(t), nil)
	task, _ := run(t, e, orchestrator.Request{Action: orchestrator.ActionDeployNodes, Filter: only(adopted, rerun), Requester: "test"}, orchestrator.TaskSucceeded)
	oldTok, oldDep := map[string]string{}, map[string]int{}
	for _, n := range []string{adopted, rerun} {
		oldTok[n], oldDep[n] = token(t, env, e, n)
		releaseBehindTheBack(t, env, e, n)
	}
	rec, err := e.Adopt(t.Context(), adopted, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Stage != orchestrator.StageReady || !rec.DeploymentEnded {
		t.Errorf("adopted as %s, deployment ended %v; want ready, ended", rec.Stage, rec.DeploymentEnded)
	}
	if code := selfStatus(t, env, oldTok[adopted]); code != http.StatusUnauthorized {
		t.Errorf("after adopt of the released machine, its old token answers %d, want 401", code)
	}

	applyVerb(t, e, task.ID, orchestrator.VerbRerun, orchestrator.TaskSucceeded)
	d := testsite.Example(t)
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
