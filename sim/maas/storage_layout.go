package maas

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Storage layouts: POST /machines/{system_id}/?op=set_storage_layout
// (maasserver/storage_layouts.py). The simulator implements flat, lvm and
// blank; the lab's machines boot UEFI, so layouts start with a 512 MiB
// fat32 EFI partition mounted at /boot/efi.
//
//	flat:  sda1 512M fat32 /boot/efi, [sda2 boot_size ext4 /boot], sdaN ext4 /
//	lvm:   sda1 512M fat32 /boot/efi, [sda2 ext4 /boot], sdaN lvm-pv(vgroot); vgroot-lvroot ext4 /
//	blank: nothing on any disk

// storageLayouts are the choices MAAS offers (STORAGE_LAYOUT_CHOICES).
var storageLayouts = []string{"bcache", "blank", "custom", "flat", "lvm", "vmfs6", "vmfs7"}

func (s *Server) opSetStorageLayout(m *machine, req *request) (any, *apiError) {
	if err := requireReady(m, "Cannot change the storage layout on a machine that is not Ready."); err != nil {
		return nil, err
	}
	if err := s.applyStorageLayout(m, req.form); err != nil {
		return nil, err
	}
	return machineAnswer{m}, nil
}

// applyDefaultStorageLayout is what MAAS does at the end of commissioning:
// it applies the default_storage_layout (flat unless configured). Errors
// leave the storage as it was.
func (s *Server) applyDefaultStorageLayout(m *machine) {
	layout, _ := s.config["default_storage_layout"].(string)
	if layout == "" {
		layout = "flat"
	}
	_ = s.applyStorageLayout(m, formValues{"storage_layout": {layout}})
}

// applyStorageLayout validates the parameters and replaces the whole
// storage configuration; on an error nothing is changed.
func (s *Server) applyStorageLayout(m *machine, f formValues) *apiError {
	layout := f.get("storage_layout")
	switch {
	case layout == "":
		return formError("storage_layout", "This field is required.")
	case !contains(storageLayouts, layout):
		quoted := make([]string, len(storageLayouts))
		for i, l := range storageLayouts {
			quoted[i] = "'" + l + "'"
		}
		return formError("storage_layout", "'%s' is not a valid storage_layout.  It should be one of: %s.", layout, strings.Join(quoted, ", "))
	case layout != "flat" && layout != "lvm" && layout != "blank":
		return plainBadRequest("Failed to configure storage layout '%s': the simulator implements only the flat, lvm and blank layouts.", layout)
	}
	p, err := m.layoutParams(layout, f)
	if err != nil {
		return err
	}
	saved := m.snapshotStorage()
	if err := s.buildLayout(m, layout, p); err != nil {
		m.restoreStorage(saved)
		return err
	}
	m.StorageLayout = layout
	return nil
}

type layoutParams struct {
	boot           *blockDevice
	root           *blockDevice // root_device, or the boot disk
	bootSize       int64        // 0: no /boot partition
	rootSize       int64        // 0: the rest of the disk
	vgName, lvName string
	lvSize         int64 // 0: the whole group
	haveLVSize     bool
	physical       []*blockDevice
}

var percentRE = regexp.MustCompile(`^\d+(\.\d*)?%$`)

// sizeOrPercent is BytesOrPercentageField; a percentage is of base.
func sizeOrPercent(f formValues, errs formErrors, key string, base int64) (int64, bool) {
	v := strings.TrimSpace(f.get(key))
	if v == "" {
		return 0, false
	}
	if percentRE.MatchString(v) {
		pc, _ := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		return int64(math.Ceil(float64(base) * pc / 100)), true
	}
	n, ok := parseBytes(v)
	if !ok {
		errs.add(key, "Enter a valid value.")
		return 0, false
	}
	return n, true
}

// layoutParams is StorageLayoutBase (and LVMStorageLayout) form validation.
func (m *machine) layoutParams(layout string, f formValues) (*layoutParams, *apiError) {
	p := &layoutParams{boot: m.bootDisk(), vgName: "vgroot", lvName: "lvroot"}
	for _, b := range m.sortedBlockDevices() {
		if b.Type == "physical" {
			p.physical = append(p.physical, b)
		}
	}
	errs := formErrors{}
	var base int64
	if p.boot != nil {
		base = p.boot.Size - efiPartitionSize
	}
	if n, ok := sizeOrPercent(f, errs, "boot_size", base); ok && p.boot != nil {
		checkSizeRange(errs, "boot_size", n, minBootPartition, base-minRootPartition)
		p.bootSize = n
	}
	if n, ok := sizeOrPercent(f, errs, "root_size", base); ok && p.boot != nil {
		checkSizeRange(errs, "root_size", n, minRootPartition, base-minBootPartition)
		p.rootSize = n
	}
	p.root = p.boot
	if v := f.get("root_device"); v != "" {
		p.root = rootDeviceField(errs, p.physical, v)
	}
	if layout == "lvm" {
		p.lvmFields(errs, f)
	}
	if len(p.physical) == 0 || p.boot == nil {
		return nil, plainBadRequest("Machine is missing a boot disk; no storage layout can be applied.")
	}
	if e := errs.err(); e != nil {
		return nil, e
	}
	if p.rootSize > 0 && efiPartitionSize+p.bootSize+p.rootSize > p.boot.Size {
		return nil, formError("__all__", "Size of the boot partition and root partition are larger than the available space on the boot disk.")
	}
	return p, nil
}

