package maas

import (
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/internal/jsonenc"
)

// A machine's JSON, field by field. renderMachine built a map of its 81
// fields and appendJSON encoded it, sorting the keys: for every machine
// answered (a read, a write's answer, a listing's stale entry) a map
// allocated, 81 values boxed, and some 250 lookups by key. The fields
// are now a table in the order appendJSON sorts them: renderMachine
// makes its map from it, and appendMachine encodes a machine from it
// directly, constants encoded once. The tests check every cached
// rendering against appendJSON(renderMachine(m)) (verifyListingCache),
// so the two agree byte for byte.

// machineView is what a machine's fields are rendered from: the machine
// and the parts several fields share, computed once.
type machineView struct {
	s                      *Server
	m                      *machine
	ifaces                 []any
	boot                   any
	ips                    []string
	physical, all, virtual []any
	storage                float64
	bootDisk               any
	z                      *zone
	p                      *pool
	d                      *domain
	tags                   []string
	ownerData              map[string]string
}

func (s *Server) viewOf(m *machine) *machineView {
	v := &machineView{s: s, m: m, tags: m.Tags, ownerData: m.OwnerData}
	v.ifaces, v.boot, v.ips = s.machineIfaces(m)                            // render_parts.go
	v.physical, v.all, v.virtual, v.storage, v.bootDisk = s.machineDisks(m) // render_parts.go
	v.z, v.p, v.d = s.machinePlace(m)
	if v.tags == nil {
		v.tags = []string{}
	}
	if v.ownerData == nil {
		v.ownerData = map[string]string{}
	}
	return v
}

// machineField is one field: its value from the view, or a constant.
type machineField struct {
	key   string
	val   func(v *machineView) any // nil: the constant
	c     any
	head  []byte // `"key":`, encoded once
	raw   []byte // a constant's value, encoded once
	comma bool   // not the first: a comma before it
}

func constField(key string, c any) machineField { return machineField{key: key, c: c} }

func field(key string, val func(v *machineView) any) machineField {
	return machineField{key: key, val: val}
}

// machineFields are the fields of renderMachine, sorted by key as
// appendJSON writes a map.
var machineFields = sortedFields(
	field("system_id", func(v *machineView) any { return v.m.SystemID }),
	field("hostname", func(v *machineView) any { return v.m.Hostname }),
	field("fqdn", func(v *machineView) any { return v.m.fqdn() }),
	field("description", func(v *machineView) any { return v.m.Description }),
	field("domain", func(v *machineView) any { return v.s.renderDomain(v.d) }),
	field("status", func(v *machineView) any { return v.m.Status }),
	field("status_name", func(v *machineView) any { return StatusName(v.m.Status) }),
	field("status_message", func(v *machineView) any { return nilIfEmpty(v.m.StatusMessage) }),
	constField("status_action", ""),
	field("owner", func(v *machineView) any { return nilIfEmpty(v.m.Owner) }),
	field("owner_data", func(v *machineView) any { return v.ownerData }),
	field("tag_names", func(v *machineView) any { return v.tags }),
	field("zone", func(v *machineView) any { return v.s.renderZone(v.z) }),
	field("pool", func(v *machineView) any { return v.s.renderPool(v.p) }),
	field("osystem", func(v *machineView) any { return v.m.OSystem }),
	field("distro_series", func(v *machineView) any { return v.m.DistroSeries }),
	field("hwe_kernel", func(v *machineView) any { return nilIfEmpty(v.m.HWEKernel) }),
	constField("min_hwe_kernel", ""),
	field("architecture", func(v *machineView) any { return nilIfEmpty(v.m.Arch) }),
	field("memory", func(v *machineView) any { return v.m.MemoryMiB }),
	field("cpu_count", func(v *machineView) any { return v.m.CPUCount }),
	field("cpu_speed", func(v *machineView) any { return cpuSpeed(v.m) }),
	field("storage", func(v *machineView) any { return v.storage }),
	field("ip_addresses", func(v *machineView) any { return v.ips }),
	field("power_state", func(v *machineView) any { return v.m.PowerState }),
	field("power_type", func(v *machineView) any { return v.m.PowerType }),
	field("boot_interface", func(v *machineView) any { return v.boot }),
	field("interface_set", func(v *machineView) any { return v.ifaces }),
	field("physicalblockdevice_set", func(v *machineView) any { return v.physical }),
	field("blockdevice_set", func(v *machineView) any { return v.all }),
	field("virtualblockdevice_set", func(v *machineView) any { return v.virtual }),
	field("volume_groups", func(v *machineView) any { return volumeGroupRefs(v.m) }),
	constField("raids", []any{}), constField("cache_sets", []any{}), constField("bcaches", []any{}),
	constField("special_filesystems", []any{}),
	field("hardware_info", func(v *machineView) any { return hardwareInfo(v.m) }), // hardware.go
	constField("node_type", 0), constField("node_type_name", "Machine"),
	field("locked", func(v *machineView) any { return v.m.Locked }),
	field("netboot", func(v *machineView) any { return v.m.Netboot }),
	constField("address_ttl", nil), constField("pod", nil), constField("swap_size", nil), constField("hardware_uuid", nil),
	constField("current_commissioning_result_id", nil), constField("current_testing_result_id", nil),
	constField("current_installation_result_id", nil),
	constField("commissioning_status", 2), constField("commissioning_status_name", "Passed"),
	constField("testing_status", -1), constField("testing_status_name", "None"),
	field("default_gateways", func(v *machineView) any { return v.s.defaultGateways(v.m) }),
	field("boot_disk", func(v *machineView) any { return v.bootDisk }),
	field("workload_annotations", func(v *machineView) any { return v.ownerData }),
	field("created", func(v *machineView) any { return v.m.Created.UTC().Format("2006-01-02T15:04:05.000") }),
	constField("last_sync", nil), constField("enable_hw_sync", false), constField("is_dpu", false),
	constField("ephemeral_deploy", false), constField("bios_boot_method", "pxe"), constField("disable_ipv4", false),
	constField("error_description", ""), constField("parent", nil), constField("virtualmachine_id", nil),
	constField("sync_interval", nil), constField("next_sync", nil), constField("enable_kernel_crash_dump", false),
	constField("cpu_test_status", -1), constField("cpu_test_status_name", "Unknown"),
	constField("memory_test_status", -1), constField("memory_test_status_name", "Unknown"),
	constField("network_test_status", -1), constField("network_test_status_name", "Unknown"),
	constField("storage_test_status", -1), constField("storage_test_status_name", "Unknown"),
	constField("other_test_status", -1), constField("other_test_status_name", "Unknown"),
	constField("interface_test_status", -1), constField("interface_test_status_name", "Unknown"),
	field("numanode_set", func(v *machineView) any { return renderNUMA(v.m) }),
	field("resource_uri", func(v *machineView) any { return uri("/machines/%s/", v.m.SystemID) }),
)

