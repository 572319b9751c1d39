package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// The baseline stage brings a node's machine to its hardware profile's
// baseline, in sub-steps, each checkpointed:
//
//	0 plan:     read the firmware inventory, BIOS settings and storage;
//	            list every difference (recorded, and an event) and verify
//	            every image's checksum before any BMC is asked anything
//	1 firmware: one update at a time (per BMC always; the Site's
//	            maxParallel at once), its handle saved before the engine
//	            waits, so a restarted engine follows the same update
//	2 raid:     the volumes built (before the BIOS is staged: a layout
//	            the controller refuses leaves no setting pending)
//	3 bios:     the settings staged
//	4 reset:    one power cycle when anything waits for it, never while
//	            an update runs
//	5 verify:   versions, settings and volumes read back
const (
	blPlan = iota
	blFirmware
	blRAID
	blBIOS
	blReset
	blVerify
)

// baselineVerifyWait bounds how long, after the reset, the BMC may take
// to report what was applied (a BMC resetting itself after its own
// update does not answer meanwhile), at time scale 1.
const baselineVerifyWait = drivers.ResetWait

// nodeSequence is the path of node n in task t: the task's, without the
// baseline stage for a node whose hardware profile has no baseline (or
// which is not pinned to a machine: its BMC is not the engine's to
// drive).
func nodeSequence(t record.Task, n *design.Node) []record.Stage {
	seq := taskSequence(t)
	if t.Action == record.ActionApplyBaseline || (wantsBaseline(n.Spec.Hardware) && !n.Unpinned()) {
		return seq
	}
	return slices.DeleteFunc(slices.Clone(seq), func(s record.Stage) bool { return s == record.StageBaseline })
}

// skipBaseline moves a node whose path has no baseline stage past it
// when a verb left it there (rerun and retry start at the action's top),
// without a transition: the stage was never the node's.
func (r *nodeRun) skipBaseline() {
	if r.rec.Stage != record.StageBaseline || slices.Contains(r.seq, record.StageBaseline) {
		return
	}
	r.run.mu.Lock()
	t := r.run.task
	r.run.mu.Unlock()
	full := taskSequence(t)
	if i := slices.Index(full, record.StageBaseline); i >= 0 && i+1 < len(full) {
		r.rec.Stage, r.rec.Step = full[i+1], 0
	}
}

func (r *nodeRun) baseline(ctx context.Context) (step, error) {
	st, err := r.baselineStep(ctx)
	if st.kind == stepFail || err != nil && drivers.Classify(err) != drivers.Transient {
		// The node stops here: its retry reads the machine and plans
		// again (an update the BMC gave up on is not followed again).
		r.rec.Step = blPlan
	}
	return st, err
}

// baselineStep runs the stage's current sub-step.
func (r *nodeRun) baselineStep(ctx context.Context) (step, error) {
	hw := r.n.Spec.Hardware
	if r.rec.Step == blPlan {
		if !wantsBaseline(hw) {
			return advance("hardware profile %s has no baseline", orDefault(r.n.Spec.HardwareProfile, "(none)")), nil
		}
		if r.n.Unpinned() {
			return advance("node %s is not pinned: the provisioner chooses its machine, whose BMC the engine does not drive; its baseline is not applied", r.rec.Name), nil
		}
		return r.baselinePlan(ctx)
	}
	if r.rec.Baseline == nil || r.rec.Baseline.Task != r.run.id {
		r.rec.Step = blPlan // an older task's plan: plan again
		return step{kind: stepAgain}, nil
	}
	switch r.rec.Step {
	case blFirmware:
		return r.baselineFirmware(ctx)
	case blBIOS:
		return r.baselineBIOS(ctx)
	case blRAID:
		return r.baselineRAID(ctx)
	case blReset:
		return r.baselineReset(ctx)
	}
	return r.baselineVerify(ctx)
}

