package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Virtual-media boot: a node whose hardware profile has virtualMedia
// boots the provisioner's ISO as a virtual CD instead of PXE. Where
// oob_prepare would set a one-time PXE boot, it inserts the ISO through
// the OOB driver (drivers.OOBVirtualMedia) and, for a machine the
// provisioner does not know yet, sets a one-time boot from the CD; the
// power step then boots it and the provisioner enlists it. The ISO stays
// in while the provisioner boots the machine (commissioning, deployment:
// a machine without PXE boots the ISO for them), and the first call of
// the stage after the last of those (as-built of a prepare, bootstrap of
// a deploy) ejects it. The provisioner's boots of a deployed machine
// (rescue mode, hardware tests) get the ISO too (lentStages). A node
// whose task ends otherwise (failed, cancelled, frozen) has it ejected
// as it finishes. No ISO stays attached.
//
// Which nodes may have an ISO attached is kept in the store (collVMedia),
// written before the insert and deleted after the eject, so that a
// restarted engine ejects what it inserted before a crash. Insert and
// eject are idempotent (the driver reads the BMC's medium first).

// collVMedia: node → the ISO the engine may have attached to its
// machine's virtual CD.
const collVMedia = "vmedia"

// MediaAttachment is what the engine attached to a node's virtual CD.
type MediaAttachment struct {
	ISO  string    `json:"iso"`
	Task string    `json:"task,omitempty"`
	At   time.Time `json:"at"`
}

func init() {
	kinds[collVMedia] = storedrec.NewKind("virtual media record", reflect.TypeFor[MediaAttachment]())
}

// maxISOURL bounds an ISO URL the engine sends to a BMC (the design's
// validation bounds it too).
const maxISOURL = 2048

// bootMedia is the node's virtual-media boot, nil when it PXE-boots.
func (r *nodeRun) bootMedia() *design.VirtualMediaBoot {
	if hw := r.n.Spec.Hardware; hw != nil && hw.VirtualMedia != nil && hw.VirtualMedia.ISO != "" {
		return hw.VirtualMedia
	}
	return nil
}

// bootOnce is the one-time boot device of the node's first boot: the
// virtual CD when its profile boots from virtual media, else PXE.
func (r *nodeRun) bootOnce() drivers.BootDevice {
	efi := r.n.Spec.Hardware == nil || r.n.Spec.Hardware.BootMode != "bios"
	if r.bootMedia() != nil {
		return drivers.BootDevice{Device: drivers.BootCD, EFI: efi}
	}
	return drivers.BootDevice{Device: "pxe", EFI: efi}
}

// cdNext is oob_prepare's step 1 for a node that boots from virtual
// media (pxeNext's BIOS settings staged): the ISO inserted (whether or
// not the provisioner knows the machine: its commissioning and
// deployment boot the ISO too, PXE being absent), then, for a machine
// the provisioner does not know yet, a one-time boot from the CD.
func (r *nodeRun) cdNext(ctx context.Context, bios string) (step, error) {
	vm := r.bootMedia()
	if len(vm.ISO) > maxISOURL {
		return step{}, drivers.Errorf(drivers.Permanent, "hardware profile %s: virtualMedia.iso is %d bytes, at most %d", r.n.Spec.HardwareProfile, len(vm.ISO), maxISOURL)
	}
	if err := r.mediaCapable(ctx); err != nil {
		return step{}, err
	}
	if st, done, err := r.insertISO(ctx, vm.ISO, bios); done || err != nil {
		return st, err
	}
	known, err := r.knownMachine(ctx)
	if err != nil {
		return step{}, err
	}
	if known != "" {
		return advance("%sISO inserted; machine %s is known to the provisioner (%s): no boot needed now, its next boots find the ISO", bios, r.rec.MachineID, known), nil
	}
	return r.setBootOnce(ctx, bios)
}

// insertISO inserts the ISO in the node's virtual CD, recording first
// that it may be attached; done with the step when the BMC has not
// inserted it (yet).
func (r *nodeRun) insertISO(ctx context.Context, iso, bios string) (step, bool, error) {
	if err := r.e.noteMedia(ctx, r.rec.Name, MediaAttachment{ISO: iso, Task: r.run.id, At: now()}); err != nil {
		return step{}, true, err
	}
	var res drivers.Result
	t, err := r.withOOB(ctx, func(ctx context.Context, drv drivers.OOB, b drivers.BMC) (err error) {
		md, ok := drv.(drivers.OOBVirtualMedia)
		if !ok { // the fallback method: the first did not answer
			return drivers.Errorf(drivers.Transient, "BMC %s:%d: the OOB method in use cannot attach virtual media (its first method did not answer); retrying", b.Address, b.Port)
		}
		res, err = md.InsertMedia(ctx, b, iso)
		return err
	})
	switch {
	case err != nil:
		return step{}, true, fmt.Errorf("inserting the ISO of hardware profile %s: %w", r.n.Spec.HardwareProfile, err)
	case res.Status == drivers.StatusFailed:
		return failed("%sBMC %s:%d refused to insert the ISO %s of hardware profile %s: %s (check that virtualMedia.iso is reachable from the BMC, then retry)",
			bios, t.bmc.Address, t.bmc.Port, iso, r.n.Spec.HardwareProfile, res.Message), true, nil
	case res.Status == drivers.StatusInProgress:
		return waitFor(res, false), true, nil
	}
	r.save(r.event("info", "vmedia", "ISO %s inserted in the virtual CD of BMC %s:%d (%s)", iso, t.bmc.Address, t.bmc.Port, orDefault(res.Message, "inserted")))
	return step{}, false, nil
}

