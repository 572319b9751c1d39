package maas

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// routesStorage registers block devices, partitions, volume groups,
// logical volumes, node devices and storage layouts, at MAAS's paths:
//
//	/nodes/{system_id}/blockdevices/[{id}/]
//	/nodes/{system_id}/blockdevices/{device_id}/partitions/
//	/nodes/{system_id}/blockdevices/{device_id}/partition[s]/{id}   (MAAS's URI has no trailing slash)
//	/nodes/{system_id}/volume-groups/
//	/nodes/{system_id}/volume-group[s]/{id}/
//	/nodes/{system_id}/devices/[{id}/]                                (node devices, MAAS 3.x)
//	/machines/{system_id}/?op=set_storage_layout
//
// Which machine states allow which change follows MAAS's handlers: most
// changes need a Ready machine; format, unformat, mount and unmount are also
// allowed on an Allocated one.
func (s *Server) routesStorage() {
	s.handle("POST", "/machines/", "clone", (*Server).machinesClone) // storage_clone.go
	const bds = "/nodes/{system_id}/blockdevices/"
	s.handle("GET", bds, "", s.withMachine((*Server).blockDevicesRead))
	s.handle("POST", bds, "", s.withMachine((*Server).blockDevicesCreate))

	const bd = bds + "{id}/"
	s.handle("GET", bd, "", s.withBlockDevice("id", (*Server).blockDeviceRead))
	s.handle("PUT", bd, "", s.withBlockDevice("id", (*Server).blockDeviceUpdate))
	s.handle("DELETE", bd, "", s.withBlockDevice("id", (*Server).blockDeviceDelete))
	for op, fn := range map[string]blockDeviceHandler{
		"format": (*Server).blockDeviceFormat, "unformat": (*Server).blockDeviceUnformat,
		"mount": (*Server).blockDeviceMount, "unmount": (*Server).blockDeviceUnmount,
		"set_boot_disk": (*Server).blockDeviceSetBootDisk,
		"add_tag":       (*Server).blockDeviceAddTag, "remove_tag": (*Server).blockDeviceRemoveTag,
	} {
		s.handle("POST", bd, op, s.withBlockDevice("id", fn))
	}

	const parts = bds + "{device_id}/partitions/"
	s.handle("GET", parts, "", s.withBlockDevice("device_id", (*Server).partitionsRead))
	s.handle("POST", parts, "", s.withBlockDevice("device_id", (*Server).partitionsCreate))
	for _, seg := range []string{"partition", "partitions"} {
		p := bds + "{device_id}/" + seg + "/{id}/"
		s.handle("GET", p, "", s.withPartition((*Server).partitionRead))
		s.handle("DELETE", p, "", s.withPartition((*Server).partitionDelete))
		for op, fn := range map[string]partitionHandler{
			"format": (*Server).partitionFormat, "unformat": (*Server).partitionUnformat,
			"mount": (*Server).partitionMount, "unmount": (*Server).partitionUnmount,
			"add_tag": (*Server).partitionAddTag, "remove_tag": (*Server).partitionRemoveTag,
		} {
			s.handle("POST", p, op, s.withPartition(fn))
		}
	}

	const vgs = "/nodes/{system_id}/volume-groups/"
	s.handle("GET", vgs, "", s.withMachine((*Server).volumeGroupsRead))
	s.handle("POST", vgs, "", s.withMachine((*Server).volumeGroupsCreate))
	for _, seg := range []string{"volume-group", "volume-groups"} {
		vg := "/nodes/{system_id}/" + seg + "/{id}/"
		s.handle("GET", vg, "", s.withVolumeGroup((*Server).volumeGroupRead))
		s.handle("PUT", vg, "", s.withVolumeGroup((*Server).volumeGroupUpdate))
		s.handle("DELETE", vg, "", s.withVolumeGroup((*Server).volumeGroupDelete))
		s.handle("POST", vg, "create_logical_volume", s.withVolumeGroup((*Server).volumeGroupCreateLV))
		s.handle("POST", vg, "delete_logical_volume", s.withVolumeGroup((*Server).volumeGroupDeleteLV))
	}

	// Node devices are not in the machine's JSON: reading them (and
	// syncing them with the hardware) leaves its kept JSON current.
	s.handle("GET", "/nodes/{system_id}/devices/", "", s.readMachine((*Server).nodeDevicesRead))
	s.handle("GET", "/nodes/{system_id}/devices/{id}/", "", s.readMachine((*Server).nodeDeviceRead))

	s.handle("POST", "/machines/{system_id}/", "set_storage_layout", s.withMachineParts(partDisks, (*Server).opSetStorageLayout))
}