// baselinePlan is step 0: read, plan, record; then decide whether the
// plan is applied (dry run, a deployed machine, the Site's reboot
// policy).
func (r *nodeRun) baselinePlan(ctx context.Context) (step, error) {
	s, _, err := r.readBaseline(ctx)
	if err != nil {
		return step{}, err
	}
	b, err := r.planBaseline(ctx, s)
	if err != nil {
		return step{}, err
	}
	opts := r.options()
	b.DryRun = opts.DryRun
	// A dry run's plan replaces the node's record too: it keeps the
	// updates installed and waiting for the reset, so that the run after
	// it does not install them again.
	keepInstalled(r.rec.Baseline, b)
	r.rec.Baseline = b
	if len(b.Plan) == 0 {
		return advance("baseline of hardware profile %s in place: nothing to change", r.n.Spec.HardwareProfile), nil
	}
	plan := fmt.Sprintf("baseline plan (%d change(s)%s): %s", len(b.Plan), map[bool]string{true: ", one reset", false: ", no reset"}[b.Reboot], b.Summary())
	if !r.save(r.event("info", "baseline-plan", "%s", plan)) {
		return step{}, r.saveErr("baseline plan")
	}
	if b.DryRun {
		return advance("dry run: %s; nothing changed", plan), nil
	}
	if st, stop, err := r.baselineMayReboot(ctx, b); stop || err != nil {
		return st, err
	}
	return sub("%s", plan), nil
}

// baselineMayReboot stops a plan that needs a reset of a machine in
// service: apply_baseline under reboots deny without the reboot option
// fails naming the fix; a deploy or prepare workflow that finds the
// machine deployed leaves it be (apply_baseline applies it).
func (r *nodeRun) baselineMayReboot(ctx context.Context, b *record.Baseline) (step, bool, error) {
	if !b.Reboot {
		return step{}, false, nil
	}
	if r.rec.Action == record.ActionApplyBaseline {
		if r.d.SiteOf(r.n).Spec.Lifecycle.Baseline.Reboots == "allow" || r.options().Reboot {
			return step{}, false, nil
		}
		return failed("the baseline plan needs a reboot of the machine and the Site's lifecycle.baseline.reboots is deny: nothing was changed; to apply it, drain the node and run `orchestrator apply-baseline --node %s --reboot` (or set reboots: allow)", r.rec.Name), true, nil
	}
	if r.rec.MachineID == "" {
		return step{}, false, nil
	}
	state, err := r.observe(ctx)
	if err != nil {
		return step{}, true, err
	}
	if state == "Deployed" {
		r.save(r.event("warn", "baseline", "machine %s is Deployed: its baseline is not applied by %s (it would reboot it); `orchestrator apply-baseline --node %s --reboot` applies it", r.rec.MachineID, r.rec.Action, r.rec.Name))
		return advance("machine %s is Deployed: baseline left for apply_baseline", r.rec.MachineID), true, nil
	}
	return step{}, false, nil
}

// siteSlot is the Site's name and its bound on updates at once.
func (r *nodeRun) siteSlot() (string, int) {
	s := r.d.SiteOf(r.n)
	if s == nil {
		return "", DefaultBaselineParallel
	}
	if p := s.Spec.Lifecycle.Baseline.MaxParallel; p != nil && *p > 0 {
		return s.Metadata.Name, *p
	}
	return s.Metadata.Name, DefaultBaselineParallel
}

// startUpdateTimeout bounds the call that starts a firmware update, which
// a cancel does not cut short.
const startUpdateTimeout = 2 * time.Minute

// baselineFirmware is step 1: the plan's updates, one after the other.
func (r *nodeRun) baselineFirmware(ctx context.Context) (step, error) {
	b := r.rec.Baseline
	for i := range b.Updates {
		if !b.Updates[i].Done {
			return r.firmwareUpdate(ctx, &b.Updates[i])
		}
	}
	return sub("firmware: %d update(s) done", len(b.Updates)), nil
}

