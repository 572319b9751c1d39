package orchestrator_test

import (
	"testing"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/internal/etcdtest"
	"github.com/slipway-dev/slipway/orchestrator/record"
	etcdstore "github.com/slipway-dev/slipway/statestore/etcdstore"
)

// TestDeployOnEtcd: the engine runs on the etcd state store as on bbolt:
// the example site deploys in the lab with its state in a real etcd, and
// the lab counts every node Deployed, none leaked or deployed twice.
func TestDeployOnEtcd(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	st := etcdstore.New(etcdtest.Start(t, 1).Client(t), "/e2e/")
	env := startEnv(t, d, st, nil, nil)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes}, record.TaskSucceeded)
	audit(t, env, e, len(d.Nodes))
}
