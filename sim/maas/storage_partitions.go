package maas

// Partitions: /nodes/{system_id}/blockdevices/{device_id}/partitions/ and
// .../partition/{id} (MAAS's PartitionsHandler and PartitionHandler).

func (s *Server) partitionsRead(m *machine, b *blockDevice, _ *request) (any, *apiError) {
	out := []any{}
	for _, p := range b.Partitions {
		out = append(out, s.renderPartition(m, b, p))
	}
	return out, nil
}

// partitionsCreate is AddPartitionForm and PartitionTable.add_partition:
// the size (bytes, default: the rest of the device) is aligned down to
// 4 MiB and must fit in the free space; the device gets a GPT partition
// table if it has none.
func (s *Server) partitionsCreate(m *machine, b *blockDevice, req *request) (any, *apiError) {
	if err := requireReady(m, "Cannot create partition because the node is not Ready."); err != nil {
		return nil, err
	}
	f := req.form
	errs := formErrors{}
	size, haveSize := bytesField(f, errs, "size", false, minPartitionSize, b.Size)
	if e := errs.err(); e != nil {
		return nil, e
	}
	if b.Type == "virtual" {
		return nil, formError("block_device", "Cannot create a partition table on a logical volume.")
	}
	if b.FS != nil {
		// MAAS does not check this; a partition table under a filesystem
		// cannot be deployed, so the simulator refuses it.
		return nil, formError("__all__", "Cannot create a partition table on a formatted block device.")
	}
	p, err := s.addPartition(b, size, haveSize, boolField(f, "bootable"), f.get("uuid"))
	if err != nil {
		return nil, err
	}
	return s.renderPartition(m, b, p), nil
}

// addPartition adds a partition (size 0 and !haveSize: all the free space).
func (s *Server) addPartition(b *blockDevice, size int64, haveSize, bootable bool, uuid string) (*partition, *apiError) {
	if !haveSize {
		size = ptAvailable(b, nil)
	}
	size = roundDown(size, partitionAlignment)
	if size < minPartitionSize {
		return nil, formError("size", "Ensure this value is greater than or equal to %d.", minPartitionSize)
	}
	if avail := ptAvailable(b, nil); avail < size {
		// MAAS lets a partition one block too large through, one block smaller.
		if avail < size-int64(b.BlockSize) {
			return nil, formError("size", "Partition cannot be saved; not enough free space on the block device.")
		}
		size -= int64(b.BlockSize)
	}
	if b.PTType == "" {
		b.PTType = "GPT"
	}
	index := 0
	for _, o := range b.Partitions {
		index = max(index, o.Index)
	}
	if uuid == "" {
		uuid = s.newUUID()
	}
	p := &partition{ID: s.nextID(), UUID: uuid, Size: size, Bootable: bootable, Index: index + 1}
	b.Partitions = append(b.Partitions, p)
	return p, nil
}

func (s *Server) partitionRead(m *machine, b *blockDevice, p *partition, _ *request) (any, *apiError) {
	return s.renderPartition(m, b, p), nil
}

func (s *Server) partitionDelete(m *machine, b *blockDevice, p *partition, _ *request) (any, *apiError) {
	if err := requireReady(m, "Cannot delete block device because the node is not Ready."); err != nil {
		return nil, err
	}
	if p.isPV() {
		return nil, plainBadRequest("Cannot delete partition because its part of a volume group.")
	}
	out := b.Partitions[:0]
	for _, o := range b.Partitions {
		if o != p {
			out = append(out, o)
		}
	}
	b.Partitions = out // the (now maybe empty) partition table stays
	return nil, nil
}

func (s *Server) partitionFormat(m *machine, b *blockDevice, p *partition, req *request) (any, *apiError) {
	if err := requireReadyOrAllocated(m, "partition", "node", "format"); err != nil {
		return nil, err
	}
	fs, err := s.newFilesystem(req.form)
	if err != nil {
		return nil, err
	}
	if p.FS != nil && !contains(formatTypes, p.FS.FSType) {
		return nil, plainBadRequest("Cannot format a partition that has a filesystem type of %s.", p.FS.FSType)
	}
	p.FS = fs
	return s.renderPartition(m, b, p), nil
}

func (s *Server) partitionUnformat(m *machine, b *blockDevice, p *partition, _ *request) (any, *apiError) {
	if err := requireReadyOrAllocated(m, "partition", "node", "unformat"); err != nil {
		return nil, err
	}
	if err := unformatCheck(p.FS, "partition"); err != nil {
		return nil, err
	}
	p.FS = nil
	return s.renderPartition(m, b, p), nil
}

func (s *Server) partitionMount(m *machine, b *blockDevice, p *partition, req *request) (any, *apiError) {
	if err := requireReadyOrAllocated(m, "partition", "node", "mount"); err != nil {
		return nil, err
	}
	if err := mountFilesystem(m, p.FS, req.form); err != nil {
		return nil, err
	}
	return s.renderPartition(m, b, p), nil
}

func (s *Server) partitionUnmount(m *machine, b *blockDevice, p *partition, _ *request) (any, *apiError) {
	if err := requireReadyOrAllocated(m, "partition", "node", "unmount"); err != nil {
		return nil, err
	}
	if err := unmountCheck(p.FS, "partition"); err != nil {
		return nil, err
	}
	p.FS.MountPoint, p.FS.MountOptions = "", ""
	return s.renderPartition(m, b, p), nil
}

// Partition tags: MAAS checks no machine state for these.

func (s *Server) partitionAddTag(m *machine, b *blockDevice, p *partition, req *request) (any, *apiError) {
	t, err := tagParam(req)
	if err != nil {
		return nil, err
	}
	p.Tags = appendTagOnce(p.Tags, t)
	return s.renderPartition(m, b, p), nil
}

func (s *Server) partitionRemoveTag(m *machine, b *blockDevice, p *partition, req *request) (any, *apiError) {
	t, err := tagParam(req)
	if err != nil {
		return nil, err
	}
	p.Tags = removeString(p.Tags, t)
	return s.renderPartition(m, b, p), nil
}
