package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// stage runs one call of the current stage's handler: the state table.
func (r *nodeRun) stage(ctx context.Context) (step, error) {
	if st, ok, err := r.mediaForStage(ctx); ok { // vmedia.go: the ISO in or out as the stage needs
		return st, err
	}
	switch r.rec.Stage {
	case record.StageVerify:
		return r.verify(ctx)
	case record.StageBaseline:
		return r.baseline(ctx) // baseline.go
	case record.StageOOBPrepare:
		return r.oobPrepare(ctx)
	case record.StageIdentify:
		return r.identify(ctx)
	case record.StageCommission:
		return r.commission(ctx)
	case record.StageAsBuilt:
		return r.asBuilt(ctx) // asbuilt.go
	case record.StageConfigure:
		return r.configure(ctx)
	case record.StageImages:
		return r.images(ctx) // images_stage.go
	case record.StageDeploy:
		return r.deploy(ctx)
	case record.StageBootstrap:
		return r.bootstrap(ctx)
	case record.StageReleasing:
		return r.releasing(ctx)
	case record.StagePower:
		return r.power(ctx)
	case record.StagePending:
		return advance(""), nil
	}
	if st, ok, err := r.lifecycleStage(ctx); ok { // decommission.go
		return st, err
	}
	return step{}, drivers.Errorf(drivers.Permanent, "stage %q has no handler in the %s workflow", r.rec.Stage, r.rec.Action)
}

func (r *nodeRun) verify(ctx context.Context) (step, error) {
	if r.n.Unpinned() {
		return advance("node %s is not pinned: its BMC is the provisioner's, nothing to verify", r.rec.Name), nil
	}
	var info drivers.BMCInfo
	t, err := r.withOOB(ctx, func(ctx context.Context, oob drivers.OOB, b drivers.BMC) (err error) {
		if info, err = oob.Probe(ctx, b); err == nil && !info.Reachable {
			// A fallback is tried only on an error: not answering is one.
			err = drivers.Errorf(drivers.Transient, "BMC %s:%d does not answer", b.Address, b.Port)
		}
		return err
	})
	b := t.bmc
	switch {
	case err != nil:
		return step{}, err
	case !info.Authorized:
		return step{}, drivers.Errorf(drivers.Permanent, "BMC %s:%d rejected the credentials for user %s", b.Address, b.Port, b.Username)
	}
	return advance("BMC %s:%d answers over %s (%s)", b.Address, b.Port, t.typ, orDefault(info.Description, "reachable, authorized")), nil
}

// oobPrepare: (0) the switch ports carry the provisioning network;
// (1) when the provisioner doesn't know the machine yet, boot from PXE
// next; (2) power it on, or cycle it when on, so it PXE-boots and enlists
// (3: confirming that cycle).
func (r *nodeRun) oobPrepare(ctx context.Context) (step, error) {
	switch r.rec.Step {
	case 0:
		return r.provisioningPorts(ctx)
	case 1:
		return r.pxeNext(ctx)
	default:
		return r.powerForPXE(ctx)
	}
}

// provisioningPorts puts the node's switch ports on the provisioning
// network (ports.go), unless the provisioner has the node's machine
// Deployed: it does not PXE-boot (the later stages find it deployed), and
// its ports carry its production networks, which a running server needs.
func (r *nodeRun) provisioningPorts(ctx context.Context) (step, error) {
	if r.e.cfg.Drivers.Network != nil && r.rec.MachineID != "" && r.d.SiteOf(r.n).HasFabric() {
		ms, err := r.e.status(ctx, []drivers.NodeRef{r.ref()})
		if err != nil {
			return step{}, err
		}
		if len(ms) == 1 && ms[0].State == "Deployed" {
			return sub("machine %s is Deployed (it does not PXE-boot): its switch ports are left on its production networks", r.rec.MachineID), nil
		}
	}
	return r.portsStep(ctx, drivers.PhaseProvisioning)
}

