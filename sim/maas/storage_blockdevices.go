package maas

// Block devices: /nodes/{system_id}/blockdevices/ (MAAS's BlockDevicesHandler
// and BlockDeviceHandler).

func (s *Server) blockDevicesRead(m *machine, _ *request) (any, *apiError) {
	out := []any{}
	for _, b := range m.sortedBlockDevices() {
		out = append(out, s.renderBlockDevice(m, b))
	}
	return out, nil
}

// blockDevicesCreate creates a physical block device
// (CreatePhysicalBlockDeviceForm). MAAS checks no machine state here.
func (s *Server) blockDevicesCreate(m *machine, req *request) (any, *apiError) {
	f := req.form
	errs := formErrors{}
	name := f.get("name")
	if name == "" {
		errs.add("name", "This field is required.")
	}
	size, _ := bytesField(f, errs, "size", true, minBlockDeviceSize, 0)
	blockSize, _ := bytesField(f, errs, "block_size", true, minBlockSize, 0)
	idPath := f.get("id_path")
	if idPath != "" && !absPathRE.MatchString(idPath) {
		errs.add("id_path", "Enter a valid value.")
	}
	if e := errs.err(); e != nil {
		return nil, e
	}
	model, serial := f.get("model"), f.get("serial")
	if idPath == "" && (model == "" || serial == "") {
		return nil, formError("__all__", "serial/model are required if id_path is not provided.")
	}
	if m.nameTaken(name, nil) {
		return nil, formError("__all__", nameTakenMsg)
	}
	b := &blockDevice{ID: s.nextID(), Name: name, Type: "physical", Model: model, Serial: serial,
		Size: size, BlockSize: int(blockSize), IDPath: idPath}
	m.BlockDevices = append(m.BlockDevices, b)
	return s.renderBlockDevice(m, b), nil
}

func (s *Server) blockDeviceRead(m *machine, b *blockDevice, _ *request) (any, *apiError) {
	return s.renderBlockDevice(m, b), nil
}

// blockDeviceUpdate: all fields on a Ready machine; on a Deployed one only
// the name, model, serial and id_path of a physical device (to replace a
// bad disk).
func (s *Server) blockDeviceUpdate(m *machine, b *blockDevice, req *request) (any, *apiError) {
	if m.Status != StatusReady && m.Status != StatusDeployed {
		return nil, conflict("Cannot update block device because the machine is not Ready.")
	}
	f := req.form
	if m.Status == StatusDeployed && b.Type != "physical" {
		return nil, conflict("Cannot update virtual block device because the machine is Deployed.")
	}
	errs := formErrors{}
	if p := f.get("id_path"); p != "" && !absPathRE.MatchString(p) {
		errs.add("id_path", "Enter a valid value.")
	}
	var bf blockDeviceForm
	if m.Status == StatusReady { // a Deployed machine's disks keep their geometry
		bf = readBlockDeviceGeometry(errs, b, f)
	}
	if e := errs.err(); e != nil {
		return nil, e
	}
	if b.Type == "virtual" {
		return s.updateLogicalVolume(m, b, f, bf.size, bf.haveSize)
	}
	if name := f.get("name"); name != "" {
		if m.nameTaken(name, b) {
			return nil, formError("__all__", nameTakenMsg)
		}
		b.Name = name
	}
	applyBlockDeviceForm(b, f, bf)
	return s.renderBlockDevice(m, b), nil
}

// blockDeviceForm is the geometry an update of a Ready machine's block
// device may change.
type blockDeviceForm struct {
	size, blockSize         int64
	haveSize, haveBlockSize bool
	ptType                  string
}

// readBlockDeviceGeometry reads size, block_size (physical disks only) and
// partition_table_type (of a disk that has a table).
func readBlockDeviceGeometry(errs formErrors, b *blockDevice, f formValues) blockDeviceForm {
	var bf blockDeviceForm
	bf.size, bf.haveSize = bytesField(f, errs, "size", false, minBlockDeviceSize, 0)
	if b.Type == "physical" {
		bf.blockSize, bf.haveBlockSize = bytesField(f, errs, "block_size", false, minBlockSize, 0)
	}
	switch bf.ptType = f.get("partition_table_type"); {
	case bf.ptType == "":
	case bf.ptType != "MBR" && bf.ptType != "GPT":
		errs.add("partition_table_type", "Select a valid choice. %s is not one of the available choices.", bf.ptType)
	case b.PTType == "":
		errs.add("partition_table_type", "Block device has no partition table")
	}
	return bf
}

// applyBlockDeviceForm sets a physical block device's descriptive fields
// and checked geometry.
func applyBlockDeviceForm(b *blockDevice, f formValues, bf blockDeviceForm) {
	if f.has("model") {
		b.Model = f.get("model")
	}
	if f.has("serial") {
		b.Serial = f.get("serial")
	}
	if f.has("id_path") {
		b.IDPath = f.get("id_path")
	}
	if bf.haveSize {
		b.Size = bf.size
	}
	if bf.haveBlockSize {
		b.BlockSize = int(bf.blockSize)
	}
	if bf.ptType != "" {
		b.PTType = bf.ptType
	}
}

