package maas

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// MAAS's LVM storage layout (set_storage_layout storage_layout=lvm,
// maasserver/storage_layouts.py) builds in one request what takes a dozen
// one by one: on the boot disk of a UEFI machine a 512 MiB bootable fat32
// partition at /boot/efi (label efi), with boot_size a bootable ext4
// partition at /boot (label boot), then a partition (root_size, or the
// rest) that is the only member of the volume group vg_name, and in it
// the logical volume lv_name (lv_size, or the whole group) in ext4 at /
// (label root). A design whose storage starts with exactly that uses the
// layout and adds its other logical volumes after; anything else is built
// part by part. The result is compared with the design before the rest is
// added: where MAAS built something else (a BIOS machine has no EFI
// partition), the design is built part by part after all.
const efiSize = 512 * mib

// lvmLayout answers the layout's parameters and the logical volumes to
// add after it, when the plan starts with what the layout builds: one
// disk, the boot disk, with the EFI partition, maybe /boot, and the
// physical volume of the one volume group, whose first logical volume is /.
func (p *storagePlan) lvmLayout(m *mMachine) (url.Values, []sized, bool) {
	if !p.onBootDisk(m) {
		return nil, nil, false
	}
	dk := p.disks[0]
	parts := dk.parts
	if len(parts) < 2 || len(parts) > 3 || !layoutEFI(parts[0]) {
		return nil, nil, false
	}
	params := url.Values{"storage_layout": {"lvm"}}
	if len(parts) == 3 {
		if !layoutBoot(parts[1]) {
			return nil, nil, false
		}
		params.Set("boot_size", strconv.FormatInt(parts[1].want(dk.bd.Size), 10))
	}
	pv := parts[len(parts)-1]
	lvs := p.vgs[pv.vg]
	if pv.vg == "" || pv.boot || pv.fs != nil || len(lvs) == 0 || !layoutRoot(lvs) {
		return nil, nil, false
	}
	if !pv.size.AtLeast {
		params.Set("root_size", strconv.FormatInt(pv.want(dk.bd.Size), 10))
	}
	root := lvs[0]
	params.Set("vg_name", pv.vg)
	params.Set("lv_name", root.name)
	if !root.size.AtLeast {
		params.Set("lv_size", strconv.FormatInt(root.want(0), 10))
	}
	return params, lvs[1:], true
}

// onBootDisk: the plan has one disk, the machine's boot disk, and one
// volume group.
func (p *storagePlan) onBootDisk(m *mMachine) bool {
	return len(p.disks) == 1 && len(p.vgs) == 1 && m.BootDisk != nil && p.disks[0].bd.ID == m.BootDisk.ID
}

// layoutEFI: the partition is the layout's EFI system partition.
func layoutEFI(s sized) bool {
	return layoutFS(s, "fat32", "/boot/efi", "efi") && s.boot && s.size.Percent == 0 && !s.size.AtLeast && s.size.Bytes == efiSize
}

// layoutBoot: the partition is the layout's /boot (of a fixed size).
func layoutBoot(s sized) bool {
	return layoutFS(s, "ext4", "/boot", "boot") && s.boot && !s.size.AtLeast
}

// layoutRoot: the first logical volume is the layout's root (a size in
// bytes, or the rest when it is the only one).
func layoutRoot(lvs []sized) bool {
	root := lvs[0]
	return layoutFS(root, "ext4", "/", "root") && (!root.size.AtLeast || len(lvs) == 1) && root.size.Percent == 0
}

// layoutFS: the item is a filesystem as MAAS's layout makes it (the
// label the layout sets, or none asked for; no mount options).
func layoutFS(s sized, fstype, mount, label string) bool {
	f := s.fs
	return f != nil && s.vg == "" && strings.EqualFold(f.FSType, fstype) && f.Mountpoint == mount &&
		(f.Label == "" || f.Label == label) && f.Options == ""
}

