package orchestrator_test

import (
	"testing"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
)

// TestDeployAgainAfterFailedDeployNoRetries: with the Site's
// deployRetries: 0 a failed deployment fails its node at once, its
// machine left Failed deployment. Then a retry of that task, and a new
// deploy task of another such node, each run the recovery plan (release
// the failed machine) and deploy again: the lab's MAAS has both machines
// Deployed and owned, each deployed twice (one failed), with no
// duplicate deployment. Before, both failed at once without deploying.
func TestDeployAgainAfterFailedDeployNoRetries(t *testing.T) {
	t.Parallel()
	const viaRetry, viaDeploy = "r01-cmp02", "r02-gpu01"
	d := designtest.Example(t)
	zero := 0
	d.Site.Spec.Lifecycle.DeployRetries = &zero
	env, e := prepared(t, d, &maas.Faults{Machines: map[string]maas.MachineFaults{viaRetry: {FailDeploy: 1}, viaDeploy: {FailDeploy: 1}}})
	first, _ := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(viaRetry)}, record.TaskFailed)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(viaDeploy)}, record.TaskFailed)
	for _, n := range []string{viaRetry, viaDeploy} {
		if s := labState(env, n); s != "Failed deployment" {
			t.Fatalf("%s after its failed deploy: the lab has it %s, want Failed deployment", n, s)
		}
	}

	res := applyVerb(t, e, first.ID, record.VerbRetry, record.TaskSucceeded)
	if r := res[viaRetry]; r.Stage != record.StageDeployed {
		t.Errorf("%s after retry: %s at %s: %s", viaRetry, r.Outcome, r.Stage, r.Reason)
	}
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(viaDeploy)}, record.TaskSucceeded)

	lc := lifecycle(env)
	for _, n := range []string{viaRetry, viaDeploy} {
		m, _ := labMachineOf(t, env, n)
		if m.Status != "Deployed" || !m.Owned() {
			t.Errorf("%s: the lab has it %s (owned %v), want Deployed", n, m.Status, m.Owned())
		}
		if c := lc[n]; c.DeployStarts != 2 || c.DeployFailures != 1 || c.DuplicateDeploys != 0 {
			t.Errorf("%s: the lab counted %+v, want 2 deployments, 1 failed, no duplicate", n, c)
		}
		if l := nodeRecord(t, e, n).Lifecycle; l != record.LifecycleDeployed {
			t.Errorf("%s: lifecycle %s, want deployed", n, l)
		}
	}
}
