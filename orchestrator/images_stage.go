package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
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
func (r *nodeRun) images(ctx context.Context) (step, error) {
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
	return r.confirmImage(ctx, site, im), nil
}

// confirmImage lets the node on only when the provisioner itself lists
// the image's newest complete version with the design's content (a
// custom image's SHA-256; a standard one complete), whatever the sync's
// own account: MAAS deploys the newest complete version, and says a new
// one complete only once every region controller holds it.
func (r *nodeRun) confirmImage(ctx context.Context, site string, im *design.Image) step {
	ctx, cancel := context.WithTimeout(ctx, imageListTimeout)
	defer cancel()
	waiting := func(why string) step {
		return step{kind: stepWait, wait: imagesWait, msg: fmt.Sprintf("waiting for image %s (%s) to be complete in site %s: %s", im.Metadata.Name, im.ProvisionerName(), site, why)}
	}
	si, err := r.e.serverImages(ctx, site)
	if err != nil {
		return failed("image %s: site %s: %v; nothing was released or deployed", im.Metadata.Name, site, err)
	}
	list, err := si.Images(ctx)
	if err != nil {
		return waiting(fmt.Sprintf("the provisioner's images could not be read (%v)", err))
	}
	p, ok := findImage(list, im.ProvisionerName(), im.Arch())
	want := ""
	if c := im.Spec.Custom; c != nil {
		want = c.Source.SHA256
	}
	switch {
	case !ok:
		return waiting("the provisioner does not list it")
	case !p.Complete:
		return waiting("the provisioner has no complete version of it yet")
	case want != "" && p.SHA256 != want && !p.Pending && !r.e.imageSyncRunning(site, im):
		return failed("image %s (%s) in site %s: the provisioner's newest complete version carries SHA-256 %s, not the design's %s, none is pending and no sync of it runs: nothing was released or deployed; sync it (`orchestrator images sync --site %s --image %s`), then retry the task",
			im.Metadata.Name, im.ProvisionerName(), site, p.SHA256, want, site, im.Metadata.Name)
	case want != "" && p.SHA256 != want:
		return waiting(fmt.Sprintf("its newest complete version carries SHA-256 %s, not the design's %s (a newer one is still being copied?)", p.SHA256, want))
	}
	return advance("image %s (%s, %s) is complete in site %s, as its provisioner says", im.Metadata.Name, im.ProvisionerName(), im.Arch(), site)
}

// findImage is an image in a provisioner's list: the same name and the
// same architecture before the slash (MAAS lists a synced image as
// amd64/ga-22.04, an uploaded one as amd64/generic); a complete one first.
func findImage(list []drivers.ProvisionerImage, name, arch string) (drivers.ProvisionerImage, bool) {
	arch, _, _ = strings.Cut(arch, "/")
	var found drivers.ProvisionerImage
	ok := false
	for _, p := range list {
		if a, _, _ := strings.Cut(p.Architecture, "/"); p.Name != name || a != arch {
			continue
		}
		if !ok || p.Complete && !found.Complete {
			found, ok = p, true
		}
	}
	return found, ok
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

// imageSyncRunning says whether a sync of this version of im into site
// runs (in any task).
func (e *Engine) imageSyncRunning(site string, im *design.Image) bool {
	e.imgs.mu.Lock()
	defer e.imgs.mu.Unlock()
	return e.imgs.running[jobKey(site, im)] != nil
}