// firmwareUpdate starts u, or follows it once started.
func (r *nodeRun) firmwareUpdate(ctx context.Context, u *record.FirmwareUpdate) (step, error) {
	ts, err := r.e.oobTargets(ctx, r.d, r.n)
	if err != nil {
		return step{}, err
	}
	t := ts[0]
	site, max := r.siteSlot()
	bmcKey := fmt.Sprintf("%s:%d", t.bmc.Address, t.bmc.Port)
	fu, ok := t.drv.(drivers.OOBFirmwareUpdate)
	if !ok {
		return step{}, r.cannot("firmware", "update firmware")
	}
	if u.Handle != "" {
		r.e.updates.take(r.rec.Name, site, bmcKey, max, true) // running: its slot, whatever the counts
		return r.followUpdate(ctx, t, fu, u)
	}
	if ok, why := r.e.updates.take(r.rec.Name, site, bmcKey, max, false); !ok {
		r.waitingForSlot()
		// A slot given back wakes the node (updateSlots.give): its own
		// look again is the fallback only.
		st := waitFor(drivers.InProgress(time.Second, "firmware %s %s waits: %s", u.Component, u.Version, why), false)
		st.woken = true
		return st, nil
	}
	if !r.slotWaitAt.IsZero() {
		r.waitingForSlot() // the last stretch of the wait
		r.slotWaitAt = time.Time{}
	}
	img := r.imageOf(u.Component)
	url, err := r.e.cfg.Firmware.ImageURL(ctx, img, r.n.Spec.HardwareProfile, u.Component)
	if err != nil {
		r.e.updates.give(r.rec.Name)
		return step{}, drivers.Errorf(drivers.Permanent, "%v", err)
	}
	if u.Started.IsZero() {
		u.Started = now()
		if err := r.saveErr("intent: firmware update of %s to %s on BMC %s", u.Component, u.Version, bmcKey); err != nil {
			return step{}, err
		}
	}
	var h string
	err = r.e.callBMC(ctx, t.bmc, func(ctx context.Context) (err error) {
		// Once asked, the BMC runs the update whatever becomes of this
		// task: a cancel must not cut the call short and lose its handle
		// (the cancel follows the update to its end: settleUpdate).
		sctx, stop := context.WithTimeout(context.WithoutCancel(ctx), startUpdateTimeout)
		defer stop()
		h, err = fu.StartFirmwareUpdate(sctx, t.bmc, drivers.FirmwareUpdate{Targets: u.Targets, ImageURL: url, SHA256: u.SHA256, Version: u.Version})
		return err
	})
	if st, ok := r.bmcResetting(err); ok && !errors.Is(err, drivers.ErrUpdateRunning) {
		r.e.updates.give(r.rec.Name)
		return st, nil
	}
	if errors.Is(err, drivers.ErrUpdateRunning) {
		// Never a second update: wait for the running one to end.
		r.save(r.event("warn", "firmware", "BMC %s runs a firmware update already (%v): waiting for it to end before %s %s", bmcKey, err, u.Component, u.Version))
		return waitFor(drivers.InProgress(5*time.Second, "BMC %s runs a firmware update already", bmcKey), false), nil
	}
	if err != nil {
		r.e.updates.give(r.rec.Name)
		return step{}, err
	}
	u.Handle, u.Seen = h, now()
	if err := r.saveErr("firmware update of %s to %s started on BMC %s: %s", u.Component, u.Version, bmcKey, h); err != nil {
		return step{}, err
	}
	return waitFor(drivers.InProgress(time.Second, "firmware %s %s started", u.Component, u.Version), false), nil
}

// imageOf is the profile's image of a component.
func (r *nodeRun) imageOf(component string) (img design.FirmwareImage) {
	for _, fb := range r.n.Spec.Hardware.Firmware {
		if fb.Component == component {
			return fb.Image
		}
	}
	return img
}

// followUpdate asks the BMC about a started update: progress, done or
// failed. A BMC that stops answering (it resets itself after its own
// update) is waited for up to the verify bound.
func (r *nodeRun) followUpdate(ctx context.Context, t oobTarget, fu drivers.OOBFirmwareUpdate, u *record.FirmwareUpdate) (step, error) {
	var res drivers.Result
	err := r.e.callBMC(ctx, t.bmc, func(ctx context.Context) (err error) {
		res, err = fu.FirmwareUpdateStatus(ctx, t.bmc, u.Handle)
		return err
	})
	if err != nil {
		if drivers.Classify(err) == drivers.Transient && time.Since(u.Seen) < r.e.scaled(baselineVerifyWait) {
			return waitFor(drivers.InProgress(2*time.Second, "BMC %s:%d does not answer about the update of %s (%v): waiting", t.bmc.Address, t.bmc.Port, u.Component, err), false), nil
		}
		r.e.updates.give(r.rec.Name)
		return step{}, fmt.Errorf("firmware update of %s to %s (BMC task %s): %w", u.Component, u.Version, u.Handle, err)
	}
	u.Seen = now()
	switch res.Status {
	case drivers.StatusInProgress:
		if res.Message != u.Progress {
			u.Progress = res.Message
			r.save(r.event("info", "progress", "firmware %s → %s: %s", u.Component, u.Version, res.Message))
		}
		return waitFor(res, false), nil
	case drivers.StatusFailed:
		r.e.updates.give(r.rec.Name)
		return failed("firmware update of %s to version %s failed on BMC %s:%d: %s; the machine was not reset and boots its current firmware; fix the cause, then `orchestrator retry %s`",
			u.Component, u.Version, t.bmc.Address, t.bmc.Port, orDefault(res.Message, "no message"), r.run.id), nil
	}
	r.e.updates.give(r.rec.Name)
	u.Done, u.Progress = true, orDefault(res.Message, "done")
	return step{kind: stepAgain}, r.saveErr("firmware %s updated to %s (%s)", u.Component, u.Version, u.Progress)
}