// checkSizeRange: a size must be in [least, most].
func checkSizeRange(errs formErrors, key string, n, least, most int64) {
	if n < least {
		errs.add(key, "Size is too small. Minimum size is %d.", least)
	} else if n > most {
		errs.add(key, "Size is too large. Maximum size is %d.", most)
	}
}

// rootDeviceField is the physical device whose ID is v, or nil (with the
// error MAAS gives, listing the IDs).
func rootDeviceField(errs formErrors, physical []*blockDevice, v string) *blockDevice {
	var found *blockDevice
	ids := make([]string, len(physical))
	for i, b := range physical {
		ids[i] = fmt.Sprintf("'%d'", b.ID)
		if strconv.Itoa(b.ID) == v {
			found = b
		}
	}
	if found == nil {
		errs.add("root_device", "'%s' is not a valid root_device.  It should be one of: %s.", v, strings.Join(ids, ", "))
	}
	return found
}

// lvmFields reads the LVM layout's volume group and logical volume: names
// and the volume's size (within what the root partition would have).
func (p *layoutParams) lvmFields(errs formErrors, f formValues) {
	if v := f.get("vg_name"); v != "" {
		p.vgName = v
	}
	if v := f.get("lv_name"); v != "" {
		p.lvName = v
	}
	rootBase := p.rootSize
	if rootBase == 0 && p.boot != nil {
		rootBase = p.boot.Size - efiPartitionSize - p.bootSize
	}
	if n, ok := sizeOrPercent(f, errs, "lv_size", rootBase); ok && p.boot != nil {
		checkSizeRange(errs, "lv_size", n, minRootPartition, rootBase)
		p.lvSize, p.haveLVSize = n, true
	}
}

// clearStorage is Node._clear_full_storage_configuration: no partition
// table, filesystem, volume group or logical volume is left.
func (m *machine) clearStorage() {
	var keep []*blockDevice
	for _, b := range m.BlockDevices {
		if b.Type != "physical" {
			continue
		}
		b.Partitions, b.PTType, b.FS, b.VGID = nil, "", nil, 0
		keep = append(keep, b)
	}
	m.BlockDevices, m.VolumeGroups = keep, nil
}

func (s *Server) buildLayout(m *machine, layout string, p *layoutParams) *apiError {
	m.clearStorage()
	if layout == "blank" {
		return nil
	}
	efi, err := s.addPartition(p.boot, efiPartitionSize, true, true, "")
	if err != nil {
		return err
	}
	efi.FS = &filesystem{FSType: "fat32", Label: "efi", UUID: s.newUUID(), MountPoint: "/boot/efi"}
	if p.bootSize > 0 {
		bp, err := s.addPartition(p.boot, p.bootSize, true, true, "")
		if err != nil {
			return err
		}
		bp.FS = &filesystem{FSType: "ext4", Label: "boot", UUID: s.newUUID(), MountPoint: "/boot"}
	}
	root, err := s.addPartition(p.root, p.rootSize, p.rootSize > 0, false, "")
	if err != nil {
		return err
	}
	rootFS := &filesystem{FSType: "ext4", Label: "root", UUID: s.newUUID(), MountPoint: "/"}
	if layout == "flat" {
		root.FS = rootFS
		return nil
	}
	vg := &volumeGroup{ID: s.nextID(), Name: p.vgName, UUID: s.newUUID()}
	m.VolumeGroups = append(m.VolumeGroups, vg)
	root.FS, root.VGID = &filesystem{FSType: fsLVMPV, UUID: s.newUUID()}, vg.ID
	lvSize := p.lvSize
	if !p.haveLVSize {
		lvSize = m.vgSize(vg)
	}
	lv, err := s.createLV(m, vg, p.lvName, lvSize, true, "")
	if err != nil {
		return err
	}
	lv.FS = rootFS
	return nil
}

// storageSnapshot is a deep copy of a machine's storage, to undo a layout
// that failed half-way (MAAS runs it in a transaction).
type storageSnapshot struct {
	devices []*blockDevice
	groups  []*volumeGroup
}

func (m *machine) snapshotStorage() storageSnapshot {
	var snap storageSnapshot
	for _, b := range m.BlockDevices {
		c := *b
		c.Tags = append([]string(nil), b.Tags...)
		c.FS = copyFS(b.FS)
		c.Partitions = nil
		for _, p := range b.Partitions {
			cp := *p
			cp.FS = copyFS(p.FS)
			cp.Tags = append([]string(nil), p.Tags...)
			c.Partitions = append(c.Partitions, &cp)
		}
		snap.devices = append(snap.devices, &c)
	}
	for _, vg := range m.VolumeGroups {
		c := *vg
		snap.groups = append(snap.groups, &c)
	}
	return snap
}

func (m *machine) restoreStorage(snap storageSnapshot) {
	m.BlockDevices, m.VolumeGroups = snap.devices, snap.groups
}

func copyFS(f *filesystem) *filesystem {
	if f == nil {
		return nil
	}
	c := *f
	return &c
}