// knownMachine is the provisioner's state of the node's machine when it
// knows it (past New), "" when it does not.
func (r *nodeRun) knownMachine(ctx context.Context) (string, error) {
	if r.rec.MachineID == "" {
		return "", nil
	}
	ms, err := r.e.status(ctx, []drivers.NodeRef{r.ref()})
	if err != nil {
		return "", err
	}
	if len(ms) == 1 && ms[0].MachineID != "" && ms[0].State != "New" {
		r.rec.Observed = ms[0].State
		return ms[0].State, nil
	}
	return "", nil
}

// mediaCapable checks that the node's first OOB method can attach
// virtual media: a Permanent error naming the profile and the fix when
// it cannot.
func (r *nodeRun) mediaCapable(ctx context.Context) error {
	ts, err := r.e.oobTargets(ctx, r.d, r.n)
	if err != nil {
		return err
	}
	if _, ok := ts[0].drv.(drivers.OOBVirtualMedia); !ok {
		return drivers.Errorf(drivers.Permanent, "hardware profile %s boots from virtual media (virtualMedia), and its OOB driver %s cannot attach an ISO: set oob.type redfish in the profile, or remove virtualMedia to PXE-boot; then retry",
			r.n.Spec.HardwareProfile, ts[0].typ)
	}
	return nil
}

// setBootOnce sets the one-time boot from the virtual CD (twice when
// the BMC does not keep it, then right before the power change, as for
// PXE).
func (r *nodeRun) setBootOnce(ctx context.Context, bios string) (step, error) {
	var res drivers.Result
	_, err := r.withOOB(ctx, func(ctx context.Context, oob drivers.OOB, b drivers.BMC) (err error) {
		res, err = oob.SetBootDevice(ctx, b, r.bootOnce())
		if errors.Is(err, drivers.ErrBootNotKept) {
			res, err = oob.SetBootDevice(ctx, b, r.bootOnce())
		}
		return err
	})
	if errors.Is(err, drivers.ErrBootNotKept) {
		r.rec.PXEBeforePower = true
		r.save(r.event("warn", "boot-flags", "%v; set twice, it is not kept: a one-time boot from the CD is set right before each power change instead", err))
		return sub("%sthe BMC does not keep the boot override: the CD is set once more right before the power change", bios), nil
	}
	if err != nil {
		return step{}, err
	}
	return r.result(res, false, func() step { return sub("%sISO inserted; next boot (once) from the virtual CD", bios) })
}

// lentStages are the stages in which the provisioner boots a deployed
// machine into its own environment (rescue mode, hardware tests) and
// brings it back (rescue_exit): a machine without PXE boots the ISO for
// them, and it stays in until the task ends (a rescue_enter that
// succeeded leaves it in for the rescue environment, until rescue_exit).
var lentStages = []record.Stage{record.StageRescue, record.StageRescueExit, record.StageTesting}

// mediaNeeded reports whether the node's stage still needs the ISO:
// from oob_prepare to the last stage of its workflow that the
// provisioner boots the machine in (commission, deploy), as the machine
// has no PXE; and the lentStages.
func (r *nodeRun) mediaNeeded() bool {
	if slices.Contains(lentStages, r.rec.Stage) {
		return true
	}
	first, last := slices.Index(r.seq, record.StageOOBPrepare), -1
	for i, s := range r.seq {
		if s == record.StageCommission || s == record.StageDeploy {
			last = i
		}
	}
	cur := slices.Index(r.seq, r.rec.Stage)
	return first >= 0 && cur >= first && cur <= last
}