// updateLogicalVolume is UpdateVirtualBlockDeviceForm for a logical volume:
// name, uuid and size (within the group's free space).
func (s *Server) updateLogicalVolume(m *machine, b *blockDevice, f formValues, size int64, haveSize bool) (any, *apiError) {
	vg := m.volumeGroup(b.VGID)
	if vg == nil {
		return nil, plainBadRequest("Logical volume %d has no volume group.", b.ID)
	}
	name := b.Name
	if n := f.get("name"); n != "" {
		name = vg.Name + "-" + n
		if m.nameTaken(name, b) {
			return nil, formError("__all__", nameTakenMsg)
		}
	}
	if haveSize {
		size = roundDown(size, partitionAlignment)
		if size > m.vgFree(vg, b) {
			return nil, formError("__all__", "There is not enough free space (%s) on volume group %s.", humanBytes(size), vg.Name)
		}
		b.Size = size
	}
	b.Name = name
	if u := f.get("uuid"); u != "" {
		b.UUID = u
	}
	return s.renderBlockDevice(m, b), nil
}

func (s *Server) blockDeviceDelete(m *machine, b *blockDevice, _ *request) (any, *apiError) {
	if err := requireReady(m, "Cannot delete block device because the machine is not Ready."); err != nil {
		return nil, err
	}
	inGroup := b.isPV()
	for _, p := range b.Partitions {
		inGroup = inGroup || p.isPV()
	}
	if inGroup {
		return nil, plainBadRequest("Cannot delete block device because its part of a volume group.")
	}
	m.removeBlockDevice(b)
	if m.BootDiskID == b.ID {
		m.BootDiskID = 0
	}
	return nil, nil
}

func (m *machine) removeBlockDevice(b *blockDevice) {
	out := m.BlockDevices[:0]
	for _, o := range m.BlockDevices {
		if o != b {
			out = append(out, o)
		}
	}
	m.BlockDevices = out
}

func (s *Server) blockDeviceAddTag(m *machine, b *blockDevice, req *request) (any, *apiError) {
	if err := requireReady(m, "Cannot update block device because the machine is not Ready."); err != nil {
		return nil, err
	}
	t, err := tagParam(req)
	if err != nil {
		return nil, err
	}
	b.Tags = appendTagOnce(b.Tags, t)
	return s.renderBlockDevice(m, b), nil
}

func (s *Server) blockDeviceRemoveTag(m *machine, b *blockDevice, req *request) (any, *apiError) {
	if err := requireReady(m, "Cannot update block device because the machine is not Ready."); err != nil {
		return nil, err
	}
	t, err := tagParam(req)
	if err != nil {
		return nil, err
	}
	b.Tags = removeString(b.Tags, t)
	return s.renderBlockDevice(m, b), nil
}

// blockDeviceFormat puts a filesystem on a whole device: not on one with a
// partition table, not on a physical volume, not on the boot disk.
func (s *Server) blockDeviceFormat(m *machine, b *blockDevice, req *request) (any, *apiError) {
	if err := requireReadyOrAllocated(m, "block device", "machine", "format"); err != nil {
		return nil, err
	}
	fs, err := s.newFilesystem(req.form)
	if err != nil {
		return nil, err
	}
	if b.PTType != "" {
		return nil, formError("__all__", "Cannot format block device with a partition table.")
	}
	if b.FS != nil && !contains(formatTypes, b.FS.FSType) {
		return nil, plainBadRequest("Cannot format a block device that has a filesystem type of %s.", b.FS.FSType)
	}
	if bd := m.bootDisk(); bd != nil && bd == b {
		return nil, formError("__all__", "Cannot place filesystem directly on the boot disk. Create a partition on the boot disk first and then format the partition.")
	}
	b.FS = fs
	return s.renderBlockDevice(m, b), nil
}

func (s *Server) blockDeviceUnformat(m *machine, b *blockDevice, _ *request) (any, *apiError) {
	if err := requireReadyOrAllocated(m, "block device", "machine", "unformat"); err != nil {
		return nil, err
	}
	if err := unformatCheck(b.FS, "block device"); err != nil {
		return nil, err
	}
	b.FS = nil
	return s.renderBlockDevice(m, b), nil
}

func (s *Server) blockDeviceMount(m *machine, b *blockDevice, req *request) (any, *apiError) {
	if err := requireReadyOrAllocated(m, "block device", "machine", "mount"); err != nil {
		return nil, err
	}
	if err := mountFilesystem(m, b.FS, req.form); err != nil {
		return nil, err
	}
	return s.renderBlockDevice(m, b), nil
}

func (s *Server) blockDeviceUnmount(m *machine, b *blockDevice, _ *request) (any, *apiError) {
	if err := requireReadyOrAllocated(m, "block device", "machine", "unmount"); err != nil {
		return nil, err
	}
	if err := unmountCheck(b.FS, "block device"); err != nil {
		return nil, err
	}
	b.FS.MountPoint, b.FS.MountOptions = "", ""
	return s.renderBlockDevice(m, b), nil
}

// blockDeviceSetBootDisk answers "OK" (piston's rc.ALL_OK), as MAAS does.
func (s *Server) blockDeviceSetBootDisk(m *machine, b *blockDevice, _ *request) (any, *apiError) {
	if err := requireReady(m, "Cannot set as boot disk because the machine is not Ready."); err != nil {
		return nil, err
	}
	if b.Type != "physical" {
		return nil, plainBadRequest("Cannot set a %s block device as the boot disk.", b.Type)
	}
	m.BootDiskID = b.ID
	return rawBody{contentType: "text/html; charset=utf-8", body: []byte("OK")}, nil
}
