package orchestrator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// FirmwareImages verifies a baseline's firmware image (its SHA-256,
// before any BMC sees it) and gives the URL the BMCs fetch it from
// (firmwarestore.Store implements it). Errors name the profile, the
// component and the image.
type FirmwareImages interface {
	ImageURL(ctx context.Context, img design.FirmwareImage, profile, component string) (string, error)
}

// wantsBaseline reports whether hw declares a baseline: firmware, RAID
// volumes or BIOS settings.
func wantsBaseline(hw *design.HardwareProfileSpec) bool {
	return hw != nil && (len(hw.Firmware) > 0 || hw.RAID != nil && len(hw.RAID.Volumes) > 0 || hw.BIOS != nil && len(hw.BIOS.Attributes) > 0)
}

// seen is what the baseline stage read from the BMC.
type seen struct {
	inventory []drivers.FirmwareComponent
	bios      map[string]string
	drives    []drivers.StorageDrive
	volumes   []drivers.Volume
}

// readBaseline reads what the profile's baseline needs from the node's
// BMC: the firmware inventory, the BIOS settings in effect, the storage.
// A driver without the interface a part needs is a Permanent error
// naming the profile.
func (r *nodeRun) readBaseline(ctx context.Context) (seen, oobTarget, error) {
	hw := r.n.Spec.Hardware
	var s seen
	t, err := r.withOOB(ctx, func(ctx context.Context, drv drivers.OOB, b drivers.BMC) (err error) {
		if len(hw.Firmware) > 0 {
			fu, ok := drv.(drivers.OOBFirmwareUpdate)
			if !ok {
				return r.cannot("firmware", "update firmware")
			}
			if s.inventory, err = fu.FirmwareInventory(ctx, b); err != nil {
				return err
			}
		}
		if hw.BIOS != nil && len(hw.BIOS.Attributes) > 0 {
			bd, ok := drv.(drivers.OOBBIOS)
			if !ok {
				return r.cannot("bios.attributes", "apply BIOS settings")
			}
			if s.bios, err = bd.BIOSAttributes(ctx, b); err != nil {
				return err
			}
		}
		if hw.RAID != nil && len(hw.RAID.Volumes) > 0 {
			rd, ok := drv.(drivers.OOBRAID)
			if !ok {
				return r.cannot("raid", "build RAID volumes")
			}
			if s.drives, s.volumes, err = rd.Storage(ctx, b); err != nil {
				return err
			}
		}
		return nil
	})
	return s, t, err
}

func (r *nodeRun) cannot(part, what string) error {
	return drivers.Errorf(drivers.Permanent, "hardware profile %s declares %s, and its OOB driver cannot %s: use a driver that can (redfish), or remove %s", r.n.Spec.HardwareProfile, part, what, part)
}

// planBaseline lists every difference between what the BMC reported and
// the profile's baseline, and the firmware updates, BIOS settings and
// volumes that remove them. Each firmware image is verified (checksum)
// here, before any BMC is asked anything.
func (r *nodeRun) planBaseline(ctx context.Context, s seen) (*record.Baseline, error) {
	hw := r.n.Spec.Hardware
	b := &record.Baseline{Task: r.run.id, Planned: now()}
	for _, fb := range hw.Firmware {
		if err := r.planFirmware(ctx, b, fb, s.inventory); err != nil {
			return nil, err
		}
	}
	if hw.BIOS != nil {
		if err := r.biosKnown(s.bios); err != nil {
			return nil, err
		}
		for _, k := range slices.Sorted(maps.Keys(hw.BIOS.Attributes)) {
			want := hw.BIOS.Attributes[k]
			if have, ok := s.bios[k]; !ok || have != want {
				b.Plan = append(b.Plan, record.BaselineChange{Kind: "bios", Item: k, Have: orDefault(have, "(unset)"), Want: want})
				if b.BIOS == nil {
					b.BIOS = map[string]string{}
				}
				b.BIOS[k] = want
			}
		}
	}
	if hw.RAID != nil {
		if err := r.planVolumes(b, s); err != nil {
			return nil, err
		}
	}
	for _, u := range b.Updates {
		b.Reboot = b.Reboot || u.Component != drivers.ComponentBMC // a BMC resets itself
	}
	b.Reboot = b.Reboot || len(b.BIOS) > 0 || len(b.Volumes) > 0
	return b, nil
}

