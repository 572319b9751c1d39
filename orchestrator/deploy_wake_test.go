package orchestrator_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// deployCounter counts the Deploy calls of the server driver it wraps.
type deployCounter struct {
	drivers.Server
	n   *atomic.Int64
	log func(string, ...any)
}

func (c deployCounter) Deploy(ctx context.Context, n drivers.Node, dep drivers.Deployment) (drivers.Result, error) {
	c.n.Add(1)
	r, err := c.Server.Deploy(ctx, n, dep)
	c.log("Deploy: %+v %v", r, err)
	return r, err
}

// SiteChanges reaches the wrapped driver's changes (the poll then reads
// only the machines that changed, as with the driver unwrapped).
func (c deployCounter) SiteChanges(ctx context.Context, site string) (drivers.ServerChanges, bool) {
	return drivers.ChangesAt(ctx, c.Server, site)
}

// TestDeployWaitsFromDeploying: a node whose deploy is under way waits
// for its machine to leave Deploying; the poll does not wake it at
// Deploying to call Deploy again (it waited from the state before the
// deploy, Ready, and each deploy took a round more: user data, a driver
// call and a checkpoint). One call starts the deploy, one finds it done.
func TestDeployWaitsFromDeploying(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	env := startEnv(t, generated(t, 1), nil, nil, func(c *orchestrator.Config) {
		c.Drivers.Server = deployCounter{Server: c.Drivers.Server, n: &calls, log: t.Logf}
		c.MaxWait = time.Minute // no look for its wait running out
	})
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test"}, record.TaskSucceeded)
	if n := calls.Load(); n != 2 {
		t.Errorf("%d Deploy calls for one node, want 2 (the start, and the look that finds it deployed)", n)
	}
}

// TestDeployWaitRenewed: a node's wait that runs out while its machine
// still deploys is renewed when the poll knows the machine did not
// change (read since the wait began, not named by MAAS's changes since):
// it does not wake to call Deploy again each MaxWait. Before, a deploy of
// the lab's 480 ms with MaxWait 30 ms took a Deploy call per 30 ms.
func TestDeployWaitRenewed(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	env := startEnv(t, generated(t, 1), nil, nil, func(c *orchestrator.Config) {
		c.Drivers.Server = deployCounter{Server: c.Drivers.Server, n: &calls, log: t.Logf}
		c.MaxWait = 30 * time.Millisecond
	})
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test"}, record.TaskSucceeded)
	if n := calls.Load(); n != 2 {
		t.Errorf("%d Deploy calls for one node, want 2 (the start, and the look that finds it deployed)", n)
	}
}