// pxeNext stages the hardware profile's BIOS settings, then sets the
// next boot to PXE, unless the provisioner already knows the machine (or
// allocates it: an unpinned node).
func (r *nodeRun) pxeNext(ctx context.Context) (step, error) {
	if r.n.Unpinned() { // design/validate_hardware.go
		return advance("node %s is not pinned: the provisioner allocates it a commissioned machine by its constraints, and powers it", r.rec.Name), nil
	}
	bios, err := r.applyBIOS(ctx)
	if err != nil {
		return step{}, err
	}
	if r.bootMedia() != nil {
		return r.cdNext(ctx, bios) // vmedia.go
	}
	if r.rec.MachineID != "" {
		ms, err := r.e.status(ctx, []drivers.NodeRef{r.ref()})
		if err != nil {
			return step{}, err
		}
		if len(ms) == 1 && ms[0].MachineID != "" && ms[0].State != "New" {
			r.rec.Observed = ms[0].State
			return advance("%smachine %s is known to the provisioner (%s): no PXE boot needed", bios, r.rec.MachineID, ms[0].State), nil
		}
	}
	var res drivers.Result
	_, err = r.withOOB(ctx, func(ctx context.Context, oob drivers.OOB, b drivers.BMC) (err error) {
		res, err = oob.SetBootDevice(ctx, b, r.pxeOnce())
		if errors.Is(err, drivers.ErrBootNotKept) { // once more: some BMCs keep it the second time
			res, err = oob.SetBootDevice(ctx, b, r.pxeOnce())
		}
		return err
	})
	if errors.Is(err, drivers.ErrBootNotKept) {
		r.rec.PXEBeforePower = true
		r.save(r.event("warn", "boot-flags", "%v; set twice, it is not kept: a one-time PXE boot is set right before each power change instead", err))
		return sub("%sthe BMC does not keep the boot override: PXE is set once more right before the power change", bios), nil
	}
	if err != nil {
		return step{}, err
	}
	if st, ok := r.bootFlagsCleared(res, bios); ok { // bootflags.go
		return st, nil
	}
	return r.result(res, false, func() step { return sub("%snext boot from PXE", bios) })
}

// pxeOnce is a one-time PXE boot in the node's boot mode (from the
// virtual CD for a profile with virtualMedia: vmedia.go).
func (r *nodeRun) pxeOnce() drivers.BootDevice { return r.bootOnce() }

// powerForPXE powers the machine on, or cycles it when it is on, so that
// it boots from PXE; step 3 confirms an earlier cycle.
func (r *nodeRun) powerForPXE(ctx context.Context) (step, error) {
	var res drivers.Result
	var state drivers.PowerState
	_, err := r.withOOB(ctx, func(ctx context.Context, oob drivers.OOB, b drivers.BMC) (err error) {
		if state, err = oob.PowerStatus(ctx, b); err != nil {
			return err
		}
		if r.rec.PXEBeforePower && !(r.rec.Step == 3 && state == drivers.PowerOn) {
			// The BMC keeps no boot override: set it right before (its
			// not being kept is known, and not an error here).
			if _, err := oob.SetBootDevice(ctx, b, r.pxeOnce()); err != nil && !errors.Is(err, drivers.ErrBootNotKept) {
				return err
			}
		}
		switch {
		case r.rec.Step == 3 && state == drivers.PowerOn: // confirming an earlier cycle
			res = drivers.Done("powered on")
		case state == drivers.PowerOn:
			res, err = oob.PowerCycle(ctx, b)
		default:
			res, err = oob.PowerOn(ctx, b)
		}
		return err
	})
	if err != nil {
		return step{}, err
	}
	if res.Status == drivers.StatusInProgress && r.rec.Step == 2 {
		r.rec.Step = 3
	}
	return r.result(res, false, func() step {
		return advance("power %s → on through the BMC; the machine boots from %s", state, bootWord(r.pxeOnce()))
	})
}

