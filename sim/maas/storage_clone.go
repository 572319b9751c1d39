package maas

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"
)

// POST /machines/?op=clone (MachinesHandler.clone, CloneForm and
// Node.set_storage_configuration_from_node, MAAS 3.x): the source's
// storage configuration copied onto each destination. Destinations must
// be Ready or Failed testing and able to take it (the disk mapping of
// Node._get_storage_mapping_between_nodes); one that cannot fails the
// whole request with 400 by field and nothing changes. The answer is 204
// No Content. The simulator clones storage only: interfaces=true is
// refused (docs/lab.md).
func (s *Server) machinesClone(req *request) (any, *apiError) {
	f := req.form
	storage, ifaces := paramTrue(f.get("storage")), paramTrue(f.get("interfaces"))
	if ifaces {
		return nil, errorf(http.StatusBadRequest, "The simulator clones storage only (interfaces=true is not implemented).")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := map[string][]string{}
	src := s.machines[f.get("source")]
	switch {
	case f.get("source") == "":
		errs["source"] = []string{"This field is required."}
	case src == nil:
		errs["source"] = []string{fmt.Sprintf("Select a valid choice. %s is not one of the available choices.", f.get("source"))}
	}
	if len(f["destinations"]) == 0 {
		errs["destinations"] = []string{"This field is required."}
	}
	if !storage {
		errs["__all__"] = []string{"Either storage or interfaces must be true."}
	}
	dests, maps := s.cloneTargets(src, f["destinations"], errs)
	if len(errs) > 0 {
		return nil, &apiError{status: http.StatusBadRequest, fields: errs}
	}
	for k, d := range dests {
		s.cloneStorage(d, src, maps[k])
		d.Updated = time.Now()
		s.touchParts(d, partDisks) // a one-machine write for each (listing.go oneMachineWrites), of its disks
	}
	return nil, nil
}

// cloneTargets validates the destinations against the source and answers
// them with their disk mappings; errors go into errs["destinations"].
func (s *Server) cloneTargets(src *machine, ids []string, errs map[string][]string) ([]*machine, []map[*blockDevice]*blockDevice) {
	var dests []*machine
	var maps []map[*blockDevice]*blockDevice
	bad := func(format string, args ...any) {
		errs["destinations"] = append(errs["destinations"], fmt.Sprintf(format, args...))
	}
	for i, id := range ids {
		d := s.machines[id]
		switch {
		case d == nil || (d.Status != StatusReady && d.Status != StatusFailedTesting):
			bad("Machine %d is invalid: Select a valid choice. %s is not one of the available choices.", i+1, id)
			continue
		case src == nil:
			continue
		case d == src:
			bad("Source machine %s cannot be a destination machine.", d.String())
			continue
		}
		mp, msg := storageMapping(d, src)
		if msg != "" {
			bad("%s is invalid: %s", d.String(), msg)
			continue
		}
		dests, maps = append(dests, d), append(maps, mp)
	}
	return dests, maps
}

// storageMapping maps the destination's physical disks to the source's:
// boot disk to boot disk (the destination's no smaller), then the others
// of identical size and tags, then by size with the same tags, then by
// size alone; "" or why the destination cannot take the source's storage.
func storageMapping(d, src *machine) (map[*blockDevice]*blockDevice, string) {
	if d.Arch != src.Arch {
		return nil, fmt.Sprintf("node architectures do not match (%s != %s)", d.Arch, src.Arch)
	}
	db, sb := d.bootDisk(), src.bootDisk()
	switch {
	case db == nil:
		return nil, "destination node has no physical block devices"
	case sb == nil:
		return nil, "source node has no physical block devices"
	case db.Size < sb.Size:
		return nil, fmt.Sprintf("destination boot disk(%s) is smaller than source boot disk(%s)", db.Name, sb.Name)
	}
	others := func(m *machine, boot *blockDevice) []*blockDevice {
		var out []*blockDevice
		for _, b := range m.BlockDevices {
			if b.Type == "physical" && b != boot {
				out = append(out, b)
			}
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
		return out
	}
	ds, ss := others(d, db), others(src, sb)
	if len(ds) < len(ss) {
		return nil, fmt.Sprintf("source node does not have enough physical block devices (%d < %d)", len(ds)+1, len(ss)+1)
	}
	mp := map[*blockDevice]*blockDevice{db: sb}
	sameTags := func(a, b *blockDevice) bool {
		x, y := slices.Clone(a.Tags), slices.Clone(b.Tags)
		slices.Sort(x)
		slices.Sort(y)
		return slices.Equal(slices.Compact(x), slices.Compact(y))
	}
	ds, ss = mapPass(mp, ds, ss, func(a, b *blockDevice) bool { return a.Size == b.Size && sameTags(a, b) })
	bySize := func(l []*blockDevice) {
		sort.SliceStable(l, func(i, j int) bool { return l[i].Size < l[j].Size })
	}
	bySize(ds)
	bySize(ss)
	ds, ss = mapPass(mp, ds, ss, func(a, b *blockDevice) bool { return a.Size >= b.Size && sameTags(a, b) })
	ds, _ = mapPass(mp, ds, ss, func(a, b *blockDevice) bool { return a.Size >= b.Size })
	if len(ds) > 0 {
		return nil, fmt.Sprintf("%d destination node physical block devices do not match the source nodes physical block devices", len(ds))
	}
	return mp, ""
}

// mapPass is one pass of the mapping: each destination disk takes the
// first source disk that ok accepts. It answers the disks left.
func mapPass(mp map[*blockDevice]*blockDevice, ds, ss []*blockDevice, ok func(a, b *blockDevice) bool) ([]*blockDevice, []*blockDevice) {
	var left []*blockDevice
	for _, d := range ds {
		k := slices.IndexFunc(ss, func(b *blockDevice) bool { return ok(d, b) })
		if k < 0 {
			left = append(left, d)
			continue
		}
		mp[d] = ss[k]
		ss = slices.Delete(slices.Clone(ss), k, k+1)
	}
	return left, ss
}

// cloneStorage replaces d's storage with a copy of src's through the disk
// mapping: partitions, filesystems (new UUIDs), volume groups and their
// logical volumes (new IDs, the same names and sizes).
func (s *Server) cloneStorage(d, src *machine, mp map[*blockDevice]*blockDevice) {
	d.clearStorage()
	vgs := map[int]int{} // the source's volume group ID → the copy's
	for _, vg := range src.VolumeGroups {
		c := &volumeGroup{ID: s.nextID(), Name: vg.Name, UUID: s.newUUID()}
		vgs[vg.ID] = c.ID
		d.VolumeGroups = append(d.VolumeGroups, c)
	}
	fsCopy := func(f *filesystem) *filesystem {
		c := copyFS(f)
		if c != nil && c.UUID != "" {
			c.UUID = s.newUUID()
		}
		return c
	}
	for _, db := range d.BlockDevices { // physical only, after clearStorage
		sb := mp[db]
		if sb == nil {
			continue
		}
		db.PTType, db.FS, db.VGID = sb.PTType, fsCopy(sb.FS), vgs[sb.VGID]
		for _, sp := range sb.Partitions {
			db.Partitions = append(db.Partitions, &partition{ID: s.nextID(), UUID: s.newUUID(), Size: sp.Size, Bootable: sp.Bootable,
				FS: fsCopy(sp.FS), VGID: vgs[sp.VGID], Index: sp.Index, Tags: slices.Clone(sp.Tags)})
		}
	}
	for _, sb := range src.BlockDevices {
		if sb.Type != "virtual" || vgs[sb.VGID] == 0 {
			continue
		}
		c := *sb
		c.ID, c.UUID, c.FS, c.VGID, c.Partitions, c.Tags = s.nextID(), s.newUUID(), fsCopy(sb.FS), vgs[sb.VGID], nil, slices.Clone(sb.Tags)
		d.BlockDevices = append(d.BlockDevices, &c)
	}
	d.StorageLayout = src.StorageLayout
}

// String is how MAAS names a node in messages (Node.__str__): its system
// ID and hostname.
func (m *machine) String() string {
	if m.Hostname == "" {
		return m.SystemID
	}
	return m.SystemID + " (" + m.Hostname + ")"
}