// applyLVMLayout applies the LVM layout, checks it against the design's
// start, then adds the other logical volumes. applied is false when MAAS
// built something else (nothing more was changed).
func (d *Driver) applyLVMLayout(ctx context.Context, id string, plan *storagePlan, params url.Values, rest []sized) (cfgChanges, bool, error) {
	var done cfgChanges
	var ans layoutAnswer
	if err := d.c.call(ctx, http.MethodPost, "machines/"+id+"/", "set_storage_layout", params, &ans); err != nil {
		return done, false, err
	}
	m := ans.mMachine
	name := params.Get("vg_name")
	vgs, ok := ans.volumeGroup(name)
	if !ok { // not what the layout makes: MAAS's own account
		if err := d.c.call(ctx, http.MethodGet, "nodes/"+id+"/volume-groups/", "", nil, &vgs); err != nil {
			return done, false, err
		}
	}
	start := storagePlan{disks: slices.Clone(plan.disks), vgs: map[string][]sized{name: plan.vgs[name][:1]}}
	for i := range start.disks { // as the layout left them
		k := slices.IndexFunc(m.BlockDevices, func(b mBlockDevice) bool { return b.ID == start.disks[i].bd.ID })
		if k < 0 {
			return done, false, nil
		}
		start.disks[i].bd = &m.BlockDevices[k]
	}
	if diff := start.compare(&m, vgs); diff != "" || len(vgs) != 1 {
		return done, false, nil
	}
	parts := "efi"
	if params.Has("boot_size") {
		parts += ", boot"
	}
	done.add("MAAS's lvm layout (%s, volume group %s, logical volume %s)", parts, name, params.Get("lv_name"))
	if err := d.createLVs(ctx, id, vgs[0], vgs[0].Avail, rest, &done); err != nil {
		return done, true, err
	}
	return done, true, nil
}

// layoutAnswer is the machine set_storage_layout answers, with the IDs
// of its volume groups (MAAS lists them without their details).
type layoutAnswer struct {
	mMachine
	VGs []struct {
		ID int `json:"id"`
	} `json:"volume_groups"`
}

// lvmExtent is MAAS's LVM_PE_SIZE: a volume group is whole extents of
// its physical volumes, less one extent each for LVM's metadata
// (FilesystemGroup.get_lvm_size, MAAS 3.x).
const lvmExtent = 4 * mib

// volumeGroup is the one volume group (named name) the LVM layout made,
// as GET volume-groups/ would answer it, told from the answer alone: its
// physical volumes are the partitions and disks formatted lvm-pv, its
// logical volumes the virtual block devices named name-*. ok is false
// when the answer is not that (more than one group, no physical volume).
func (a *layoutAnswer) volumeGroup(name string) ([]mVolumeGroup, bool) {
	if len(a.VGs) != 1 || a.SystemID == "" {
		return nil, false
	}
	vg := mVolumeGroup{ID: a.VGs[0].ID, Name: name, SystemID: a.SystemID}
	var pvBytes int64
	for _, b := range a.BlockDevices {
		switch {
		case b.Type == "virtual" && strings.HasPrefix(b.Name, name+"-"):
			vg.LVs = append(vg.LVs, b)
		case b.Type == "physical" && isPV(b.FS):
			vg.Devices, pvBytes = append(vg.Devices, mVGMember{ID: b.ID, Type: "physical"}), pvBytes+b.Size
		}
		for _, p := range b.Partitions {
			if isPV(p.FS) {
				vg.Devices, pvBytes = append(vg.Devices, mVGMember{ID: p.ID, Type: "partition"}), pvBytes+p.Size
			}
		}
	}
	if len(vg.Devices) == 0 {
		return nil, false
	}
	vg.Size = (pvBytes/lvmExtent - int64(len(vg.Devices))) * lvmExtent
	vg.Avail = vg.Size
	for _, lv := range vg.LVs {
		vg.Avail -= lv.Size
	}
	return []mVolumeGroup{vg}, true
}