// result maps a driver result: Done → done(), InProgress → wait,
// Failed → fail.
func (r *nodeRun) result(res drivers.Result, poll bool, done func() step) (step, error) {
	switch res.Status {
	case drivers.StatusDone:
		return done(), nil
	case drivers.StatusInProgress:
		return waitFor(res, poll), nil
	case drivers.StatusFailed:
		return failed("%s", res.Message), nil
	}
	return step{}, drivers.Errorf(drivers.Transient, "driver returned an invalid result %+v", res)
}

func (r *nodeRun) identify(ctx context.Context) (step, error) {
	dn, err := r.e.serverNode(ctx, r.d, r.n, r.rec.MachineID)
	if err != nil {
		return step{}, err
	}
	// The commissioning's scripts: a provisioner that enlists the machine
	// may start its commissioning with them (MAAS does, in one request).
	p, ok, err := r.e.siteProfile(ctx, r.d, r.n) // siteprofile.go
	if err != nil {
		return step{}, err
	}
	if ok {
		dn.Scripts = p.commissionScripts()
	}
	var m drivers.Machine
	var res drivers.Result
	err = r.e.callServer(ctx, func(ctx context.Context) error {
		// The call may create the machine (and start its commissioning):
		// a cancel does not cut it short, so the answer naming the
		// machine is kept and the cancel's compensation aborts it; the
		// engine's stop does (a resumed identify finds the machine).
		cctx, stop := r.e.untilStop(ctx)
		defer stop()
		m, res, err = r.e.cfg.Drivers.Server.IdentifyNode(cctx, dn)
		return err
	})
	if err != nil {
		return step{}, err
	}
	return r.result(res, false, func() step {
		r.rec.MachineID, r.rec.Observed = m.MachineID, m.State
		return advance("%s", res.Message)
	})
}

func (r *nodeRun) commission(ctx context.Context) (step, error) {
	ref := r.ref()
	p, ok, err := r.e.siteProfile(ctx, r.d, r.n) // siteprofile.go
	if err != nil {
		return step{}, err
	}
	if ok {
		ref.Scripts = p.commissionScripts()
	}
	var res drivers.Result
	err = r.e.callServer(ctx, func(ctx context.Context) (err error) {
		res, err = r.e.cfg.Drivers.Server.Commission(ctx, ref)
		return err
	})
	if err != nil {
		return step{}, err
	}
	if res.Status == drivers.StatusDone { // what commissioning found, for the node's served network-config
		dn, err := r.e.serverNode(ctx, r.d, r.n, r.rec.MachineID)
		if err != nil {
			return step{}, err
		}
		// Written with the stage's end: without that save, the stage
		// (and this read) is done again.
		op, err := r.inventoryOp(ctx, dn)
		if err != nil {
			return step{}, err
		}
		r.keepWithSave(op)
	}
	return r.result(res, true, func() step { return advance("%s", res.Message) })
}

// configured are the states of a machine configured earlier: the deploy
// stage takes it from there.
var configured = []string{"Allocated", "Deploying", "Deployed", "Failed deployment"}

