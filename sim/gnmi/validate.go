package gnmi

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// The switch's configuration as the target checks it after each Set:
// the tree read into types, then the rules a switch keeps (ports are
// physical, VLANs within range and, when strict, created; a LAG member
// names a LAG; enumerations as the models give them).

type ifaceModel struct {
	name        string
	enabled     bool
	mtu         int
	mode        string // ACCESS | TRUNK | ""
	access      int
	native      int
	trunk       []int
	aggregateID string
	lagType     string // LACP | STATIC for a LAG interface
	isLAG       bool
	description string
}

type lacpModel struct {
	interval string
	mode     string
}

type model struct {
	ifaces map[string]*ifaceModel
	vlans  map[int]bool
	lacp   map[string]lacpModel
}

// object is the member name of m as an object (nil when absent).
func object(m map[string]any, name string) (map[string]any, error) {
	v, ok := m[name]
	if !ok || v == nil {
		return nil, nil
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s must be a container", name)
	}
	return o, nil
}

// path walks nested containers (nil when one is absent).
func path(m map[string]any, names ...string) (map[string]any, error) {
	for _, n := range names {
		if m == nil {
			return nil, nil
		}
		var err error
		if m, err = object(m, n); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func list(m map[string]any, name string) ([]map[string]any, error) {
	if m == nil || m[name] == nil {
		return nil, nil
	}
	l, ok := m[name].([]any)
	if !ok {
		return nil, fmt.Errorf("%s must be a list", name)
	}
	out := make([]map[string]any, 0, len(l))
	for _, e := range l {
		o, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s entries must be objects", name)
		}
		out = append(out, o)
	}
	return out, nil
}

// integer reads a whole number leaf (JSON number, or a decimal string
// as JSON_IETF writes 64-bit numbers); absent is 0.
func integer(m map[string]any, name string) (int, error) {
	switch v := m[name].(type) {
	case nil:
		return 0, nil
	case float64:
		if v != math.Trunc(v) || v < 0 || v > math.MaxInt32 {
			return 0, fmt.Errorf("%s %v is not a whole number in range", name, v)
		}
		return int(v), nil
	case string:
		var n int
		if _, err := fmt.Sscanf(v, "%d", &n); err != nil || fmt.Sprint(n) != v || n < 0 {
			return 0, fmt.Errorf("%s %q is not a number", name, v)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s %v is not a number", name, m[name])
}

func text(m map[string]any, name string) (string, error) {
	switch v := m[name].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	}
	return "", fmt.Errorf("%s %v is not a string", name, m[name])
}

// ident reads an enumeration or identity leaf, its module prefix dropped.
func ident(m map[string]any, name string) (string, error) {
	s, err := text(m, name)
	return stripPrefix(s), err
}

func boolean(m map[string]any, name string, def bool) (bool, error) {
	switch v := m[name].(type) {
	case nil:
		return def, nil
	case bool:
		return v, nil
	}
	return false, fmt.Errorf("%s %v is not a boolean", name, m[name])
}

// parseModel reads the tree into a model, checking the leaves' types.
func parseModel(tree map[string]any) (model, error) {
	m := model{ifaces: map[string]*ifaceModel{}, vlans: map[int]bool{}, lacp: map[string]lacpModel{}}
	ifs, err := path(tree, "interfaces")
	if err != nil {
		return m, err
	}
	entries, err := list(ifs, "interface")
	if err != nil {
		return m, err
	}
	for _, e := range entries {
		im, err := parseIface(e)
		if err != nil {
			return m, err
		}
		m.ifaces[im.name] = im
	}
	if err := parseVLANs(tree, &m); err != nil {
		return m, err
	}
	return m, parseLACP(tree, &m)
}

func parseIface(e map[string]any) (*ifaceModel, error) {
	name, err := text(e, "name")
	if err != nil || name == "" {
		return nil, fmt.Errorf("an interface without a name")
	}
	fail := func(err error) (*ifaceModel, error) { return nil, fmt.Errorf("interface %s: %w", name, err) }
	im := &ifaceModel{name: name}
	cfg, err := object(e, "config")
	if err != nil {
		return fail(err)
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	if im.enabled, err = boolean(cfg, "enabled", true); err != nil {
		return fail(err)
	}
	if im.mtu, err = integer(cfg, "mtu"); err != nil {
		return fail(err)
	}
	if im.description, err = text(cfg, "description"); err != nil {
		return fail(err)
	}
	typ, err := ident(cfg, "type")
	if err != nil {
		return fail(err)
	}
	if err := parseSwitching(e, im, typ); err != nil {
		return fail(err)
	}
	return im, nil
}

// parseSwitching reads the ethernet (member, VLANs) and aggregation
// (LAG) parts of an interface.
func parseSwitching(e map[string]any, im *ifaceModel, typ string) error {
	eth, err := path(e, "ethernet", "config")
	if err != nil {
		return err
	}
	if eth != nil {
		if im.aggregateID, err = text(eth, "aggregate-id"); err != nil {
			return err
		}
	}
	agg, err := object(e, "aggregation")
	if err != nil {
		return err
	}
	im.isLAG = agg != nil || typ == "ieee8023adLag"
	vlanParent := "ethernet"
	if im.isLAG {
		vlanParent = "aggregation"
		aggCfg, err := path(agg, "config")
		if err != nil {
			return err
		}
		if im.lagType, err = ident(aggCfg, "lag-type"); err != nil {
			return err
		}
	}
	sv, err := path(e, vlanParent, "switched-vlan", "config")
	if err != nil || sv == nil {
		return err
	}
	return parseSwitchedVLAN(sv, im)
}

func parseSwitchedVLAN(sv map[string]any, im *ifaceModel) error {
	var err error
	if im.mode, err = ident(sv, "interface-mode"); err != nil {
		return err
	}
	if im.access, err = integer(sv, "access-vlan"); err != nil {
		return err
	}
	if im.native, err = integer(sv, "native-vlan"); err != nil {
		return err
	}
	tv, ok := sv["trunk-vlans"]
	if !ok || tv == nil {
		return nil
	}
	l, ok := tv.([]any)
	if !ok {
		return fmt.Errorf("trunk-vlans must be a leaf-list")
	}
	for _, v := range l {
		n, err := integer(map[string]any{"trunk-vlans": v}, "trunk-vlans")
		if err != nil {
			return fmt.Errorf("%w (this target takes VLAN IDs, not ranges)", err)
		}
		im.trunk = append(im.trunk, n)
	}
	return nil
}

func parseVLANs(tree map[string]any, m *model) error {
	nis, err := path(tree, "network-instances")
	if err != nil {
		return err
	}
	insts, err := list(nis, "network-instance")
	if err != nil {
		return err
	}
	for _, ni := range insts {
		vl, err := path(ni, "vlans")
		if err != nil {
			return err
		}
		vlans, err := list(vl, "vlan")
		if err != nil {
			return err
		}
		for _, v := range vlans {
			id, err := integer(v, "vlan-id")
			if err != nil || id == 0 {
				return fmt.Errorf("a vlan without a vlan-id")
			}
			m.vlans[id] = true
		}
	}
	return nil
}

func parseLACP(tree map[string]any, m *model) error {
	ifs, err := path(tree, "lacp", "interfaces")
	if err != nil {
		return err
	}
	entries, err := list(ifs, "interface")
	if err != nil {
		return err
	}
	for _, e := range entries {
		name, err := text(e, "name")
		if err != nil || name == "" {
			return fmt.Errorf("a lacp interface without a name")
		}
		cfg, err := path(e, "config")
		if err != nil {
			return err
		}
		var l lacpModel
		if l.interval, err = ident(cfg, "interval"); err != nil {
			return err
		}
		if l.mode, err = ident(cfg, "lacp-mode"); err != nil {
			return err
		}
		m.lacp[name] = l
	}
	return nil
}

// check applies the switch's rules to m: ports names its physical
// ports.
func (m model) check(sw string, ports map[string]bool, maxVLAN int, strict bool) error {
	for _, name := range slices.Sorted(maps.Keys(m.ifaces)) {
		im := m.ifaces[name]
		if err := m.checkIface(sw, im, ports, maxVLAN, strict); err != nil {
			return err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(m.vlans)) {
		if id < 1 || id > maxVLAN {
			return fmt.Errorf("vlan %d is outside the range switch %s supports (1-%d)", id, sw, maxVLAN)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.lacp)) {
		l := m.lacp[name]
		if im := m.ifaces[name]; im == nil || !im.isLAG {
			return fmt.Errorf("lacp interface %s is no LAG interface of switch %s", name, sw)
		}
		if !oneOf(l.interval, "", "FAST", "SLOW") || !oneOf(l.mode, "", "ACTIVE", "PASSIVE") {
			return fmt.Errorf("lacp interface %s: interval %q or lacp-mode %q not FAST|SLOW, ACTIVE|PASSIVE", name, l.interval, l.mode)
		}
	}
	return nil
}

func (m model) checkIface(sw string, im *ifaceModel, ports map[string]bool, maxVLAN int, strict bool) error {
	switch {
	case !im.isLAG && !ports[im.name]:
		return fmt.Errorf("interface %s does not exist on switch %s (its ports are physical; a LAG interface needs aggregation)", im.name, sw)
	case im.mtu != 0 && (im.mtu < 68 || im.mtu > 9216):
		return fmt.Errorf("interface %s: mtu %d outside 68-9216", im.name, im.mtu)
	case !oneOf(im.mode, "", "ACCESS", "TRUNK"):
		return fmt.Errorf("interface %s: interface-mode %q is not ACCESS or TRUNK", im.name, im.mode)
	case im.isLAG && !oneOf(im.lagType, "", "LACP", "STATIC"):
		return fmt.Errorf("interface %s: lag-type %q is not LACP or STATIC", im.name, im.lagType)
	case im.aggregateID != "" && (m.ifaces[im.aggregateID] == nil || !m.ifaces[im.aggregateID].isLAG):
		return fmt.Errorf("interface %s: aggregate-id %s names no LAG interface of switch %s", im.name, im.aggregateID, sw)
	}
	for _, v := range im.carried() {
		if v < 1 || v > maxVLAN {
			return fmt.Errorf("vlan %d (interface %s) is outside the range switch %s supports (1-%d)", v, im.name, sw, maxVLAN)
		}
		if strict && !m.vlans[v] {
			return fmt.Errorf("vlan %d (interface %s) is not created on switch %s (create it under network-instances/network-instance[name=default]/vlans first)", v, im.name, sw)
		}
	}
	return nil
}

// carried are the VLANs the interface's switched-vlan config names.
func (im *ifaceModel) carried() []int {
	var out []int
	switch im.mode {
	case "ACCESS", "":
		if im.access != 0 {
			out = append(out, im.access)
		}
	case "TRUNK":
		if im.native != 0 {
			out = append(out, im.native)
		}
		out = append(out, im.trunk...)
	}
	return out
}

func oneOf(s string, options ...string) bool {
	return slices.Contains(options, strings.ToUpper(s)) && s == strings.ToUpper(s)
}
