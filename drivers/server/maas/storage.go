package maas

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
)

// MAAS aligns partitions and logical volumes down to 4 MiB, and a GPT
// partition table takes 5 MiB (4 at the start, 1 at the end).
const (
	mib            = 1 << 20
	alignment      = 4 * mib
	gptOverhead    = 5 * mib
	sizeTolerance  = 2 * alignment // what alignment (and MAAS's last-block rule) may take off a size
	storageLayoutB = "blank"
)

// mVolumeGroup is a MAAS volume group as GET nodes/{id}/volume-groups/ answers.
type mVolumeGroup struct {
	ID       int            `json:"id"`
	Name     string         `json:"name"`
	Size     int64          `json:"size"`
	Devices  []mVGMember    `json:"devices"`
	LVs      []mBlockDevice `json:"logical_volumes"`
	Avail    int64          `json:"available_size"`
	SystemID string         `json:"system_id"`
}

type mVGMember struct {
	ID   int    `json:"id"`
	Type string `json:"type"` // partition | physical
}

// sized is a partition or logical volume with its parsed size.
type sized struct {
	name string
	size design.Size
	boot bool
	fs   *drivers.Filesystem
	vg   string
}

// ordered puts the EFI system partition first, then the other bootable
// partitions, and "the rest" (>N) last (as MAAS's layouts do).
func ordered(items []sized) []sized {
	out := slices.Clone(items)
	slices.SortStableFunc(out, func(a, b sized) int {
		rank := func(s sized) int {
			switch {
			case s.boot && s.fs != nil && s.fs.Mountpoint == "/boot/efi":
				return -1
			case s.boot:
				return 0
			case s.size.AtLeast:
				return 2
			}
			return 1
		}
		return rank(a) - rank(b)
	})
	return out
}

// want is the size to ask for out of base (the device or VG size); 0: the rest.
func (s sized) want(base int64) int64 {
	switch {
	case s.size.AtLeast:
		return 0
	case s.size.Percent > 0:
		return int64(float64(base)*s.size.Percent/100) / alignment * alignment
	}
	return s.size.Bytes / alignment * alignment
}

// fits tells whether an actual size is what s asks for out of base.
func (s sized) fits(actual, base int64) bool {
	if s.size.AtLeast {
		return actual >= s.size.Bytes-sizeTolerance
	}
	w := s.want(base)
	return actual <= w && actual >= w-sizeTolerance || (s.size.Percent > 0 && actual >= w-sizeTolerance && actual <= w+sizeTolerance)
}