// configure applies networking, storage and platform while the machine
// is Ready (MAAS accepts storage changes only then), the three calls in
// one round: each compares first and changes only what differs, so a
// stage cut short (a crash, a wait, a failed call) runs its calls again
// from the one its checkpoint names with nothing lost, and the node is
// saved once for the three (each call's message an event of that save)
// instead of once per call. A stop, cancel or freeze asked between two
// calls ends the round with what is done saved (stopAsked).
func (r *nodeRun) configure(ctx context.Context) (step, error) {
	calls := []struct {
		what string
		fn   func(context.Context, drivers.Node) (drivers.Result, error)
	}{{"networking", r.e.cfg.Drivers.Server.ApplyNetworking}, {"storage", r.e.cfg.Drivers.Server.ApplyStorage}, {"platform", r.e.cfg.Drivers.Server.ApplyPlatform}}
	if r.rec.Step >= len(calls) {
		return advance("configured"), nil
	}
	if r.rec.Step == 0 { // look first: past Ready, MAAS accepts no changes and the node was configured before
		ms, err := r.e.status(ctx, []drivers.NodeRef{r.ref()})
		if err != nil {
			return step{}, err
		}
		if len(ms) == 1 && slices.Contains(configured, ms[0].State) {
			r.rec.Observed = ms[0].State
			return advance("machine %s is %s: configuration kept as it was applied", r.rec.MachineID, ms[0].State), nil
		}
	}
	dn, err := r.e.serverNode(ctx, r.d, r.n, r.rec.MachineID)
	if err != nil {
		return step{}, err
	}
	for {
		c := calls[r.rec.Step]
		var res drivers.Result
		err = r.e.callServer(ctx, func(ctx context.Context) (err error) {
			res, err = c.fn(ctx, dn)
			return err
		})
		if err != nil || res.Status != drivers.StatusDone {
			return r.resultErr(res, err)
		}
		if r.rec.Step == len(calls)-1 {
			return advance("%s: %s", c.what, res.Message), nil
		}
		if r.stopAsked(ctx) {
			return sub("%s: %s", c.what, res.Message), nil
		}
		r.rec.Step++
		r.rec.Attempts = 0
		r.note(r.event("info", "step", "%s: %s", c.what, res.Message))
	}
}

// resultErr is result for a call that returned err (when not nil) or
// res, not done.
func (r *nodeRun) resultErr(res drivers.Result, err error) (step, error) {
	if err != nil {
		return step{}, err
	}
	return r.result(res, false, nil)
}

// deploy: (0) record the intent, then deploy (allocating when needed);
// a failed deployment within DeployRetries goes to (1): record the
// release intent, release, and back to (0).
func (r *nodeRun) deploy(ctx context.Context) (step, error) {
	if r.rec.Step == 1 {
		return r.redeployRelease(ctx)
	}
	if st, ok, err := r.leftDeployment(ctx); ok || err != nil { // deploy_left.go
		return st, err
	}
	if err := r.deployIntent(ctx); err != nil {
		return step{}, err
	}
	dn, err := r.e.serverNode(ctx, r.d, r.n, r.rec.MachineID)
	if err != nil {
		return step{}, err
	}
	var dep drivers.Deployment
	if r.e.cfg.Bootstrap != nil {
		if err := r.ensureInventory(ctx, dn); err != nil {
			return step{}, err
		}
		if dep.UserData, err = r.e.cfg.Bootstrap.UserData(ctx, r.d, r.rec.Name, r.deployment()); err != nil {
			return step{}, err
		}
	}
	var res drivers.Result
	err = r.e.callServer(ctx, func(ctx context.Context) (err error) {
		res, err = r.e.cfg.Drivers.Server.Deploy(ctx, dn, dep)
		return err
	})
	if err != nil {
		return step{}, err
	}
	switch res.Status {
	case drivers.StatusDone:
		r.rec.Intent, r.rec.Observed = nil, "Deployed"
		return advance("%s", res.Message), nil
	case drivers.StatusFailed:
		return r.deployFailed(ctx, res)
	case drivers.StatusInProgress:
		// The machine deploys: the poll wakes the node when that state
		// ends. With the state seen before the deploy (Ready), the
		// first poll woke it at Deploying to call Deploy again (user
		// data, a driver call, a checkpoint) for nothing.
		r.rec.Observed = "Deploying"
	}
	return r.result(res, true, nil)
}

// redeployRelease (step 1) releases the machine of a failed deployment
// so that the node deploys again.
func (r *nodeRun) redeployRelease(ctx context.Context) (step, error) {
	if st, released, err := r.releaseFailed(ctx); !released || err != nil {
		return st, err
	}
	r.rec.Rounds++
	r.rec.Step, r.rec.Intent, r.rec.AllocatedBy = 0, nil, ""
	return step{kind: stepAgain}, r.saveErr("released after the failed deployment; deploying again (round %d)", r.rec.Rounds+1)
}

