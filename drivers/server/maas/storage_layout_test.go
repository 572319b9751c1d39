package maas

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
)

// lvmShaped is MAAS's lvm layout (efi, boot, a volume group with the root
// logical volume) plus /var.
func lvmShaped(disk drivers.Device) drivers.Storage {
	return drivers.Storage{
		Devices: []drivers.StorageDevice{{Device: disk, Partitions: []drivers.Partition{
			{Name: "boot", Size: "1g", Bootable: true, Filesystem: &drivers.Filesystem{FSType: "ext4", Mountpoint: "/boot"}},
			{Name: "efi", Size: "512mi", Bootable: true, Filesystem: &drivers.Filesystem{FSType: "fat32", Mountpoint: "/boot/efi"}},
			{Name: "pv0", Size: ">20g", VolumeGroup: "vg0"},
		}}},
		VolumeGroups: []drivers.VolumeGroup{{Name: "vg0", LogicalVolumes: []drivers.LogicalVolume{
			{Name: "root", Size: "40g", Filesystem: &drivers.Filesystem{FSType: "ext4", Mountpoint: "/"}},
			{Name: "var", Size: ">10g", Filesystem: &drivers.Filesystem{FSType: "xfs", Mountpoint: "/var"}},
		}}},
	}
}

// TestStorageThroughLVMLayout: a design that starts with what MAAS's lvm
// layout builds is applied with it (no partition built one by one), the
// result is what the design says (a second run changes nothing), and a
// design that differs in one point (vfat, not MAAS's fat32) is built part
// by part.
func TestStorageThroughLVMLayout(t *testing.T) {
	d := cfgDesign(t)
	for _, tc := range []struct {
		name   string
		edit   func(*drivers.Storage)
		layout bool
	}{
		{"lvm", func(*drivers.Storage) {}, true},
		{"vfat", func(s *drivers.Storage) { s.Devices[0].Partitions[1].Filesystem.FSType = "vfat" }, false},
		{"boot not bootable", func(s *drivers.Storage) { s.Devices[0].Partitions[0].Bootable = false }, false},
		{"label", func(s *drivers.Storage) {
			s.VolumeGroups[0].LogicalVolumes[0].Filesystem.Label = "system"
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, drv := cfgLab(t, d)
			const name = "r01-cmp01"
			id := cfgCommission(t, l, drv, name)
			n := driverspec.Node(d, d.Nodes[name], id)
			n.Storage = lvmShaped(n.Storage.Devices[0].Device)
			tc.edit(&n.Storage)
			parts0, layouts0 := count(l, "POST /nodes/{node}/blockdevices/{blockdevice}/partitions/"), count(l, "POST /machines/{machine}/?op=set_storage_layout")
			r, err := drv.ApplyStorage(t.Context(), n)
			if err != nil || r.Status != drivers.StatusDone {
				t.Fatalf("storage: %+v %v", r, err)
			}
			parts, layouts := count(l, "POST /nodes/{node}/blockdevices/{blockdevice}/partitions/")-parts0, count(l, "POST /machines/{machine}/?op=set_storage_layout")-layouts0
			t.Logf("%d partition requests, %d layouts: %s", parts, layouts, r.Message)
			if used := strings.Contains(r.Message, "lvm layout"); used != tc.layout || (tc.layout && (parts != 0 || layouts != 1)) || (!tc.layout && parts != 3) {
				t.Errorf("lvm layout used: %v, want %v (%d partitions, %d layouts)", used, tc.layout, parts, layouts)
			}
			w0, _ := cfgWrites(l)
			if r, err := drv.ApplyStorage(t.Context(), n); err != nil || !strings.Contains(r.Message, "already configured") {
				t.Errorf("again: %+v %v", r, err)
			}
			if w1, _ := cfgWrites(l); w1 != w0 {
				t.Errorf("the second run wrote %d times", w1-w0)
			}
		})
	}
}

// TestLVMLayoutShape: what the layout cannot build is not asked of it.
func TestLVMLayoutShape(t *testing.T) {
	disk := drivers.Device{Alias: "sda"}
	bd := &mBlockDevice{ID: 7, Name: "sda", Type: "physical", Size: 500 << 30}
	m := &mMachine{BootDisk: &mBlockDevice{ID: 7}}
	for _, tc := range []struct {
		name string
		edit func(*drivers.Storage)
		want bool
	}{
		{"as MAAS builds it", func(*drivers.Storage) {}, true},
		{"no /boot", func(s *drivers.Storage) {
			s.Devices[0].Partitions = append(s.Devices[0].Partitions[:0], s.Devices[0].Partitions[1:]...)
		}, true},
		{"EFI of another size", func(s *drivers.Storage) { s.Devices[0].Partitions[1].Size = "1g" }, false},
		{"mount options", func(s *drivers.Storage) { s.VolumeGroups[0].LogicalVolumes[0].Filesystem.Options = "noatime" }, false},
		{"root not ext4", func(s *drivers.Storage) { s.VolumeGroups[0].LogicalVolumes[0].Filesystem.FSType = "xfs" }, false},
		{"root by percentage", func(s *drivers.Storage) { s.VolumeGroups[0].LogicalVolumes[0].Size = "50%" }, false},
		{"a second disk", func(s *drivers.Storage) {
			s.Devices = append(s.Devices, drivers.StorageDevice{Device: drivers.Device{Alias: "sdb"}, VolumeGroup: "vg0"})
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := lvmShaped(disk)
			tc.edit(&s)
			p, err := buildPlan(s, func(drivers.Device) *mBlockDevice { return bd })
			if err != nil {
				t.Fatal(err)
			}
			params, rest, ok := p.lvmLayout(m)
			if ok != tc.want {
				t.Fatalf("layout %v (%v), want %v", ok, params, tc.want)
			}
			if ok && (params.Get("lv_name") != "root" || params.Get("vg_name") != "vg0" || len(rest) != 1 || rest[0].name != "var") {
				t.Errorf("params %v, then %d logical volumes", params, len(rest))
			}
		})
	}
}
