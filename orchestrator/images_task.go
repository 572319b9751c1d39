package orchestrator

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// imageTarget is one image to sync into one Site.
type imageTarget struct {
	site string
	im   *design.Image
}

// imageTargets are the (Site, image) pairs the sync_images task syncs:
// every Image document into every Site whose nodes deploy it, narrowed
// by the task's options.
func imageTargets(d *design.Design, o *record.TaskOptions) ([]imageTarget, error) {
	var site, image string
	if o != nil {
		site, image = o.Site, o.Image
	}
	if image != "" && d.Images[image] == nil {
		return nil, fmt.Errorf("the design has no Image document %.80q", image)
	}
	if site != "" && d.SiteNamed(site) == nil {
		return nil, fmt.Errorf("the design has no site %.80q", site)
	}
	names := make([]string, 0, len(d.Images))
	for name := range d.Images {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []imageTarget
	for _, name := range names {
		if image != "" && name != image {
			continue
		}
		for _, s := range d.ImageSites(name) {
			if site == "" || s == site {
				out = append(out, imageTarget{site: s, im: d.Images[name]})
			}
		}
	}
	return out, nil
}

// runSyncImages runs the sync_images task: the syncs start side by side
// (bounded) and the task waits for them all.
func (e *Engine) runSyncImages(run *taskRun, d *design.Design) (record.TaskStatus, string) {
	ts, err := imageTargets(d, run.task.Options)
	if err != nil {
		return record.TaskFailed, err.Error() + " (see `orchestrator images list`)"
	}
	if len(ts) == 0 {
		return record.TaskSucceeded, "no node of the design deploys an Image document there: nothing to sync"
	}
	jobs := make([]*imageJob, len(ts))
	for i, t := range ts {
		jobs[i] = e.imageJobFor(run, d, t.site, t.im)
	}
	var failed []string
	for _, j := range jobs {
		select {
		case <-j.done:
		case <-run.ctx.Done():
			if run.isCancelled() {
				e.releaseImageJobs(run)
				return record.TaskCancelled, "cancelled: the syncs only this task asked for were stopped (the provisioner keeps what it received, an incomplete version it never deploys: the next sync resumes there); those a deploy also waits for go on"
			}
			return record.TaskFailed, run.ctx.Err().Error()
		}
		if j.err != nil {
			failed = append(failed, j.err.Error())
		}
	}
	ok := len(ts) - len(failed)
	msg := fmt.Sprintf("%d of %d image sync(s) complete", ok, len(ts))
	switch {
	case len(failed) == 0:
		return record.TaskSucceeded, msg
	case ok == 0:
		return record.TaskFailed, msg + "; " + strings.Join(slices.Compact(failed), "; ")
	}
	return record.TaskPartiallySucceeded, msg + "; " + strings.Join(slices.Compact(failed), "; ")
}

// releaseImageJobs lets a cancelled task's syncs go: each one no other
// task follows is stopped.
func (e *Engine) releaseImageJobs(run *taskRun) {
	run.imgs.mu.Lock()
	jobs := make([]*imageJob, 0, len(run.imgs.jobs))
	for _, j := range run.imgs.jobs {
		jobs = append(jobs, j)
	}
	run.imgs.mu.Unlock()
	cause := fmt.Errorf("task %s, which asked for it, was cancelled", run.id)
	for _, j := range jobs {
		j.release(run.id, cause)
	}
}