// releaseFailed releases the machine of a failed deployment (recovering
// it when the provisioner refuses) and ends that deployment; released is
// false until the provisioner has it back, st then being the stage's
// step meanwhile.
func (r *nodeRun) releaseFailed(ctx context.Context) (st step, released bool, err error) {
	res, err := r.release(ctx, false)
	switch {
	case err != nil:
		return step{}, false, err
	case res.Status == drivers.StatusFailed:
		st, err = r.releaseRefused(ctx, res)
		return st, false, err
	case res.Status != drivers.StatusDone:
		st, err = r.result(res, true, nil)
		return st, false, err
	}
	return step{}, true, r.endDeployment(ctx)
}

// deployIntent persists the deploy intent before the provisioner is
// asked, starting a new deployment when the last one ended.
func (r *nodeRun) deployIntent(ctx context.Context) error {
	if r.rec.Intent != nil && r.rec.Intent.Op == "deploy" {
		return nil
	}
	fresh, err := r.freshDeployment(ctx)
	if err != nil {
		return err
	}
	if fresh {
		r.rec.Deployment, r.rec.DeploymentEnded = r.rec.Deployment+1, false
	}
	r.rec.Intent = &record.Intent{Op: "deploy", Task: r.run.id, At: now()}
	if err := r.takeHold(ctx, fresh); err != nil {
		return err
	}
	return r.saveErr("intent: deploy machine %s", r.rec.MachineID)
}

// takeHold makes this task the holder of the node's machine (AllocatedBy,
// which a cancel releases) unless the machine runs a deployment already:
// one deployed before the task (by an earlier task, or adopted Deployed)
// is not the task's to release. A machine no one holds that this task
// allocates afresh is its own without asking; one another task or an
// adoption held (Allocated, Deploying or failed on the way) passes to it.
func (r *nodeRun) takeHold(ctx context.Context, fresh bool) error {
	if r.rec.AllocatedBy == r.run.id {
		return nil
	}
	if r.rec.AllocatedBy != "" || !fresh {
		state, err := r.observe(ctx)
		if err != nil {
			return err
		}
		if slices.Contains(deployedStates, state) {
			return nil
		}
	}
	r.rec.AllocatedBy = r.run.id
	return nil
}

// deployFailed handles a failed deployment: a Broken machine is
// recovered; otherwise the machine is released and deployed again while
// rounds remain, and the node fails after the last.
func (r *nodeRun) deployFailed(ctx context.Context, res drivers.Result) (step, error) {
	state, err := r.observe(ctx)
	if err != nil {
		return step{}, err
	}
	again := r.rec.Rounds < r.deployRetries()
	if state == "Broken" {
		// Broken mid-deployment (MAAS, or an operator, marked it):
		// release takes it back only once it is marked fixed.
		then := recoveryThenFail
		if again {
			then = recoveryThenContinue
			r.rec.Step = 1 // released, the round's release is done and the node deploys again
			r.rec.Intent = &record.Intent{Op: "release", Task: r.run.id, At: now()}
		}
		if !r.startRecovery(ctx, fmt.Sprintf("machine %s turned Broken while deploying (%s)", r.rec.MachineID, res.Message), then) {
			return step{}, errRecovered
		}
		return step{kind: stepAgain}, nil
	}
	if again {
		r.rec.Step = 1
		r.rec.Intent = &record.Intent{Op: "release", Task: r.run.id, At: now()}
		return step{kind: stepAgain}, r.saveErr("deployment failed (%s); releasing machine %s to deploy again (%d of %d)",
			res.Message, r.rec.MachineID, r.rec.Rounds+1, r.deployRetries())
	}
	return failed("%s (after %d deployment(s); the machine stays allocated to this node: `restart-clean` or destroy releases it)", res.Message, r.rec.Rounds+1), nil
}