// Lookups, each under the lock (withMachine holds it).

type blockDeviceHandler func(s *Server, m *machine, b *blockDevice, req *request) (any, *apiError)

type partitionHandler func(s *Server, m *machine, b *blockDevice, p *partition, req *request) (any, *apiError)

type volumeGroupHandler func(s *Server, m *machine, vg *volumeGroup, req *request) (any, *apiError)

// withBlockDevice finds the block device named by the path parameter key,
// by id or by name, as MAAS's get_block_device_or_404 does.
func (s *Server) withBlockDevice(key string, fn blockDeviceHandler) handler {
	return s.withMachine(func(s *Server, m *machine, req *request) (any, *apiError) {
		b := m.findBlockDevice(req.params[key])
		if b == nil {
			return nil, notFound("BlockDevice")
		}
		return fn(s, m, b, req)
	})
}

func (m *machine) findBlockDevice(idOrName string) *blockDevice {
	id, err := strconv.Atoi(idOrName)
	for _, b := range m.BlockDevices {
		if (err == nil && b.ID == id) || (err != nil && b.Name == idOrName) {
			return b
		}
	}
	return nil
}

// withPartition finds the partition by id, or by name (sda-part2), on the
// device that has a partition table.
func (s *Server) withPartition(fn partitionHandler) handler {
	return s.withBlockDevice("device_id", func(s *Server, m *machine, b *blockDevice, req *request) (any, *apiError) {
		if b.PTType == "" {
			return nil, notFound("PartitionTable")
		}
		p := b.findPartition(req.params["id"])
		if p == nil {
			return nil, notFound("Partition")
		}
		return fn(s, m, b, p, req)
	})
}

func (b *blockDevice) findPartition(idOrName string) *partition {
	if id, err := strconv.Atoi(idOrName); err == nil {
		for _, p := range b.Partitions {
			if p.ID == id {
				return p
			}
		}
		return nil
	}
	dev, idx, ok := strings.Cut(idOrName, "-part")
	n, err := strconv.Atoi(idx)
	if !ok || err != nil || dev != b.Name {
		return nil
	}
	for _, p := range b.Partitions {
		if p.Index == n {
			return p
		}
	}
	return nil
}

func (s *Server) withVolumeGroup(fn volumeGroupHandler) handler {
	return s.withMachine(func(s *Server, m *machine, req *request) (any, *apiError) {
		id, err := strconv.Atoi(req.params["id"])
		var vg *volumeGroup
		if err == nil {
			vg = m.volumeGroup(id)
		}
		if vg == nil {
			return nil, notFound("VolumeGroup")
		}
		return fn(s, m, vg, req)
	})
}

// State guards, with MAAS's messages (NodeStateViolation: 409).

func requireReady(m *machine, msg string) *apiError {
	if m.Status != StatusReady {
		return conflict("%s", msg)
	}
	return nil
}

// requireReadyOrAllocated is raise_error_for_invalid_state_on_allocated_operations
// of MAAS's block device and partition handlers.
func requireReadyOrAllocated(m *machine, what, noun, op string) *apiError {
	if m.Status != StatusReady && m.Status != StatusAllocated {
		return conflict("Cannot %s %s because the %s is not Ready or Allocated.", op, what, noun)
	}
	return nil
}