// planFirmware plans one component's update: the inventory items of its
// kind (of its devices, when it names some) whose version differs.
func (r *nodeRun) planFirmware(ctx context.Context, b *record.Baseline, fb design.FirmwareBaseline, inv []drivers.FirmwareComponent) error {
	devices := map[string]bool{}
	for _, alias := range fb.Devices {
		if a, ok := r.n.Spec.Hardware.DeviceAliases[alias]; ok {
			devices[strings.ToLower(a.Address)] = true
		}
	}
	var items []drivers.FirmwareComponent
	for _, c := range inv {
		if c.Kind == fb.Component && (len(devices) == 0 || devices[strings.ToLower(c.Device)]) {
			items = append(items, c)
		}
	}
	if len(items) == 0 {
		return drivers.Errorf(drivers.Permanent, "hardware profile %s wants %s firmware %s%s, and the BMC's firmware inventory has no such item: check the profile's devices against the machine",
			r.n.Spec.HardwareProfile, fb.Component, fb.Version, devicesNote(fb.Devices))
	}
	var targets, have []string
	for _, c := range items {
		if c.Version == fb.Version {
			continue
		}
		if !c.Updateable {
			return drivers.Errorf(drivers.Permanent, "hardware profile %s wants %s firmware %s, and the BMC says its item %s (version %s) cannot be updated", r.n.Spec.HardwareProfile, fb.Component, fb.Version, c.ID, c.Version)
		}
		targets, have = append(targets, c.ID), append(have, c.Version)
	}
	if len(targets) == 0 {
		return nil
	}
	if r.e.cfg.Firmware == nil {
		return drivers.Errorf(drivers.Permanent, "hardware profile %s has a firmware baseline and this engine has no firmware store: start serve with --firmware-dir (and firmwareListen/firmwareURL)", r.n.Spec.HardwareProfile)
	}
	if _, err := r.e.cfg.Firmware.ImageURL(ctx, fb.Image, r.n.Spec.HardwareProfile, fb.Component); err != nil {
		return drivers.Errorf(drivers.Permanent, "%v", err)
	}
	b.Plan = append(b.Plan, record.BaselineChange{Kind: "firmware", Item: fb.Component, Target: strings.Join(targets, ","),
		Have: strings.Join(uniq(have), ","), Want: fb.Version})
	b.Updates = append(b.Updates, record.FirmwareUpdate{Component: fb.Component, Version: fb.Version, Targets: targets, SHA256: strings.ToLower(fb.Image.SHA256)})
	return nil
}

func devicesNote(devs []string) string {
	if len(devs) == 0 {
		return ""
	}
	return " for " + strings.Join(devs, ", ")
}

func uniq(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return slices.Compact(out)
}

// wantVolume is a profile's volume in the driver's terms.
func (r *nodeRun) wantVolume(v design.RAIDVolume) (drivers.Volume, error) {
	out := drivers.Volume{Name: v.Name, Level: v.Level, Boot: v.Boot}
	for _, alias := range v.Drives {
		a, ok := r.n.Spec.Hardware.DeviceAliases[alias]
		if !ok {
			return out, drivers.Errorf(drivers.Permanent, "hardware profile %s: RAID volume %s names drive %s, which is no device alias", r.n.Spec.HardwareProfile, v.Name, alias)
		}
		out.Drives = append(out.Drives, a.Address)
	}
	if v.Size != "" {
		n, err := design.ParseSize(v.Size)
		if err != nil || n.Bytes <= 0 || n.Percent > 0 || n.AtLeast {
			return out, drivers.Errorf(drivers.Permanent, "hardware profile %s: RAID volume %s: size %q is not a fixed size (%v)", r.n.Spec.HardwareProfile, v.Name, v.Size, err)
		}
		out.SizeBytes = n.Bytes
	}
	return out, nil
}

// planVolumes plans the volumes the controller does not have. A found
// volume of the same name, or of the same level and drives, is the
// wanted one; a wanted drive that is a member of another volume is an
// error (the engine never deletes a volume: it may hold data).
func (r *nodeRun) planVolumes(b *record.Baseline, s seen) error {
	for _, v := range r.n.Spec.Hardware.RAID.Volumes {
		want, err := r.wantVolume(v)
		if err != nil {
			return err
		}
		found, conflict := matchVolume(want, s.volumes)
		if found {
			continue
		}
		if conflict != "" {
			return drivers.Errorf(drivers.Permanent, "hardware profile %s wants RAID volume %s (%s of bays %s), and %s: delete that volume on the controller (its data is lost) or change the profile",
				r.n.Spec.HardwareProfile, v.Name, v.Level, strings.Join(want.Drives, ","), conflict)
		}
		if err := r.volumeFits(want, s.drives); err != nil {
			return err
		}
		b.Plan = append(b.Plan, record.BaselineChange{Kind: "raid", Item: v.Name, Target: "bays " + strings.Join(want.Drives, ","), Have: "absent", Want: v.Level})
		b.Volumes = append(b.Volumes, record.VolumeBuild{Name: v.Name})
	}
	return nil
}

// matchVolume finds want among the controller's volumes; conflict names
// a volume holding one of its drives otherwise.
func matchVolume(want drivers.Volume, have []drivers.Volume) (found bool, conflict string) {
	for _, h := range have {
		if h.Name == want.Name || h.Level == want.Level && sameDrives(h.Drives, want.Drives) {
			return true, ""
		}
		for _, d := range want.Drives {
			if slices.ContainsFunc(h.Drives, func(x string) bool { return driveIs(x, d) }) {
				return false, fmt.Sprintf("drive %s is a member of volume %s (%s)", d, orDefault(h.Name, h.ID), h.Level)
			}
		}
	}
	return false, ""
}

// driveIs compares a found member (a bay, or an Id such as Disk.Bay.1)
// with a wanted bay.
func driveIs(found, bay string) bool {
	return found == bay || strings.HasSuffix(found, "."+bay) || strings.HasSuffix(found, ":"+bay)
}