// saveErr persists the record with an event; an error when it could not.
func (r *nodeRun) saveErr(format string, args ...any) error {
	if !r.save(r.event("info", "intent", format, args...)) {
		if err := r.e.ctx.Err(); err != nil {
			return err
		}
		return drivers.Errorf(drivers.Transient, "could not store the node's checkpoint")
	}
	return nil
}

// release calls Release under the limits.
func (r *nodeRun) release(ctx context.Context, erase bool) (drivers.Result, error) {
	var res drivers.Result
	err := r.e.callServer(ctx, func(ctx context.Context) (err error) {
		res, err = r.e.cfg.Drivers.Server.Release(ctx, r.ref(), map[bool]drivers.Erase{true: drivers.EraseDefault, false: drivers.EraseNone}[erase])
		return err
	})
	return res, err
}

// releaseRefused handles a release the provisioner refused (Failed): the
// machine's recovery (e.g. mark broken, mark fixed) runs, then the
// stage asks for the release again.
func (r *nodeRun) releaseRefused(ctx context.Context, res drivers.Result) (step, error) {
	if !r.startRecovery(ctx, fmt.Sprintf("the provisioner refused to release machine %s (%s)", r.rec.MachineID, res.Message), recoveryThenContinue) {
		return step{}, errRecovered
	}
	return step{kind: stepAgain}, nil
}

func (r *nodeRun) bootstrap(ctx context.Context) (step, error) {
	if r.rec.Step == 0 {
		return r.portsStep(ctx, drivers.PhaseProduction) // ports.go
	}
	if r.e.cfg.Bootstrap == nil {
		return advance("no boot actions to wait for"), nil
	}
	p, err := r.e.cfg.Bootstrap.BootstrapStatus(ctx, r.d, r.rec.Name, r.deployment())
	if err != nil {
		return step{}, err
	}
	if p.Status == drivers.StatusInProgress {
		if since := r.silentSince(p); time.Since(since) > r.e.bootstrapDeadline() {
			return failed("no report from the node since %s (deployment %s): check that it booted and can reach %s; `rebootstrap` re-issues its user data",
				since.Format(time.RFC3339), r.deployment(), orDefault(p.URL, "the introspection API")), nil
		}
	}
	return r.result(p.Result, false, func() step { return advance("%s", p.Message) })
}

// silentSince is when the node's silence began: the latest of the stage's
// start (the deploy finished), its last report in this deployment, its
// token's (re)issue and the engine's start (the introspection API may have
// been down with it).
func (r *nodeRun) silentSince(p BootstrapProgress) time.Time {
	t := r.rec.StageStart
	for _, u := range []time.Time{p.LastReport, p.Issued, r.e.started} {
		if u.After(t) {
			t = u
		}
	}
	return t
}

// releasing gives the machine back (erasing disks for destroy_nodes).
// A node leaving service (destroy, decommission) then has its switch
// ports put in quarantine (step 1, ports.go).
func (r *nodeRun) releasing(ctx context.Context) (step, error) {
	if r.rec.Step == 1 {
		return r.quarantinePorts(ctx)
	}
	done := advance
	if r.leavesService() {
		done = sub
	}
	if r.rec.MachineID == "" {
		return done("no machine recorded for the node: nothing to release"), nil
	}
	if r.rec.Intent == nil || r.rec.Intent.Op != "release" {
		if st, ok, err := r.checkBeforeRelease(ctx); ok { // preflight_nodes.go
			return st, err
		}
		if st, ok, err := r.provisioningBeforeErase(ctx); ok { // ports.go
			return st, err
		}
		r.rec.Intent = &record.Intent{Op: "release", Task: r.run.id, At: now()}
		if err := r.saveErr("intent: release machine %s", r.rec.MachineID); err != nil {
			return step{}, err
		}
	}
	res, err := r.releaseWith(ctx, r.erasePolicy(ctx))
	if err != nil {
		return step{}, err
	}
	if res.Status == drivers.StatusFailed {
		return r.releaseRefused(ctx, res)
	}
	if res.Status == drivers.StatusDone {
		if err := r.endDeployment(ctx); err != nil {
			return step{}, err
		}
	}
	return r.result(res, true, func() step {
		r.rec.Intent, r.rec.AllocatedBy, r.rec.Observed = nil, "", "Ready"
		return done("%s", res.Message)
	})
}

