package orchestrator

import (
	"context"
	"fmt"

	"github.com/slipway-dev/slipway/orchestrator/record"
)

// expected is the provisioner state a settled node's stage implies.
var expected = map[record.Stage][]string{
	record.StageDeployed:   {"Deployed"},
	record.StageReady:      {"Ready", "Allocated"},
	record.StageReleased:   {"Ready", "New"},
	record.StageRescueMode: {"Rescue mode"},
}

// lifecycleStage is the stage whose machine state a lifecycle state implies.
var lifecycleStage = map[record.Lifecycle]record.Stage{
	record.LifecycleDeployed: record.StageDeployed,
	record.LifecycleReady:    record.StageReady,
	record.LifecycleReleased: record.StageReleased,
}

// settledStage is the stage whose machine state a node at rest implies:
// its own stage when its last task ended there, else its lifecycle's (a
// power, verify or test task since leaves a deployed node deployed, and
// the machine must still be Deployed); "" when neither implies one.
func settledStage(r record.NodeRecord) record.Stage {
	if r.Outcome == record.OutcomeSucceeded && expected[r.Stage] != nil {
		return r.Stage
	}
	return lifecycleStage[r.LifecycleState()]
}

// settled: a node at rest whose stage or lifecycle implies a machine state.
func settled(r record.NodeRecord) bool { return settledStage(r) != "" }

// liveDeployment: the record says the node's machine runs the OS of its
// current deployment (the node's introspection token is valid), whatever
// task last looked at or powered it.
func liveDeployment(r record.NodeRecord) bool {
	atDeployment := r.Stage == record.StageBootstrap || r.Stage == record.StageDeployed || r.LifecycleState() == record.LifecycleDeployed
	return atDeployment && r.Deployment > 0 && !r.DeploymentEnded
}

// deployedStates are the machine states in which a deployment goes on:
// rescue mode boots the machine into an ephemeral system and returns it
// to Deployed; a deployed machine marked Broken keeps its OS. Any other
// state (released, Ready, redeployed, gone) ends it.
var deployedStates = []string{"Deployed", "Entering rescue mode", "Rescue mode", "Exiting rescue mode",
	"Failed to enter rescue mode", "Failed to exit rescue mode", "Broken"}

// endLostDeployment ends the deployment of a node whose machine left it
// behind the engine's back: the node's introspection token is revoked and
// the record says the deployment ended (the next deploy opens a new one).
// It holds the node's lease meanwhile, and leaves a node a task took, or
// whose record changed, since the sweep read it. It returns what it did,
// for the drift event.
func (e *Engine) endLostDeployment(ctx context.Context, r record.NodeRecord) string {
	const by = "(sweep)"
	if !e.leaseFor(r.Name, by) {
		return "; a task holds the node now: its deployment is left to it"
	}
	defer e.unleaseFor(r.Name, by)
	cur, ok, err := e.rec.node(ctx, r.Name)
	switch {
	case err != nil:
		return fmt.Sprintf("; reading the node's record failed (%v): the next sweep ends its deployment", err)
	case !ok || !cur.Updated.Equal(r.Updated):
		return "; the node's record changed meanwhile: the next sweep looks again"
	}
	if e.cfg.Bootstrap != nil {
		if err := e.cfg.Bootstrap.EndDeployment(ctx, r.Name); err != nil {
			return fmt.Sprintf("; revoking the node's introspection token failed (%v): the next sweep tries again", err)
		}
	}
	cur.DeploymentEnded, cur.Updated = true, now()
	var b batch
	b.node(cur)
	if err := e.rec.write(ctx, &b); err != nil {
		return fmt.Sprintf("; the node's introspection token is revoked, but recording that its deployment ended failed (%v)", err)
	}
	return fmt.Sprintf("; deployment %d is over: the node's introspection token is revoked", r.Deployment)
}

// leaseFor takes a free node for a short operation of the engine's own
// (by names it); false when a task holds the node.
func (e *Engine) leaseFor(node, by string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leases[node] != "" {
		return false
	}
	e.leases[node] = by
	return true
}

// unleaseFor frees a node that by holds, waking the tasks waiting for it.
func (e *Engine) unleaseFor(node, by string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leases[node] == by {
		delete(e.leases, node)
		close(e.leaseCh)
		e.leaseCh = make(chan struct{})
	}
}