func fsMatches(want *drivers.Filesystem, have *mFS) bool {
	if want == nil {
		return have == nil
	}
	if have == nil || !strings.EqualFold(have.FSType, want.FSType) {
		return false
	}
	if str(have.MountPoint) != want.Mountpoint {
		return false
	}
	if want.Options != "" && str(have.MountOpts) != want.Options {
		return false
	}
	return want.Label == "" || str(have.Label) == want.Label
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// storagePlan is the design's storage tied to the machine's disks: the
// partitions of each disk in the order they are made, and the logical
// volumes of each volume group.
type storagePlan struct {
	disks []diskPlan
	vgs   map[string][]sized
}

// diskPlan is one design storage device and the disk it is on.
type diskPlan struct {
	dev   drivers.StorageDevice
	bd    *mBlockDevice
	parts []sized
}

// ApplyStorage makes the machine's storage layout what the design says. It
// compares the current layout with the design first; when they differ it
// starts from MAAS's blank layout and builds the partitions, filesystems,
// volume groups and logical volumes.
func (d *Driver) ApplyStorage(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	m, wait, err := d.configurable(ctx, n, "storage", partStorage)
	if err != nil || wait != nil {
		return cfgResult(wait), err
	}
	id := m.SystemID
	plan, diff, err := d.storageDiff(ctx, m, n)
	if err != nil {
		return drivers.Result{}, err
	}
	key, cloneable := cloneKey(m, n, &plan)
	if diff == "" {
		if cloneable {
			d.storageSources.put(key, id)
		}
		return drivers.Done("storage of machine %s already configured", id), nil
	}
	if cloneable {
		end := d.awaitStorageBuild(ctx, key)
		defer end()
		done, cloned, err := d.storageByClone(ctx, m, &plan, key)
		if err != nil || cloned {
			return done.result("storage", id), err
		}
	}
	if params, rest, ok := plan.lvmLayout(m); ok {
		done, applied, err := d.applyLVMLayout(ctx, id, &plan, params, rest)
		if err == nil && applied && cloneable {
			d.storageSources.put(key, id)
		}
		if err != nil || applied {
			return done.result("storage", id), err
		}
		// MAAS built something else than the design: build it part by part
	}
	done, err := d.applyCustom(ctx, id, n, &plan, diff)
	return done.result("storage", id), err
}

// storageDiff ties the design's storage to the machine's disks and says
// how the machine's layout differs from it ("" when it does not): the
// decision ApplyStorage acts on and PlanNodes reports. Volume groups are
// read only when the machine has a physical volume.
func (d *Driver) storageDiff(ctx context.Context, m *mMachine, n drivers.Node) (storagePlan, string, error) {
	id := m.SystemID
	plan, err := d.storagePlan(ctx, m, n.Storage)
	if errors.Is(err, errNoDisk) { // the machine's disks may have new IDs since the devices were read
		d.c.cache.forgetDevices(id)
		plan, err = d.storagePlan(ctx, m, n.Storage)
	}
	var bad planError
	if errors.As(err, &bad) {
		return plan, "", drivers.Errorf(drivers.Permanent, "maas: machine %s: %v", id, bad.error)
	}
	if err != nil {
		return plan, "", err
	}
	var vgs []mVolumeGroup
	if hasPV(m) { // else no volume group can exist
		if err := d.c.call(ctx, http.MethodGet, "nodes/"+id+"/volume-groups/", "", nil, &vgs); err != nil {
			return plan, "", err
		}
	}
	return plan, plan.compare(m, vgs), nil
}

// applyCustom starts from MAAS's blank layout and builds the design's
// partitions, filesystems, volume groups and logical volumes one by one.
func (d *Driver) applyCustom(ctx context.Context, id string, n drivers.Node, plan *storagePlan, diff string) (cfgChanges, error) {
	var done cfgChanges
	if err := d.c.call(ctx, http.MethodPost, "machines/"+id+"/", "set_storage_layout", url.Values{"storage_layout": {storageLayoutB}}, nil); err != nil {
		return done, err
	}
	done.add("blank layout (%s)", diff)
	members := vgMembers{}
	for _, dk := range plan.disks {
		if err := d.partitionDisk(ctx, id, dk, members, &done); err != nil {
			return done, err
		}
	}
	for _, vg := range n.Storage.VolumeGroups {
		if err := d.createVG(ctx, id, vg.Name, members[vg.Name], plan.vgs[vg.Name], &done); err != nil {
			return done, err
		}
	}
	return done, nil
}

// vgMembers are the create parameters of each volume group as its
// members are made: block_devices and partitions by MAAS ID.
type vgMembers map[string]url.Values

func (v vgMembers) add(vg, kind string, id int) {
	if v[vg] == nil {
		v[vg] = url.Values{}
	}
	v[vg].Add(kind, strconv.Itoa(id))
}

// partitionDisk makes the partitions of one disk, formats and mounts
// them, and notes the physical volumes in members. A disk without
// partitions that is a volume group's member is one whole.
func (d *Driver) partitionDisk(ctx context.Context, id string, dk diskPlan, members vgMembers, done *cfgChanges) error {
	if len(dk.parts) == 0 {
		if dk.dev.VolumeGroup != "" {
			members.add(dk.dev.VolumeGroup, "block_devices", dk.bd.ID)
		}
		return nil
	}
	disk := "nodes/" + id + "/blockdevices/" + strconv.Itoa(dk.bd.ID) + "/"
	free := (dk.bd.Size - gptOverhead) / alignment * alignment
	for k, p := range dk.parts {
		params, err := partitionParams(dk, k, free)
		if err != nil {
			return err
		}
		var out mPartition
		if err := d.c.call(ctx, http.MethodPost, disk+"partitions/", "", params, &out); err != nil {
			return err
		}
		free -= out.Size
		done.add("partition %s on %s (%d MiB)", p.name, dk.bd.Name, out.Size/mib)
		if err := d.formatMount(ctx, disk+"partition/"+strconv.Itoa(out.ID)+"/", p.fs); err != nil {
			return err
		}
		if p.vg != "" {
			members.add(p.vg, "partitions", out.ID)
		}
	}
	return nil
}

// partitionParams are the create parameters of the k-th partition of dk
// when free bytes are left on the disk: its size (none: the rest, which
// only the last may take) and whether it is bootable.
func partitionParams(dk diskPlan, k int, free int64) (url.Values, error) {
	p := dk.parts[k]
	size := p.want(dk.bd.Size)
	last := k == len(dk.parts)-1
	if size == 0 && !last {
		return nil, drivers.Errorf(drivers.Permanent, "maas: partition %s of %s takes the rest of the disk but is not the last", p.name, dk.dev.Device.Alias)
	}
	if p.size.AtLeast && free < p.size.Bytes {
		return nil, drivers.Errorf(drivers.Permanent, "maas: partition %s of %s needs at least %d bytes, %d are left", p.name, dk.dev.Device.Alias, p.size.Bytes, free)
	}
	params := url.Values{}
	if size > 0 && (size < free || !last) {
		if size > free {
			return nil, drivers.Errorf(drivers.Permanent, "maas: partition %s of %s does not fit: %d bytes left", p.name, dk.dev.Device.Alias, free)
		}
		params.Set("size", strconv.FormatInt(size, 10))
	}
	if p.boot {
		params.Set("bootable", "true")
	}
	return params, nil
}

// createVG makes a volume group of its members and then its logical volumes.
func (d *Driver) createVG(ctx context.Context, id, name string, params url.Values, lvs []sized, done *cfgChanges) error {
	if len(params) == 0 {
		return drivers.Errorf(drivers.Permanent, "maas: volume group %s has no partition or disk", name)
	}
	params.Set("name", name)
	var out mVolumeGroup
	if err := d.c.call(ctx, http.MethodPost, "nodes/"+id+"/volume-groups/", "", params, &out); err != nil {
		return err
	}
	done.add("volume group %s (%d MiB)", name, out.Size/mib)
	return d.createLVs(ctx, id, out, out.Size, lvs, done)
}

// createLVs creates the logical volumes lvs in the volume group vg, of
// which free bytes are left, and formats and mounts them.
func (d *Driver) createLVs(ctx context.Context, id string, vg mVolumeGroup, free int64, lvs []sized, done *cfgChanges) error {
	for k, lv := range lvs {
		size := lv.want(vg.Size)
		last := k == len(lvs)-1
		p := url.Values{"name": {lv.name}}
		if lv.size.AtLeast && free < lv.size.Bytes {
			return drivers.Errorf(drivers.Permanent, "maas: logical volume %s needs at least %d bytes, %d are left in %s", lv.name, lv.size.Bytes, free, vg.Name)
		}
		if size == 0 && !last {
			return drivers.Errorf(drivers.Permanent, "maas: logical volume %s takes the rest of %s but is not the last", lv.name, vg.Name)
		}
		if size > 0 && (size < free || !last) {
			p.Set("size", strconv.FormatInt(size, 10))
		}
		var bd mBlockDevice
		if err := d.c.call(ctx, http.MethodPost, "nodes/"+id+"/volume-group/"+strconv.Itoa(vg.ID)+"/", "create_logical_volume", p, &bd); err != nil {
			return err
		}
		free -= bd.Size
		done.add("logical volume %s (%d MiB)", bd.Name, bd.Size/mib)
		if err := d.formatMount(ctx, "nodes/"+id+"/blockdevices/"+strconv.Itoa(bd.ID)+"/", lv.fs); err != nil {
			return err
		}
	}
	return nil
}

// hasPV: a disk, partition or other block device of the machine is an
// LVM physical volume (a volume group has one at least).
func hasPV(m *mMachine) bool {
	for _, b := range m.BlockDevices {
		if isPV(b.FS) {
			return true
		}
		for _, p := range b.Partitions {
			if isPV(p.FS) {
				return true
			}
		}
	}
	return false
}

// buildPlan parses the design's storage sizes and ties each device to
// its disk (disk answers nil when the machine has none).
func buildPlan(s drivers.Storage, disk func(drivers.Device) *mBlockDevice) (storagePlan, error) {
	plan := storagePlan{vgs: map[string][]sized{}}
	for _, sd := range s.Devices {
		bd := disk(sd.Device)
		if bd == nil {
			return plan, fmt.Errorf("%w %s", errNoDisk, sd.Device.Alias)
		}
		var parts []sized
		for _, p := range sd.Partitions {
			sz, err := design.ParseSize(p.Size)
			if err != nil {
				return plan, fmt.Errorf("partition %s of %s: %v", p.Name, sd.Device.Alias, err)
			}
			parts = append(parts, sized{name: p.Name, size: sz, boot: p.Bootable, fs: p.Filesystem, vg: p.VolumeGroup})
		}
		plan.disks = append(plan.disks, diskPlan{sd, bd, ordered(parts)})
	}
	for _, vg := range s.VolumeGroups {
		var lvs []sized
		for _, lv := range vg.LogicalVolumes {
			sz, err := design.ParseSize(lv.Size)
			if err != nil {
				return plan, fmt.Errorf("logical volume %s of %s: %v", lv.Name, vg.Name, err)
			}
			lvs = append(lvs, sized{name: lv.Name, size: sz, fs: lv.Filesystem})
		}
		plan.vgs[vg.Name] = ordered(lvs)
	}
	return plan, nil
}

// formatMount formats and mounts a partition or block device (path ends in /).
func (d *Driver) formatMount(ctx context.Context, path string, fs *drivers.Filesystem) error {
	if fs == nil {
		return nil
	}
	p := url.Values{"fstype": {fs.FSType}}
	if fs.Label != "" {
		p.Set("label", fs.Label)
	}
	if err := d.c.call(ctx, http.MethodPost, path, "format", p, nil); err != nil {
		return err
	}
	if fs.Mountpoint == "" {
		return nil
	}
	mp := url.Values{"mount_point": {fs.Mountpoint}}
	if fs.Options != "" {
		mp.Set("mount_options", fs.Options)
	}
	return d.c.call(ctx, http.MethodPost, path, "mount", mp, nil)
}

// compare says how the machine's layout differs from the plan ("" if
// not): the partitions of the design's disks, the disks outside the
// design, then the volume groups and their logical volumes.
func (p *storagePlan) compare(m *mMachine, vgs []mVolumeGroup) string {
	used := map[int]bool{}
	pvs := map[string]bool{} // volume group/MAAS partition ID of the design's physical volumes
	for _, dk := range p.disks {
		used[dk.bd.ID] = true
		if diff := dk.compare(pvs); diff != "" {
			return diff
		}
	}
	for _, b := range m.BlockDevices {
		if b.Type == "physical" && !used[b.ID] && (len(b.Partitions) > 0 || b.FS != nil) {
			return fmt.Sprintf("disk %s outside the design is in use", b.Name)
		}
	}
	if len(vgs) != len(p.vgs) {
		return fmt.Sprintf("%d volume groups, the design %d", len(vgs), len(p.vgs))
	}
	for _, vg := range vgs {
		lvs, ok := p.vgs[vg.Name]
		if !ok {
			return fmt.Sprintf("volume group %s is not in the design", vg.Name)
		}
		if diff := compareVG(vg, lvs, pvs); diff != "" {
			return diff
		}
	}
	return ""
}

// compare says how a disk differs from its plan, and notes in pvs the
// partitions that are the design's physical volumes.
func (dk diskPlan) compare(pvs map[string]bool) string {
	b := dk.bd
	if len(dk.parts) == 0 {
		if dk.dev.VolumeGroup != "" && !isPV(b.FS) {
			return fmt.Sprintf("disk %s is not a physical volume", b.Name)
		}
		return ""
	}
	if len(b.Partitions) != len(dk.parts) {
		return fmt.Sprintf("disk %s has %d partitions, the design %d", b.Name, len(b.Partitions), len(dk.parts))
	}
	for k, want := range dk.parts {
		have := b.Partitions[k]
		switch {
		case have.Bootable != want.boot || !want.fits(have.Size, b.Size):
			return fmt.Sprintf("partition %d of %s differs from %s", k+1, b.Name, want.name)
		case want.vg != "" && !isPV(have.FS):
			return fmt.Sprintf("partition %d of %s is not a physical volume", k+1, b.Name)
		case want.vg != "":
			pvs[pvKey(want.vg, have.ID)] = true
		case !fsMatches(want.fs, have.FS):
			return fmt.Sprintf("filesystem of partition %d of %s differs", k+1, b.Name)
		}
	}
	return ""
}

// compareVG says how a volume group differs from the design's: a member
// partition that is not one of the design's, or its logical volumes.
func compareVG(vg mVolumeGroup, lvs []sized, pvs map[string]bool) string {
	for _, mem := range vg.Devices {
		if mem.Type == "partition" && !pvs[pvKey(vg.Name, mem.ID)] {
			return fmt.Sprintf("volume group %s has another partition", vg.Name)
		}
	}
	if len(vg.LVs) != len(lvs) {
		return fmt.Sprintf("volume group %s has %d logical volumes, the design %d", vg.Name, len(vg.LVs), len(lvs))
	}
	for _, want := range lvs {
		i := slices.IndexFunc(vg.LVs, func(b mBlockDevice) bool { return b.Name == vg.Name+"-"+want.name || b.Name == want.name })
		if i < 0 {
			return fmt.Sprintf("logical volume %s is missing", want.name)
		}
		have := vg.LVs[i]
		if !want.fits(have.Size, vg.Size) || !fsMatches(want.fs, have.FS) {
			return fmt.Sprintf("logical volume %s differs", want.name)
		}
	}
	return ""
}

func isPV(fs *mFS) bool { return fs != nil && fs.FSType == "lvm-pv" }

func pvKey(vg string, partID int) string { return vg + "/" + strconv.Itoa(partID) }

// errNoDisk: a design's storage device has no disk on the machine.
var errNoDisk = errors.New("no disk for device")

// storagePlan ties the design's storage devices to the machine's disks
// (through the node devices' bus addresses) and parses their sizes.
func (d *Driver) storagePlan(ctx context.Context, m *mMachine, s drivers.Storage) (storagePlan, error) {
	var devs []drivers.Device
	for _, sd := range s.Devices {
		devs = append(devs, sd.Device)
	}
	names, err := d.resolveDevices(ctx, m.SystemID, devs, true)
	if err != nil {
		return storagePlan{}, err
	}
	plan, err := buildPlan(s, func(dev drivers.Device) *mBlockDevice {
		r := names[dev.Alias]
		for i := range m.BlockDevices {
			b := &m.BlockDevices[i]
			if b.Type == "physical" && ((r.ID != 0 && b.ID == r.ID) || (r.ID == 0 && b.Name == r.Name)) {
				return b
			}
		}
		return nil
	})
	if err != nil {
		return plan, planError{err}
	}
	return plan, nil
}

// planError: the design's storage does not fit the machine (a Permanent
// error), as opposed to a failed read.
type planError struct{ error }

func (e planError) Unwrap() error { return e.error }