// freshDeployment reports whether the deploy about to be recorded opens
// a new deployment: the node's first, one after a release, or one of a
// machine that no longer runs the current deployment (released behind
// the engine's back, or adopted as Ready or Allocated), whose token and
// reports must not serve the new one. Only the last case asks the
// provisioner.
func (r *nodeRun) freshDeployment(ctx context.Context) (bool, error) {
	if r.rec.Deployment == 0 || r.rec.DeploymentEnded {
		return true, nil
	}
	ms, err := r.e.status(ctx, []drivers.NodeRef{r.ref()})
	if err != nil {
		return false, err
	}
	if len(ms) != 1 || ms[0].MachineID == "" {
		return true, nil
	}
	r.rec.Observed = ms[0].State
	return ms[0].State != "Deploying" && !slices.Contains(deployedStates, ms[0].State), nil
}

// deployment is the ID of the node's current deployment.
func (r *nodeRun) deployment() string { return strconv.Itoa(r.rec.Deployment) }

// endDeployment records that the machine was released: the node's token
// is revoked and the next deploy starts a new deployment.
func (r *nodeRun) endDeployment(ctx context.Context) error {
	if r.e.cfg.Bootstrap != nil {
		if err := r.e.cfg.Bootstrap.EndDeployment(ctx, r.rec.Name); err != nil {
			return err
		}
	}
	r.rec.DeploymentEnded = true
	return nil
}

func (r *nodeRun) power(ctx context.Context) (step, error) {
	var res drivers.Result
	_, err := r.withOOB(ctx, func(ctx context.Context, oob drivers.OOB, b drivers.BMC) (err error) {
		if r.rec.Step == 1 { // confirming
			res, err = r.powerReached(ctx, oob, b)
			return err
		}
		switch r.rec.Action {
		case record.ActionPowerOn:
			res, err = oob.PowerOn(ctx, b)
		case record.ActionPowerOff:
			res, err = oob.PowerOff(ctx, b)
		default:
			res, err = oob.PowerCycle(ctx, b)
		}
		return err
	})
	if err != nil {
		return step{}, err
	}
	if res.Status == drivers.StatusInProgress {
		r.rec.Step = 1
	}
	return r.result(res, false, func() step { return advance("%s", orDefault(res.Message, fmt.Sprint(r.rec.Action))) })
}

// powerReached says whether the machine's power is what the power task
// asked for: Done when it is, InProgress when not yet.
func (r *nodeRun) powerReached(ctx context.Context, oob drivers.OOB, b drivers.BMC) (drivers.Result, error) {
	st, err := oob.PowerStatus(ctx, b)
	if err != nil {
		return drivers.Result{}, err
	}
	want := drivers.PowerOn
	if r.rec.Action == record.ActionPowerOff {
		want = drivers.PowerOff
	}
	if st == want {
		return drivers.Done("power is %s", st), nil
	}
	return drivers.InProgress(5e9, "power is %s, waiting for %s", st, want), nil
}

// untilStop is ctx (its values) cancelled only when the engine stops, not
// when ctx is: for a call whose effect must be recorded once it was made.
func (e *Engine) untilStop(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(context.WithoutCancel(ctx))
	unhook := context.AfterFunc(e.ctx, cancel)
	return c, func() { unhook(); cancel() }
}
