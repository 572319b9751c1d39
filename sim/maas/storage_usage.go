package maas

import (
	"fmt"
	"sort"
)

// Storage sizes as MAAS reckons them (src/maasserver/models/partition.py,
// partitiontable.py, filesystemgroup.py, blockdevice.py, storage_layouts.py).
const (
	sizeMiB = int64(1) << 20
	sizeGiB = int64(1) << 30

	partitionAlignment = 4 * sizeMiB // every partition is aligned down to 4 MiB
	minPartitionSize   = 4 * sizeMiB
	minBlockDeviceSize = 4 * sizeMiB
	minBlockSize       = 512
	// A partition table takes the first 4 MiB and 1 MiB at the end. (MAAS
	// adds 1 MiB more for a bios_grub partition on amd64 machines that do
	// not boot UEFI; the lab's machines boot UEFI.)
	partitionTableOverhead = 5 * sizeMiB
	lvmExtent              = 4 * sizeMiB // LVM_PE_SIZE; one extent per PV is metadata
	lvBlockSize            = 4096

	efiPartitionSize = 512 * sizeMiB
	minBootPartition = 512 * sizeMiB
	minRootPartition = 3 * sizeGiB
)

// roundDown aligns size down to a multiple of block.
func roundDown(size, block int64) int64 {
	if size <= 0 {
		return 0
	}
	return size / block * block
}

// bootDisk is MAAS's Node.get_boot_disk: the disk set with set_boot_disk,
// else the first physical disk (by id) of at least 512 MiB.
func (m *machine) bootDisk() *blockDevice {
	if m.BootDiskID != 0 {
		for _, b := range m.BlockDevices {
			if b.ID == m.BootDiskID && b.Type == "physical" {
				return b
			}
		}
	}
	var best *blockDevice
	for _, b := range m.BlockDevices {
		if b.Type == "physical" && b.Size >= minBootPartition && (best == nil || b.ID < best.ID) {
			best = b
		}
	}
	return best
}

// ptUsed is PartitionTable.get_used_size: the partitions (but skip) and the
// table's own overhead.
func ptUsed(b *blockDevice, skip *partition) int64 {
	used := partitionTableOverhead
	for _, p := range b.Partitions {
		if p != skip {
			used += p.Size
		}
	}
	return used
}

// ptAvailable is PartitionTable.get_available_size: what is left, aligned
// down to 4 MiB.
func ptAvailable(b *blockDevice, skip *partition) int64 {
	return roundDown(b.Size-ptUsed(b, skip), partitionAlignment)
}

// blockDeviceUsage is what MAAS answers as used_for, used_size and
// available_size of a block device.
func (s *Server) blockDeviceUsage(m *machine, b *blockDevice) (usedFor string, used, available int64) {
	if b.FS != nil {
		return s.fsUsedFor(m, b.FS, b.VGID), b.Size, 0
	}
	if b.PTType != "" {
		n := len(b.Partitions)
		plural := "s"
		if n == 1 {
			plural = ""
		}
		return fmt.Sprintf("%s partitioned with %d partition%s", b.PTType, n, plural), ptUsed(b, nil), ptAvailable(b, nil)
	}
	return "Unused", 0, b.Size
}

func (s *Server) partitionUsedFor(m *machine, p *partition) string {
	if p.FS != nil {
		return s.fsUsedFor(m, p.FS, p.VGID)
	}
	return "Unused"
}

// fsUsedFor is maasserver.utils.storage.used_for for a formatted device.
func (s *Server) fsUsedFor(m *machine, fs *filesystem, vgID int) string {
	switch {
	case fs.MountPoint != "":
		return fmt.Sprintf("%s formatted filesystem mounted at %s", fs.FSType, fs.MountPoint)
	case fs.FSType == fsLVMPV:
		return "LVM volume for " + s.vgName(m, vgID)
	default:
		return fmt.Sprintf("Unmounted %s formatted filesystem", fs.FSType)
	}
}

const fsLVMPV = "lvm-pv"

// isPV reports whether a block device is a physical volume of a group.
func (b *blockDevice) isPV() bool { return b.FS != nil && b.FS.FSType == fsLVMPV }

func (p *partition) isPV() bool { return p.FS != nil && p.FS.FSType == fsLVMPV }

// vgMember is a physical volume of a volume group: a whole block device or
// a partition.
type vgMember struct {
	dev  *blockDevice
	part *partition // nil for a whole device
}

func (v vgMember) size() int64 {
	if v.part != nil {
		return v.part.Size
	}
	return v.dev.Size
}

// vgMembers lists a group's physical volumes, devices before partitions,
// each by id.
func (m *machine) vgMembers(vg *volumeGroup) []vgMember {
	var devs, parts []vgMember
	for _, b := range m.BlockDevices {
		if b.Type == "physical" && b.isPV() && b.VGID == vg.ID {
			devs = append(devs, vgMember{dev: b})
		}
		for _, p := range b.Partitions {
			if p.isPV() && p.VGID == vg.ID {
				parts = append(parts, vgMember{dev: b, part: p})
			}
		}
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].dev.ID < devs[j].dev.ID })
	sort.Slice(parts, func(i, j int) bool { return parts[i].part.ID < parts[j].part.ID })
	return append(devs, parts...)
}

// logicalVolumes lists a group's logical volumes by id.
func (m *machine) logicalVolumes(vg *volumeGroup) []*blockDevice {
	var out []*blockDevice
	for _, b := range m.BlockDevices {
		if b.Type == "virtual" && b.VGID == vg.ID {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// vgSize is FilesystemGroup.get_lvm_size: whole extents of all the PVs,
// less one extent of metadata per PV.
func (m *machine) vgSize(vg *volumeGroup) int64 {
	members := m.vgMembers(vg)
	if len(members) == 0 {
		return 0
	}
	var total int64
	for _, pv := range members {
		total += pv.size()
	}
	return (total/lvmExtent - int64(len(members))) * lvmExtent
}

// vgAllocated is the space given to logical volumes (but skip).
func (m *machine) vgAllocated(vg *volumeGroup, skip *blockDevice) int64 {
	var n int64
	for _, lv := range m.logicalVolumes(vg) {
		if lv != skip {
			n += lv.Size
		}
	}
	return n
}

func (m *machine) vgFree(vg *volumeGroup, skip *blockDevice) int64 {
	return m.vgSize(vg) - m.vgAllocated(vg, skip)
}

func (m *machine) volumeGroup(id int) *volumeGroup {
	for _, v := range m.VolumeGroups {
		if v.ID == id {
			return v
		}
	}
	return nil
}

// humanBytes is MAAS's human_readable_bytes (SI units).
func humanBytes(n int64) string {
	v := float64(n)
	for _, unit := range []string{"bytes", "kB", "MB", "GB", "TB", "PB", "EB", "ZB"} {
		if v < 1000 && v > -1000 {
			if unit == "bytes" {
				return fmt.Sprintf("%.0f %s", v, unit)
			}
			return fmt.Sprintf("%.1f %s", v, unit)
		}
		v /= 1000
	}
	return fmt.Sprintf("%.1f YB", v)
}
