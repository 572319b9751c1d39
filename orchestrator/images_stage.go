package orchestrator

import (
	"context"
	"slices"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// declaredImage is the Image document node n deploys; nil when it
// deploys none (the provisioner's default image, or a bare standard
// series that preflight checks in the provisioner as before).
func declaredImage(d *design.Design, n *design.Node) *design.Image {
	im := d.ImageOf(n)
	if im == nil {
		return nil
	}
	return d.Images[im.Metadata.Name]
}

// imageSequence is seq without the images stage for a node that deploys
// no Image document.
func imageSequence(d *design.Design, n *design.Node, seq []record.Stage) []record.Stage {
	if d == nil || n == nil || declaredImage(d, n) != nil {
		return seq
	}
	return slices.DeleteFunc(slices.Clone(seq), func(s record.Stage) bool { return s == record.StageImages })
}

// startTaskImages starts, when a deploy or redeploy task starts, the
// syncs of its nodes' images into their Sites, so that uploads overlap
// the stages before images.
func (e *Engine) startTaskImages(run *taskRun, d *design.Design) {
	if a := run.task.Action; a != record.ActionDeployNodes && a != record.ActionRedeployNodes {
		return
	}
	for _, name := range run.task.Nodes {
		n := d.Nodes[name]
		if n == nil || run.result(name).Outcome.Finished() {
			continue
		}
		if im := declaredImage(d, n); im != nil {
			e.imageJobFor(run, d, d.SiteNameOf(n), im)
		}
	}
}

// imagesWait is how often a node waiting for its image looks again
// (at time scale 1; the sync's end wakes it at once).
const imagesWait = 10 * time.Second

// images is the images stage: the node waits until its image is complete
// in its Site's provisioner. A failed sync fails the node here, before
// anything is deployed (or, in a redeploy, released).
func (r *nodeRun) images(_ context.Context) (step, error) {
	if !slices.Contains(r.seq, record.StageImages) {
		return r.skipImages(), nil
	}
	im := declaredImage(r.d, r.n)
	if im == nil {
		return advance("node %s deploys no Image document: nothing to sync", r.rec.Name), nil
	}
	site := r.d.SiteNameOf(r.n)
	j := r.e.imageJobFor(r.run, r.d, site, im)
	j.wait(r.rec.Name)
	done, err := j.finished()
	switch {
	case !done:
		return step{kind: stepWait, wait: imagesWait, msg: "waiting for image " + im.Metadata.Name + " to be complete in site " + site}, nil
	case err != nil:
		return failed("image %s (%s) is not in site %s: %v; nothing was released or deployed: fix the image, then retry the task", im.Metadata.Name, im.ProvisionerName(), site, err), nil
	}
	return advance("image %s (%s, %s) is complete in site %s", im.Metadata.Name, im.ProvisionerName(), im.Arch(), site), nil
}

// skipImages moves a node whose path has no images stage past it (a verb
// set the task's first stage), without a transition.
func (r *nodeRun) skipImages() step {
	r.run.mu.Lock()
	t := r.run.task
	r.run.mu.Unlock()
	full := taskSequence(t)
	if i := slices.Index(full, record.StageImages); i >= 0 && i+1 < len(full) {
		r.rec.Stage, r.rec.Step = full[i+1], 0
	}
	return step{kind: stepAgain}
}
