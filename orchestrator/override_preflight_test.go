package orchestrator_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/secrets"
)

// TestOverrideStandsInForTheDesignsPassword: a node whose BMC has a
// power-credential override deploys when the design's BMC password
// secret is not set (the override is what reaches its BMC); before, the
// preflight refused the task for the secret the node never uses. A node
// without an override is still refused.
func TestOverrideStandsInForTheDesignsPassword(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	e.Close()
	names := d.NodeNames()
	withOverride := names[0]

	var real func(context.Context, string) (drivers.Secret, error)
	e2 := startedEngine(t, env, func(cfg *orchestrator.Config) {
		real = cfg.Secrets
		cfg.Secrets = func(ctx context.Context, ref string) (drivers.Secret, error) {
			if ref == "secret:bmc-admin" {
				return drivers.Secret{}, fmt.Errorf("%w: secret %q", secrets.ErrNotSet, "bmc-admin")
			}
			return real(ctx, ref)
		}
		user := d.Nodes[withOverride].OOB(d.SiteOOBDriver()).Username
		cfg.BMCOverride = func(ctx context.Context, node string) (string, drivers.Secret, bool, error) {
			if node != withOverride {
				return "", drivers.Secret{}, false, nil
			}
			pw, err := real(ctx, "secret:bmc-admin") // the lab's BMC password
			return user, pw, err == nil, err
		}
	})
	_, res := run(t, e2, record.Request{Action: record.ActionDeployNodes, Filter: dcNodes(withOverride), Requester: "test"}, record.TaskSucceeded)
	if res[0].Stage != record.StageDeployed {
		t.Errorf("%s: %s at %s: %s", withOverride, res[0].Outcome, res[0].Stage, res[0].Reason)
	}
	if m, _ := dcMachine(env, withOverride); m.Status != "Deployed" {
		t.Errorf("%s: the lab shows %q, want Deployed", withOverride, m.Status)
	}
	run(t, e2, record.Request{Action: record.ActionDeployNodes, Filter: dcNodes(names[1]), Requester: "test"}, record.TaskFailed)
	if m, _ := dcMachine(env, names[1]); m.Status == "Deployed" || m.Status == "Deploying" {
		t.Errorf("%s (no override, no password): the lab shows %q", names[1], m.Status)
	}
}
