package orchestrator

import (
	"context"

	"github.com/slipway-dev/slipway/orchestrator/record"
)

// A node whose deployments failed with no round left (the Site's
// deployRetries spent, 0 included) ends failed with its machine in
// Failed deployment, allocated to it. Its next deploy (a retry of that
// task, a rerun, or a new deploy task) finds the machine so and runs its
// recovery before deploying: the release a deploy round makes (and the
// recovery plan when the provisioner refuses it; recovery.go), without
// spending the run's deploy rounds. Without it the deploy call failed at
// once on the Failed machine and the node could not be deployed again
// short of restart-clean.

// stepReleaseLeft is the deploy stage's step that releases a machine an
// earlier run left in Failed deployment (step 1 is a round's release).
const stepReleaseLeft = 2

// leftDeployment handles the deploy stage's first call of a run: ok is
// true when it took the step (the machine was left Failed, or step
// stepReleaseLeft is under way).
func (r *nodeRun) leftDeployment(ctx context.Context) (step, bool, error) {
	if r.rec.Step == stepReleaseLeft {
		st, err := r.releaseLeft(ctx)
		return st, true, err
	}
	if r.rec.Step != 0 || r.deployLooked {
		return step{}, false, nil
	}
	if r.rec.MachineID == "" || r.rec.Deployment == 0 || r.rec.DeploymentEnded {
		r.deployLooked = true // no deployment of the node's is open: nothing left
		return step{}, false, nil
	}
	state, err := r.observe(ctx)
	if err != nil {
		return step{}, true, err
	}
	r.deployLooked = true
	if state != "Failed deployment" {
		return step{}, false, nil
	}
	r.rec.Step = stepReleaseLeft
	r.rec.Intent = &record.Intent{Op: "release", Task: r.run.id, At: now()}
	return step{kind: stepAgain}, true, r.saveErr("machine %s was left in Failed deployment by an earlier deployment: releasing it to deploy again", r.rec.MachineID)
}

// releaseLeft releases the machine left Failed (recovering it when the
// provisioner refuses), then the stage deploys as on a first call.
func (r *nodeRun) releaseLeft(ctx context.Context) (step, error) {
	if st, released, err := r.releaseFailed(ctx); !released || err != nil {
		return st, err
	}
	r.rec.Step, r.rec.Intent, r.rec.AllocatedBy, r.rec.Observed = 0, nil, "", "Ready"
	return step{kind: stepAgain}, r.saveErr("released machine %s, left by the failed deployment; deploying again", r.rec.MachineID)
}