// sortedFields sorts the fields by key and encodes what is encoded once.
func sortedFields(fs ...machineField) []machineField {
	slices.SortFunc(fs, func(a, b machineField) int { return strings.Compare(a.key, b.key) })
	for i := range fs {
		f := &fs[i]
		if i > 0 && fs[i-1].key == f.key {
			panic("sim/maas: machine field " + f.key + " twice")
		}
		f.comma = i > 0
		f.head = append(jsonenc.AppendString(nil, f.key), ':')
		if f.val == nil {
			raw, err := appendJSON(nil, f.c)
			if err != nil {
				panic("sim/maas: machine field " + f.key + ": " + err.Error())
			}
			f.raw = raw
		}
	}
	return fs
}

// volumeGroupRefs is the machine's volume_groups: a reference to each.
func volumeGroupRefs(m *machine) []any {
	vgs := []any{}
	for _, g := range m.VolumeGroups {
		vgs = append(vgs, map[string]any{"system_id": m.SystemID, "id": g.ID, "__incomplete__": true})
	}
	return vgs
}

// renderMachine is the machine as GET /machines/{system_id}/ answers it.
func (s *Server) renderMachine(m *machine) map[string]any {
	v := s.viewOf(m)
	out := make(map[string]any, len(machineFields))
	for i := range machineFields {
		f := &machineFields[i]
		if f.val == nil {
			out[f.key] = f.c
		} else {
			out[f.key] = f.val(v)
		}
	}
	return out
}

// appendMachine appends appendJSON(renderMachine(m)) to b, the domain
// replaced by domain when it is not nil (domainMark, for the listing
// cache).
func (s *Server) appendMachine(b []byte, m *machine, domain rawJSON) ([]byte, error) {
	v := s.viewOf(m)
	b = append(b, '{')
	var err error
	for i := range machineFields {
		f := &machineFields[i]
		if f.comma {
			b = append(b, ',')
		}
		b = append(b, f.head...)
		switch {
		case f.val == nil:
			b = append(b, f.raw...)
		case domain != nil && f.key == "domain":
			b = append(b, domain...)
		default:
			if b, err = appendJSON(b, f.val(v)); err != nil {
				return b, err
			}
		}
	}
	return append(b, '}'), nil
}
