package maas

import (
	"strconv"
)

// Volume groups and logical volumes: /nodes/{system_id}/volume-groups/ and
// /nodes/{system_id}/volume-group/{id}/ (MAAS's VolumeGroupsHandler and
// VolumeGroupHandler). A logical volume is a virtual block device named
// "<vg>-<lv>"; a physical volume is a block device or partition with an
// lvm-pv filesystem.

func (s *Server) renderVolumeGroup(m *machine, vg *volumeGroup) map[string]any {
	devices := []any{}
	for _, pv := range m.vgMembers(vg) {
		if pv.part != nil {
			devices = append(devices, s.renderPartition(m, pv.dev, pv.part))
		} else {
			devices = append(devices, s.renderBlockDevice(m, pv.dev))
		}
	}
	lvs := []any{}
	for _, lv := range m.logicalVolumes(vg) {
		lvs = append(lvs, s.renderBlockDevice(m, lv))
	}
	size, used := m.vgSize(vg), m.vgAllocated(vg, nil)
	return map[string]any{"system_id": m.SystemID, "id": vg.ID, "uuid": vg.UUID, "name": vg.Name,
		"devices": devices, "size": size, "human_size": humanBytes(size),
		"available_size": size - used, "human_available_size": humanBytes(size - used),
		"used_size": used, "human_used_size": humanBytes(used), "logical_volumes": lvs,
		"resource_uri": uri("/nodes/%s/volume-group/%d/", m.SystemID, vg.ID)}
}

func (s *Server) volumeGroupsRead(m *machine, _ *request) (any, *apiError) {
	out := []any{}
	for _, vg := range m.VolumeGroups {
		out = append(out, s.renderVolumeGroup(m, vg))
	}
	return out, nil
}

// freeDevices are the block devices a group may take whole: physical ones
// without a partition table or a filesystem. (MAAS also offers unused
// logical volumes; the simulator does not nest LVM.)
func (m *machine) freeDevice(idOrName string) *blockDevice {
	b := m.findBlockDevice(idOrName)
	if b == nil || b.Type != "physical" || b.PTType != "" || b.FS != nil {
		return nil
	}
	return b
}

// freePartition finds an unformatted partition of the machine by id or name.
func (m *machine) freePartition(idOrName string) (*blockDevice, *partition) {
	for _, b := range m.BlockDevices {
		if p := b.findPartition(idOrName); p != nil && p.FS == nil {
			return b, p
		}
	}
	return nil, nil
}

// pickMembers resolves the block_devices and partitions choices of
// CreateVolumeGroupForm (and UpdateVolumeGroupForm's add_* fields).
func (m *machine) pickMembers(f formValues, errs formErrors, devKey, partKey string) []vgMember {
	var out []vgMember
	for _, v := range f[devKey] {
		b := m.freeDevice(v)
		if b == nil {
			errs.add(devKey, "Select a valid choice. %s is not one of the available choices.", v)
			continue
		}
		out = append(out, vgMember{dev: b})
	}
	for _, v := range f[partKey] {
		b, p := m.freePartition(v)
		if p == nil {
			errs.add(partKey, "Select a valid choice. %s is not one of the available choices.", v)
			continue
		}
		out = append(out, vgMember{dev: b, part: p})
	}
	return out
}

// joinGroup makes the members physical volumes of vg. The boot disk cannot
// be one whole: MAAS partitions it and uses the partition
// (_move_boot_disk_to_partitions).
func (s *Server) joinGroup(m *machine, vg *volumeGroup, members []vgMember) {
	boot := m.bootDisk()
	for _, pv := range members {
		if pv.part == nil && pv.dev == boot {
			p, err := s.addPartition(pv.dev, 0, false, false, "")
			if err == nil {
				pv.part = p
			}
		}
		fs := &filesystem{FSType: fsLVMPV, UUID: s.newUUID()}
		if pv.part != nil {
			pv.part.FS, pv.part.VGID = fs, vg.ID
		} else {
			pv.dev.FS, pv.dev.VGID = fs, vg.ID
		}
	}
}

func (s *Server) volumeGroupsCreate(m *machine, req *request) (any, *apiError) {
	if err := requireReady(m, "Cannot create volume group because the machine is not Ready."); err != nil {
		return nil, err
	}
	f := req.form
	errs := formErrors{}
	name := f.get("name")
	if name == "" {
		errs.add("name", "This field is required.")
	}
	members := m.pickMembers(f, errs, "block_devices", "partitions")
	if name != "" && len(members) == 0 && len(errs) == 0 {
		errs.add("__all__", "At least one valid block device or partition is required.")
	}
	if e := errs.err(); e != nil {
		return nil, e
	}
	uuid := f.get("uuid")
	if uuid == "" {
		uuid = s.newUUID()
	}
	vg := &volumeGroup{ID: s.nextID(), Name: name, UUID: uuid}
	m.VolumeGroups = append(m.VolumeGroups, vg)
	s.joinGroup(m, vg, members)
	return s.renderVolumeGroup(m, vg), nil
}

func (s *Server) volumeGroupRead(m *machine, vg *volumeGroup, _ *request) (any, *apiError) {
	return s.renderVolumeGroup(m, vg), nil
}