// Form handling, with Django's messages.

// formErrors collects field errors; MAAS answers them as a JSON object of
// lists (non-field errors under "__all__").
type formErrors map[string][]string

func (e formErrors) add(field, format string, args ...any) {
	e[field] = append(e[field], fmt.Sprintf(format, args...))
}

func (e formErrors) err() *apiError {
	if len(e) == 0 {
		return nil
	}
	return &apiError{status: http.StatusBadRequest, fields: e}
}

// formError is a single validation error as JSON ({"field": ["msg"]}).
func formError(field, format string, args ...any) *apiError {
	return badRequest(field, format, args...)
}

// plainBadRequest is a 400 with a plain-text message (MAASAPIBadRequest, or
// a Django ValidationError without fields).
func plainBadRequest(format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, format, args...)
}

var bytesRE = regexp.MustCompile(`^-?[0-9]+([KkMmGgTtPpEe])?$`)

// bytesField is MAAS's BytesField: an integer with an optional SI suffix
// (K, M, G, T, P, E: powers of 1000). ok is false when the field is absent
// or empty (or invalid: errs then has the message).
func bytesField(f formValues, errs formErrors, key string, required bool, min, max int64) (n int64, ok bool) {
	v := strings.TrimSpace(f.get(key))
	if v == "" {
		if required {
			errs.add(key, "This field is required.")
		}
		return 0, false
	}
	n, valid := parseBytes(v)
	if !valid {
		errs.add(key, "Enter a valid value.")
		return 0, false
	}
	if min > 0 && n < min {
		errs.add(key, "Ensure this value is greater than or equal to %d.", min)
		return 0, false
	}
	if max > 0 && n > max {
		errs.add(key, "Ensure this value is less than or equal to %d.", max)
		return 0, false
	}
	return n, true
}

// parseBytes is machine_readable_bytes.
func parseBytes(v string) (int64, bool) {
	if !bytesRE.MatchString(v) {
		return 0, false
	}
	mult := int64(1)
	switch strings.ToUpper(v[len(v)-1:]) {
	case "K":
		mult = 1e3
	case "M":
		mult = 1e6
	case "G":
		mult = 1e9
	case "T":
		mult = 1e12
	case "P":
		mult = 1e15
	case "E":
		mult = 1e18
	}
	if mult != 1 {
		v = v[:len(v)-1]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false
	}
	return n * mult, true
}

// boolField is Django's BooleanField: "false" and "0" (and absence) are
// false, anything else is true.
func boolField(f formValues, key string) bool {
	v := strings.ToLower(strings.TrimSpace(f.get(key)))
	return v != "" && v != "false" && v != "0"
}

var absPathRE = regexp.MustCompile(`^(?:/[^/]*)*$`)