// baselineBIOS is step 3: stage the settings that differ.
func (r *nodeRun) baselineBIOS(ctx context.Context) (step, error) {
	b := r.rec.Baseline
	if len(b.BIOS) == 0 {
		return sub("bios: nothing to change"), nil
	}
	var res drivers.Result
	t, err := r.withOOB(ctx, func(ctx context.Context, drv drivers.OOB, bmc drivers.BMC) (err error) {
		bd, ok := drv.(drivers.OOBBIOS)
		if !ok {
			return r.cannot("bios.attributes", "apply BIOS settings")
		}
		res, err = bd.ApplyBIOS(ctx, bmc, b.BIOS)
		return err
	})
	if st, ok := r.bmcResetting(err); ok {
		return st, nil
	}
	switch {
	case err != nil:
		return step{}, err
	case res.Status == drivers.StatusFailed:
		return failed("BIOS settings of hardware profile %s refused by BMC %s:%d: %s; none was staged and the machine was not reset; fix bios.attributes, then `orchestrator retry %s`",
			r.n.Spec.HardwareProfile, t.bmc.Address, t.bmc.Port, res.Message, r.run.id), nil
	}
	b.Staged = res.Status == drivers.StatusInProgress
	return sub("bios: %s", orDefault(res.Message, "settings in effect")), nil
}

// baselineRAID is step 2: build the volumes the controller lacks, one
// after the other.
func (r *nodeRun) baselineRAID(ctx context.Context) (step, error) {
	b := r.rec.Baseline
	for i := range b.Volumes {
		if !b.Volumes[i].Done {
			return r.buildVolume(ctx, &b.Volumes[i])
		}
	}
	return sub("raid: %d volume(s) built", len(b.Volumes)), nil
}

func (r *nodeRun) buildVolume(ctx context.Context, vb *record.VolumeBuild) (step, error) {
	var want drivers.Volume
	for _, v := range r.n.Spec.Hardware.RAID.Volumes {
		if v.Name == vb.Name {
			w, err := r.wantVolume(v)
			if err != nil {
				return step{}, err
			}
			want = w
		}
	}
	var res drivers.Result
	t, err := r.withOOB(ctx, func(ctx context.Context, drv drivers.OOB, bmc drivers.BMC) (err error) {
		rd, ok := drv.(drivers.OOBRAID)
		if !ok {
			return r.cannot("raid", "build RAID volumes")
		}
		if !vb.Started.IsZero() { // asked before: is it there?
			_, vols, err := rd.Storage(ctx, bmc)
			if found, _ := matchVolume(want, vols); found || err != nil {
				res = drivers.Done("volume %s present", want.Name)
				return err
			}
			res = drivers.InProgress(2*time.Second, "volume %s being built", want.Name)
			return nil
		}
		res, err = rd.CreateVolume(ctx, bmc, want)
		return err
	})
	if st, ok := r.bmcResetting(err); ok {
		return st, nil
	}
	if err != nil {
		return step{}, err
	}
	switch res.Status {
	case drivers.StatusFailed:
		return failed("RAID volume %s (%s of bays %s) refused by the controller behind BMC %s:%d: %s; nothing else was changed on the controller and the machine was not reset; fix the profile's raid, then `orchestrator retry %s`",
			want.Name, want.Level, strings.Join(want.Drives, ","), t.bmc.Address, t.bmc.Port, res.Message, r.run.id), nil
	case drivers.StatusInProgress:
		if vb.Started.IsZero() {
			vb.Started = now()
			if err := r.saveErr("raid: building volume %s (%s)", want.Name, res.Message); err != nil {
				return step{}, err
			}
		}
		return waitFor(res, false), nil
	}
	vb.Done = true
	return step{kind: stepAgain}, r.saveErr("raid: volume %s (%s of bays %s) built", want.Name, want.Level, strings.Join(want.Drives, ","))
}