// mediaForStage puts the ISO in or out as the node's stage needs
// before the stage runs: in for a rescue or a hardware test (insertLent),
// out once the node is past the provisioner's boots (mediaNeeded), or one
// left by an earlier task before oob_prepare inserts it again. ok is false
// when there is nothing to do now, and the stage runs.
func (r *nodeRun) mediaForStage(ctx context.Context) (step, bool, error) {
	vm := r.bootMedia()
	if vm == nil {
		return step{}, false, nil
	}
	att, ok, err := r.e.mediaOf(ctx, r.rec.Name)
	switch {
	case err != nil:
		return step{}, true, err
	case !ok && slices.Contains(lentStages, r.rec.Stage) && r.rec.Stage != record.StageRescueExit:
		if err := r.mediaCapable(ctx); err != nil {
			return step{}, true, err
		}
		if st, done, err := r.insertISO(ctx, vm.ISO, ""); done || err != nil {
			return st, true, err
		}
		return step{kind: stepAgain}, true, nil
	case !ok || r.mediaNeeded():
		return step{}, false, nil
	}
	b, err := r.eject(ctx)
	if err != nil {
		return step{}, true, fmt.Errorf("ejecting the ISO %s of hardware profile %s: %w", att.ISO, r.n.Spec.HardwareProfile, err)
	}
	if !r.save(r.event("info", "vmedia", "ISO %s ejected from BMC %s:%d: the provisioner is done booting machine %s from it (%s)",
		att.ISO, b.Address, b.Port, r.rec.MachineID, orDefault(r.rec.Observed, "past its boots"))) {
		return step{}, true, r.e.ctx.Err()
	}
	return step{kind: stepAgain}, true, nil
}

// eject ejects the node's virtual CD and forgets the attachment; it
// returns the BMC it asked.
func (r *nodeRun) eject(ctx context.Context) (drivers.BMC, error) {
	var res drivers.Result
	t, err := r.withOOB(ctx, func(ctx context.Context, drv drivers.OOB, b drivers.BMC) (err error) {
		md, ok := drv.(drivers.OOBVirtualMedia)
		if !ok {
			return drivers.Errorf(drivers.Transient, "BMC %s:%d: the OOB method in use cannot eject virtual media (its first method did not answer)", b.Address, b.Port)
		}
		res, err = md.EjectMedia(ctx, b)
		return err
	})
	switch {
	case err != nil:
		return t.bmc, err
	case res.Status == drivers.StatusFailed:
		return t.bmc, drivers.Errorf(drivers.Transient, "BMC %s:%d refused the eject: %s", t.bmc.Address, t.bmc.Port, res.Message)
	case res.Status == drivers.StatusInProgress:
		return t.bmc, drivers.Errorf(drivers.Transient, "BMC %s:%d is ejecting: %s", t.bmc.Address, t.bmc.Port, res.Message)
	}
	return t.bmc, r.e.forgetMedia(ctx, r.rec.Name)
}

// ejectAtEnd ejects the ISO of a node whose task ends with outcome o
// (failed, cancelled, frozen, or succeeded: a test, a rescue_exit) before
// the outcome is recorded, but for a node left in rescue mode; what it could not do is said in the returned
// note, appended to the node's reason.
func (r *nodeRun) ejectAtEnd(o record.Outcome) string {
	if r.e.ctx.Err() != nil || (o == record.OutcomeSucceeded && r.rec.Stage == record.StageRescueMode) {
		return "" // the rescue environment runs from the ISO: rescue_exit ejects it
	}
	att, ok, err := r.e.mediaOf(r.e.ctx, r.rec.Name)
	if err != nil || !ok {
		return ""
	}
	ctx, cancel := context.WithTimeout(r.e.ctx, r.e.cfg.MaxWait+oobProbeTimeout)
	defer cancel()
	b, err := r.eject(ctx)
	if err != nil {
		r.log.Warn().Err(err).Str("iso", att.ISO).Msg("ejecting the virtual media at the end of the task failed")
		return fmt.Sprintf("; the ISO %s may still be attached: ejecting it failed (%v): the next task of the node ejects it, or eject it at the BMC", att.ISO, err)
	}
	r.save(r.event("info", "vmedia", "ISO %s ejected from BMC %s:%d as the task ends", att.ISO, b.Address, b.Port))
	return ""
}

// noteMedia records that the engine may attach iso to node's machine.
func (e *Engine) noteMedia(ctx context.Context, node string, a MediaAttachment) error {
	if cur, ok, err := e.mediaOf(ctx, node); err == nil && ok && cur.ISO == a.ISO {
		return nil
	}
	var b batch
	b.put(collVMedia, node, a)
	return e.rec.write(ctx, &b)
}

func (e *Engine) forgetMedia(ctx context.Context, node string) error {
	var b batch
	b.del(collVMedia, node)
	return e.rec.write(ctx, &b)
}

// mediaOf is what the engine attached to node's virtual CD; false when
// nothing.
func (e *Engine) mediaOf(ctx context.Context, node string) (MediaAttachment, bool, error) {
	var a MediaAttachment
	err := e.rec.getJSON(ctx, collVMedia, node, &a)
	if errors.Is(err, ErrNotFound) {
		return a, false, nil
	}
	return a, err == nil, err
}

// bootWord names a boot device in events.
func bootWord(d drivers.BootDevice) string {
	if d.Device == drivers.BootCD {
		return "the virtual CD"
	}
	return "PXE"
}