func sameDrives(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, d := range b {
		if !slices.ContainsFunc(a, func(x string) bool { return driveIs(x, d) }) {
			return false
		}
	}
	return true
}

// biosKnown refuses, at the plan, a BIOS attribute the BMC does not have
// (it reports every attribute of its BIOS with its value): its refusal
// would come after the firmware updates and the RAID build, a half
// applied baseline.
func (r *nodeRun) biosKnown(have map[string]string) error {
	if len(have) == 0 {
		return nil // no attribute listed is no answer: the BMC decides
	}
	var unknown []string
	for k := range r.n.Spec.Hardware.BIOS.Attributes {
		if _, ok := have[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	names := slices.Sorted(maps.Keys(have))
	if len(names) > 40 {
		names = append(names[:40], "…")
	}
	return drivers.Errorf(drivers.Permanent, "hardware profile %s sets BIOS attribute(s) %s, which the BMC does not have (its attributes: %s): nothing was changed; fix bios.attributes (names as the BMC's BIOS spells them), then `orchestrator retry %s`",
		r.n.Spec.HardwareProfile, strings.Join(unknown, ", "), strings.Join(names, ", "), r.run.id)
}

// volumeFits refuses, at the plan, a volume the controller cannot build
// from the drives it reported: a member bay without a drive, a size
// larger than the level gives over its members. Anything the controller
// alone knows (a policy, a drive's state) is its to refuse later.
func (r *nodeRun) volumeFits(want drivers.Volume, drives []drivers.StorageDrive) error {
	if len(drives) == 0 {
		// No drive listed is no answer (a driver may skip a controller
		// whose drives it could not read): the controller decides.
		return nil
	}
	var smallest int64
	var bays []string
	for _, d := range drives {
		bays = append(bays, orDefault(d.Bay, d.ID))
	}
	for _, bay := range want.Drives {
		i := slices.IndexFunc(drives, func(d drivers.StorageDrive) bool { return d.Bay == bay || driveIs(d.ID, bay) })
		if i < 0 {
			return drivers.Errorf(drivers.Permanent, "hardware profile %s wants RAID volume %s (%s of bays %s), and the controller has no drive in bay %s (its bays: %s): nothing was changed; fix the profile's deviceAliases or raid, then `orchestrator retry %s`",
				r.n.Spec.HardwareProfile, want.Name, want.Level, strings.Join(want.Drives, ","), bay, orDefault(strings.Join(bays, ", "), "none"), r.run.id)
		}
		if c := drives[i].CapacityBytes; smallest == 0 || c < smallest {
			smallest = c
		}
	}
	if usable := usableBytes(want.Level, len(want.Drives), smallest); want.SizeBytes > 0 && usable > 0 && want.SizeBytes > usable {
		return drivers.Errorf(drivers.Permanent, "hardware profile %s wants RAID volume %s (%s of bays %s) of %d bytes, larger than the %d bytes %s gives over those drives: nothing was changed; fix its size, then `orchestrator retry %s`",
			r.n.Spec.HardwareProfile, want.Name, want.Level, strings.Join(want.Drives, ","), want.SizeBytes, usable, want.Level, r.run.id)
	}
	return nil
}

// usableBytes is what level gives over n drives of at least smallest
// bytes each (0 when unknown).
func usableBytes(level string, n int, smallest int64) int64 {
	switch level {
	case drivers.RAID0:
		return int64(n) * smallest
	case drivers.RAID1:
		return smallest
	case drivers.RAID5:
		return int64(n-1) * smallest
	case drivers.RAID6:
		return int64(n-2) * smallest
	case drivers.RAID10:
		return int64(n/2) * smallest
	}
	return 0
}

// keepInstalled marks Done the updates of plan b that the node's previous
// plan installed (Done, same component, version, image and items) with no
// reset asked since: such an image waits for the next reset and the BMC's
// inventory still reports the old version, so the new plan lists it again;
// installing it twice (a retry after a later step failed) is a needless
// flash. The reset applies it; should the BMC have dropped it, the verify
// reports the old version and the next plan, after that reset, installs
// it again. A dry run's plan has no update Done but those it kept this
// way, so it passes them on (a dry run between a failed run and its
// retry does not make the node forget them).
func keepInstalled(prev, b *record.Baseline) {
	if prev == nil || prev.ResetDone {
		return
	}
	for i := range b.Updates {
		u := &b.Updates[i]
		for _, p := range prev.Updates {
			if p.Done && p.Component == u.Component && p.Version == u.Version && p.SHA256 == u.SHA256 && slices.Equal(p.Targets, u.Targets) {
				u.Done, u.Started, u.Handle, u.Seen = true, p.Started, p.Handle, p.Seen
				u.Progress = p.Progress
				if !strings.HasPrefix(p.Progress, installedBy) {
					u.Progress = installedBy + prev.Task + ", waits for the reset"
				}
			}
		}
	}
}

// installedBy starts the progress of an update kept by keepInstalled.
const installedBy = "installed by task "
