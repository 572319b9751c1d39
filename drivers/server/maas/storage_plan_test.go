package maas

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

// builtLayout is a machine on which lvmShaped (with a 100 GiB pv0 and a
// 40 GiB root) is built as the design says, with its volume group.
func builtLayout() (*mMachine, []mVolumeGroup) {
	s := func(v string) *string { return &v }
	bd := mBlockDevice{ID: 7, Name: "sda", Type: "physical", Size: 500 << 30, Partitions: []mPartition{
		{ID: 1, Size: 512 * mib, Bootable: true, FS: &mFS{FSType: "fat32", MountPoint: s("/boot/efi")}},
		{ID: 2, Size: aligned(1e9), Bootable: true, FS: &mFS{FSType: "ext4", MountPoint: s("/boot")}},
		{ID: 3, Size: 400 << 30, FS: &mFS{FSType: "lvm-pv"}},
	}}
	m := &mMachine{BlockDevices: []mBlockDevice{bd, {ID: 8, Name: "sdb", Type: "physical", Size: 100 << 30}}}
	vgs := []mVolumeGroup{{ID: 1, Name: "vg0", Size: 400 << 30, Devices: []mVGMember{{ID: 3, Type: "partition"}}, LVs: []mBlockDevice{
		{Name: "vg0-root", Size: aligned(40e9), FS: &mFS{FSType: "ext4", MountPoint: s("/")}},
		{Name: "vg0-var", Size: 360 << 30, FS: &mFS{FSType: "xfs", MountPoint: s("/var")}},
	}}}
	return m, vgs
}

// aligned is a design size in bytes as MAAS makes it.
func aligned(b float64) int64 { return int64(b) / alignment * alignment }

// TestStorageCompare: the design (desired) against the machine's disks
// and volume groups (observed) answers "" when they agree and names the
// first difference when they do not; each check of compare is one row.
func TestStorageCompare(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(m *mMachine, vgs *[]mVolumeGroup, s *drivers.Storage)
		want string
	}{
		{"as built", func(*mMachine, *[]mVolumeGroup, *drivers.Storage) {}, ""},
		{"partition count", func(m *mMachine, _ *[]mVolumeGroup, _ *drivers.Storage) {
			m.BlockDevices[0].Partitions = m.BlockDevices[0].Partitions[:2]
		}, "has 2 partitions, the design 3"},
		{"not bootable", func(m *mMachine, _ *[]mVolumeGroup, _ *drivers.Storage) {
			m.BlockDevices[0].Partitions[1].Bootable = false
		}, "partition 2 of sda differs from boot"},
		{"size", func(m *mMachine, _ *[]mVolumeGroup, _ *drivers.Storage) { m.BlockDevices[0].Partitions[1].Size = 2e9 }, "partition 2 of sda differs"},
		{"pv not lvm", func(m *mMachine, _ *[]mVolumeGroup, _ *drivers.Storage) { m.BlockDevices[0].Partitions[2].FS = nil }, "partition 3 of sda is not a physical volume"},
		{"filesystem", func(m *mMachine, _ *[]mVolumeGroup, _ *drivers.Storage) {
			m.BlockDevices[0].Partitions[1].FS.FSType = "xfs"
		}, "filesystem of partition 2 of sda differs"},
		{"other disk used", func(m *mMachine, _ *[]mVolumeGroup, _ *drivers.Storage) { m.BlockDevices[1].FS = &mFS{FSType: "ext4"} }, "disk sdb outside the design is in use"},
		{"whole disk pv", func(_ *mMachine, _ *[]mVolumeGroup, s *drivers.Storage) {
			s.Devices = append(s.Devices, drivers.StorageDevice{Device: drivers.Device{Alias: "sdb"}, VolumeGroup: "vg0"})
		}, "disk sdb is not a physical volume"},
		{"vg count", func(_ *mMachine, vgs *[]mVolumeGroup, _ *drivers.Storage) { *vgs = nil }, "0 volume groups, the design 1"},
		{"vg name", func(_ *mMachine, vgs *[]mVolumeGroup, _ *drivers.Storage) { (*vgs)[0].Name = "vg1" }, "volume group vg1 is not in the design"},
		{"vg member", func(_ *mMachine, vgs *[]mVolumeGroup, _ *drivers.Storage) { (*vgs)[0].Devices[0].ID = 2 }, "volume group vg0 has another partition"},
		{"lv count", func(_ *mMachine, vgs *[]mVolumeGroup, _ *drivers.Storage) { (*vgs)[0].LVs = (*vgs)[0].LVs[:1] }, "has 1 logical volumes, the design 2"},
		{"lv name", func(_ *mMachine, vgs *[]mVolumeGroup, _ *drivers.Storage) { (*vgs)[0].LVs[1].Name = "vg0-srv" }, "logical volume var is missing"},
		{"lv filesystem", func(_ *mMachine, vgs *[]mVolumeGroup, _ *drivers.Storage) { (*vgs)[0].LVs[1].FS.FSType = "ext4" }, "logical volume var differs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, vgs := builtLayout()
			s := lvmShaped(drivers.Device{Alias: "sda"})
			s.Devices[0].Partitions[2].Size = ">100g"
			tc.edit(m, &vgs, &s)
			p, err := buildPlan(s, func(d drivers.Device) *mBlockDevice {
				for i := range m.BlockDevices {
					if m.BlockDevices[i].Name == d.Alias {
						return &m.BlockDevices[i]
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got := p.compare(m, vgs)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("compare = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPartitionParams: each partition asks for its aligned size (none for
// the rest of the disk), bootable ones say so, and what cannot fit fails
// before the request.
func TestPartitionParams(t *testing.T) {
	bd := &mBlockDevice{ID: 7, Name: "sda", Size: 10 << 30}
	free := (bd.Size - gptOverhead) / alignment * alignment
	plan := func(sizes ...string) diskPlan {
		var parts []drivers.Partition
		for k, sz := range sizes {
			parts = append(parts, drivers.Partition{Name: "p" + itoa(k), Size: sz, Bootable: k == 0})
		}
		p, err := buildPlan(drivers.Storage{Devices: []drivers.StorageDevice{{Device: drivers.Device{Alias: "sda"}, Partitions: parts}}},
			func(drivers.Device) *mBlockDevice { return bd })
		if err != nil {
			t.Fatal(err)
		}
		return p.disks[0]
	}
	for _, tc := range []struct {
		name string
		dk   diskPlan
		k    int
		free int64
		want string // encoded parameters, or the error
	}{
		{"sized bootable", plan("1gi", ">1gi"), 0, free, "bootable=true&size=1073741824"},
		{"the rest", plan("1gi", ">1gi"), 1, free - 1<<30, ""},
		{"last, larger than what is left, takes the rest", plan("1gi", "20gi"), 1, 2 << 30, ""},
		{"last, smaller than the rest", plan("1gi", "2gi"), 1, 5 << 30, "size=2147483648"},
		{"rest not last", plan(">1gi", "1gi"), 0, free, "not the last"},
		{"at least more than left", plan("1gi", ">20gi"), 1, free - 1<<30, "needs at least"},
		{"not last, too big", plan("20gi", "1gi"), 0, free, "does not fit"},
	} {
		p, err := partitionParams(tc.dk, tc.k, tc.free)
		got := p.Encode()
		if err != nil {
			got = err.Error()
		}
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