// newUUID returns a random (version 4) UUID from the seeded source.
func (s *Server) newUUID() string {
	b := make([]byte, 16)
	for i := range b {
		b[i] = byte(s.rnd.Intn(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// sortedBlockDevices lists a machine's block devices by id, as MAAS does.
func (m *machine) sortedBlockDevices() []*blockDevice {
	out := append([]*blockDevice(nil), m.BlockDevices...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// nameTaken reports whether another block device of the machine has the
// name (MAAS: unique together with the node).
func (m *machine) nameTaken(name string, except *blockDevice) bool {
	for _, b := range m.BlockDevices {
		if b != except && b.Name == name {
			return true
		}
	}
	return false
}

const nameTakenMsg = "Block device with this Node config and Name already exists."

// mountedAt finds the filesystem of the machine mounted at a path.
func (m *machine) mountedAt(path string) *filesystem {
	for _, b := range m.BlockDevices {
		if b.FS != nil && b.FS.MountPoint == path {
			return b.FS
		}
		for _, p := range b.Partitions {
			if p.FS != nil && p.FS.MountPoint == path {
				return p.FS
			}
		}
	}
	return nil
}

// Filesystems: the format, mount, unmount and unformat logic shared by
// block devices and partitions.

// formatTypes are FILESYSTEM_FORMAT_TYPE_CHOICES: what a user may format with.
var formatTypes = []string{"ext2", "ext4", "xfs", "fat32", "vfat", "swap", "ramfs", "tmpfs", "btrfs", "zfsroot"}

// newFilesystem validates a format request (FormatBlockDeviceForm,
// FormatPartitionForm) and returns the new filesystem.
func (s *Server) newFilesystem(f formValues) (*filesystem, *apiError) {
	errs := formErrors{}
	fstype := f.get("fstype")
	switch {
	case fstype == "":
		errs.add("fstype", "This field is required.")
	case !contains(formatTypes, fstype):
		errs.add("fstype", "Select a valid choice. %s is not one of the available choices.", fstype)
	}
	if e := errs.err(); e != nil {
		return nil, e
	}
	if fstype == "ramfs" || fstype == "tmpfs" {
		// Filesystem.clean: these need no storage and must be mounted.
		return nil, formError("__all__", "Virtual filesystems must be mounted.")
	}
	uuid := f.get("uuid")
	if uuid == "" {
		uuid = s.newUUID()
	}
	return &filesystem{FSType: fstype, UUID: uuid, Label: f.get("label")}, nil
}

// mountFilesystem is MountFilesystemForm and Filesystem.clean.
func mountFilesystem(m *machine, fs *filesystem, f formValues) *apiError {
	if fs == nil {
		return formError("__all__", "Cannot mount an unformatted partition or block device.")
	}
	errs := formErrors{}
	usesMountPoint := fs.FSType != "swap"
	mp := f.get("mount_point")
	if usesMountPoint {
		switch {
		case mp == "":
			errs.add("mount_point", "This field is required.")
		case !absPathRE.MatchString(mp) || len(mp) > 4095:
			errs.add("mount_point", "Enter a valid value.")
		}
	}
	if fs.FSType == fsLVMPV {
		errs.add("__all__", "Filesystem is part of a filesystem group, and cannot be mounted.")
	}
	if e := errs.err(); e != nil {
		return e
	}
	if !usesMountPoint {
		mp = "none" // e.g. swap
	} else if o := m.mountedAt(mp); o != nil && o != fs {
		return formError("__all__", "Another filesystem is already mounted at %s.", mp)
	}
	fs.MountPoint, fs.MountOptions = mp, f.get("mount_options")
	return nil
}

// unformatCheck is the unformat op's checks; what is "block device" or
// "partition".
func unformatCheck(fs *filesystem, what string) *apiError {
	switch {
	case fs == nil:
		return plainBadRequest("%s is not formatted.", upperFirst(what))
	case fs.MountPoint != "":
		return plainBadRequest("Filesystem is mounted and cannot be unformatted. Unmount the filesystem before unformatting the %s.", what)
	case fs.FSType == fsLVMPV:
		return plainBadRequest("Filesystem is part of a volume group, and cannot be unformatted. Remove %s from volume group before unformatting the %s.", what, what)
	}
	return nil
}

func unmountCheck(fs *filesystem, what string) *apiError {
	switch {
	case fs == nil:
		return plainBadRequest("%s is not formatted.", upperFirst(what))
	case fs.MountPoint == "":
		return plainBadRequest("Filesystem is already unmounted.")
	}
	return nil
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// tagParam is get_mandatory_param(request.POST, "tag").
func tagParam(req *request) (string, *apiError) {
	if !req.form.has("tag") {
		return "", plainBadRequest("No provided tag!")
	}
	return req.form.get("tag"), nil
}

func appendTagOnce(tags []string, t string) []string {
	if contains(tags, t) {
		return tags
	}
	return append(tags, t)
}