// volumeGroupUpdate renames the group and adds or removes physical volumes.
func (s *Server) volumeGroupUpdate(m *machine, vg *volumeGroup, req *request) (any, *apiError) {
	if err := requireReady(m, "Cannot update volume group because the machine is not Ready."); err != nil {
		return nil, err
	}
	f := req.form
	errs := formErrors{}
	add := m.pickMembers(f, errs, "add_block_devices", "add_partitions")
	var remove []vgMember
	current := m.vgMembers(vg)
	for _, key := range []string{"remove_block_devices", "remove_partitions"} {
		for _, v := range f[key] {
			found := false
			for _, pv := range current {
				if (key == "remove_block_devices") != (pv.part == nil) {
					continue
				}
				id := pv.dev.ID
				name := pv.dev.Name
				if pv.part != nil {
					id, name = pv.part.ID, pv.dev.Name+"-part"+strconv.Itoa(pv.part.Index)
				}
				if v == strconv.Itoa(id) || v == name {
					remove = append(remove, pv)
					found = true
				}
			}
			if !found {
				errs.add(key, "Select a valid choice. %s is not one of the available choices.", v)
			}
		}
	}
	if e := errs.err(); e != nil {
		return nil, e
	}
	if len(current)-len(remove)+len(add) == 0 {
		return nil, formError("__all__", "At least one filesystem must have been added.")
	}
	if n := f.get("name"); n != "" && n != vg.Name {
		for _, lv := range m.logicalVolumes(vg) {
			lv.Name = n + lv.Name[len(vg.Name):]
		}
		vg.Name = n
	}
	if u := f.get("uuid"); u != "" {
		vg.UUID = u
	}
	for _, pv := range remove {
		if pv.part != nil {
			pv.part.FS, pv.part.VGID = nil, 0
		} else {
			pv.dev.FS, pv.dev.VGID = nil, 0
		}
	}
	s.joinGroup(m, vg, add)
	return s.renderVolumeGroup(m, vg), nil
}

// volumeGroupDelete deletes the group, its logical volumes, and frees its
// physical volumes.
func (s *Server) volumeGroupDelete(m *machine, vg *volumeGroup, _ *request) (any, *apiError) {
	if err := requireReady(m, "Cannot delete volume group because the machine is not Ready."); err != nil {
		return nil, err
	}
	m.deleteVolumeGroup(vg)
	return nil, nil
}

func (m *machine) deleteVolumeGroup(vg *volumeGroup) {
	for _, lv := range m.logicalVolumes(vg) {
		m.removeBlockDevice(lv)
	}
	for _, pv := range m.vgMembers(vg) {
		if pv.part != nil {
			pv.part.FS, pv.part.VGID = nil, 0
		} else {
			pv.dev.FS, pv.dev.VGID = nil, 0
		}
	}
	out := m.VolumeGroups[:0]
	for _, o := range m.VolumeGroups {
		if o != vg {
			out = append(out, o)
		}
	}
	m.VolumeGroups = out
}

// volumeGroupCreateLV is CreateLogicalVolumeForm: name, uuid, size (default
// all the free space; at least 4 MiB; aligned down to 4 MiB). It answers
// the new logical volume (a block device).
func (s *Server) volumeGroupCreateLV(m *machine, vg *volumeGroup, req *request) (any, *apiError) {
	if err := requireReady(m, "Cannot create logical volume because the machine is not Ready."); err != nil {
		return nil, err
	}
	f := req.form
	free := m.vgFree(vg, nil)
	errs := formErrors{}
	name := f.get("name")
	if name == "" {
		errs.add("name", "This field is required.")
	}
	size, haveSize := bytesField(f, errs, "size", false, minBlockDeviceSize, max(free, 1))
	if free < minBlockDeviceSize {
		delete(errs, "size")
		errs.add("__all__", "Volume group (%s) cannot hold any more logical volumes, because it doesn't have enough free space.", vg.Name)
	}
	if e := errs.err(); e != nil {
		return nil, e
	}
	lv, err := s.createLV(m, vg, name, size, haveSize, f.get("uuid"))
	if err != nil {
		return nil, err
	}
	return s.renderBlockDevice(m, lv), nil
}

// createLV adds a logical volume (size ignored when !haveSize: all the free
// space).
func (s *Server) createLV(m *machine, vg *volumeGroup, name string, size int64, haveSize bool, uuid string) (*blockDevice, *apiError) {
	if !haveSize {
		size = m.vgFree(vg, nil)
	}
	size = roundDown(size, partitionAlignment)
	if size > m.vgFree(vg, nil) {
		return nil, formError("__all__", "There is not enough free space (%s) on volume group %s.", humanBytes(size), vg.Name)
	}
	// MAAS keeps a logical volume's own name unique on the machine.
	for _, o := range m.VolumeGroups {
		for _, lv := range m.logicalVolumes(o) {
			if lv.Name == o.Name+"-"+name {
				return nil, formError("__all__", nameTakenMsg)
			}
		}
	}
	if m.nameTaken(vg.Name+"-"+name, nil) {
		return nil, formError("__all__", nameTakenMsg)
	}
	if uuid == "" {
		uuid = s.newUUID()
	}
	lv := &blockDevice{ID: s.nextID(), Name: vg.Name + "-" + name, Type: "virtual", Size: size,
		BlockSize: lvBlockSize, UUID: uuid, VGID: vg.ID}
	m.BlockDevices = append(m.BlockDevices, lv)
	return lv, nil
}

// volumeGroupDeleteLV answers 204 even when the logical volume does not
// exist, as MAAS does.
func (s *Server) volumeGroupDeleteLV(m *machine, vg *volumeGroup, req *request) (any, *apiError) {
	if err := requireReady(m, "Cannot delete logical volume because the machine is not Ready."); err != nil {
		return nil, err
	}
	if !req.form.has("id") {
		return nil, plainBadRequest("No provided id!")
	}
	for _, lv := range m.logicalVolumes(vg) {
		if strconv.Itoa(lv.ID) == req.form.get("id") {
			m.removeBlockDevice(lv)
		}
	}
	return nil, nil
}
