package gnmi

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// What the driver reads of a switch: its interfaces, VLANs, LACP and
// LLDP, from the JSON_IETF values of one Get. A value of an unexpected
// shape reads as absent: the driver then sets what it wants.

// maxDepth bounds the nesting of a JSON value the driver reads.
const maxDepth = 64

// ifState is one interface as the switch reports it.
type ifState struct {
	name        string
	enabled     bool
	mtu         int
	mode        string // ACCESS | TRUNK | ""
	access      int
	native      int
	trunk       []int
	aggregateID string
	description string
	isLAG       bool
	lagType     string // LACP | STATIC
	operUp      bool
}

type lacpState struct{ interval, mode string }

// switchState is what one Get answered.
type switchState struct {
	ifaces map[string]*ifState
	vlans  map[int]bool
	lacp   map[string]lacpState
	lldp   map[string]*drivers.LLDPNeighbor
}

func newSwitchState() *switchState {
	return &switchState{ifaces: map[string]*ifState{}, vlans: map[int]bool{}, lacp: map[string]lacpState{},
		lldp: map[string]*drivers.LLDPNeighbor{}}
}

// decodeValue reads a JSON value with the module prefixes of its member
// names dropped.
func decodeValue(b []byte) (any, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	return unprefix(v, 0)
}

func unprefix(v any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			u, err := unprefix(c, depth+1)
			if err != nil {
				return nil, err
			}
			out[local(k)] = u
		}
		return out, nil
	case []any:
		for i, c := range t {
			u, err := unprefix(c, depth+1)
			if err != nil {
				return nil, err
			}
			t[i] = u
		}
	}
	return v, nil
}

// local drops a YANG module prefix (of a member name or an identity).
func local(s string) string {
	if i := strings.IndexByte(s, ':'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// obj walks objects by member names (nil when one is missing).
func obj(v any, names ...string) map[string]any {
	m, _ := v.(map[string]any)
	for _, n := range names {
		if m == nil {
			return nil
		}
		m, _ = m[n].(map[string]any)
	}
	return m
}

// entries are the objects of list name in m.
func entries(m map[string]any, name string) []map[string]any {
	l, _ := m[name].([]any)
	out := make([]map[string]any, 0, len(l))
	for _, e := range l {
		if o, ok := e.(map[string]any); ok {
			out = append(out, o)
		}
	}
	return out
}

func str(m map[string]any, name string) string {
	s, _ := m[name].(string)
	return s
}

// ident reads an enumeration or identity leaf, its module prefix dropped.
func ident(m map[string]any, name string) string { return local(str(m, name)) }

// num reads a whole number (a JSON number, or a decimal string as
// JSON_IETF writes 64-bit ones); anything else is 0.
func num(v any) int {
	switch t := v.(type) {
	case float64:
		if t == math.Trunc(t) && t >= 0 && t <= math.MaxInt32 {
			return int(t)
		}
	case string:
		if n, err := strconv.Atoi(t); err == nil && n >= 0 {
			return n
		}
	}
	return 0
}

// readInterfaces reads the value of /interfaces (or of its interface
// list) into s.
func (s *switchState) readInterfaces(v any) {
	m, _ := v.(map[string]any)
	if inner := obj(m, "interfaces"); inner != nil {
		m = inner
	}
	for _, e := range entries(m, "interface") {
		name := str(e, "name")
		if name == "" {
			continue
		}
		s.ifaces[name] = readInterface(name, e)
	}
}

func readInterface(name string, e map[string]any) *ifState {
	st := &ifState{name: name, enabled: true}
	cfg := obj(e, "config")
	if b, ok := cfg["enabled"].(bool); ok {
		st.enabled = b
	}
	st.mtu, st.description = num(cfg["mtu"]), str(cfg, "description")
	st.aggregateID = str(obj(e, "ethernet", "config"), "aggregate-id")
	st.operUp = ident(obj(e, "state"), "oper-status") == "UP"
	agg := obj(e, "aggregation")
	st.isLAG = agg != nil || ident(cfg, "type") == "ieee8023adLag"
	sv := obj(e, "ethernet", "switched-vlan", "config")
	if st.isLAG {
		st.lagType = ident(obj(agg, "config"), "lag-type")
		sv = obj(agg, "switched-vlan", "config")
	}
	st.mode, st.access, st.native = ident(sv, "interface-mode"), num(sv["access-vlan"]), num(sv["native-vlan"])
	l, _ := sv["trunk-vlans"].([]any)
	st.trunk = trunkVLANs(l)
	return st
}

// trunkVLANs reads OpenConfig's trunk-vlans, a union of VLAN IDs and
// ranges ("100..200"): the VLANs 1..4094 they name, ascending, each
// once (at most 4094 whatever the answer); a reversed, out of range or
// malformed range names none.
func trunkVLANs(l []any) []int {
	var on [4095]bool
	for _, x := range l {
		if lo, hi, ok := strings.Cut(fmt.Sprint(x), ".."); ok {
			a, b := num(lo), num(hi)
			if a < 1 || b > 4094 || a > b {
				continue
			}
			for v := a; v <= b; v++ {
				on[v] = true
			}
		} else if n := num(x); n > 0 && n <= 4094 {
			on[n] = true
		}
	}
	var out []int
	for v, set := range on {
		if set {
			out = append(out, v)
		}
	}
	return out
}

// readVLANs reads the value of a network instance's vlans.
func (s *switchState) readVLANs(v any) {
	m, _ := v.(map[string]any)
	if inner := obj(m, "vlans"); inner != nil {
		m = inner
	}
	for _, e := range entries(m, "vlan") {
		if id := num(e["vlan-id"]); id > 0 {
			s.vlans[id] = true
		}
	}
}

// readLACP reads the value of /lacp/interfaces.
func (s *switchState) readLACP(v any) {
	m, _ := v.(map[string]any)
	if inner := obj(m, "interfaces"); inner != nil {
		m = inner
	}
	for _, e := range entries(m, "interface") {
		cfg := obj(e, "config")
		if name := str(e, "name"); name != "" {
			s.lacp[name] = lacpState{interval: ident(cfg, "interval"), mode: ident(cfg, "lacp-mode")}
		}
	}
}

// readLLDP reads the value of /lldp/interfaces: each port's first
// neighbour.
func (s *switchState) readLLDP(v any) {
	m, _ := v.(map[string]any)
	if inner := obj(m, "interfaces"); inner != nil {
		m = inner
	}
	for _, e := range entries(m, "interface") {
		name := str(e, "name")
		ns := entries(obj(e, "neighbors"), "neighbor")
		if name == "" || len(ns) == 0 {
			continue
		}
		st := obj(ns[0], "state")
		n := &drivers.LLDPNeighbor{ChassisID: str(st, "chassis-id"), SystemName: str(st, "system-name"),
			PortID: str(st, "port-id"), PortDescr: str(st, "port-description")}
		if *n != (drivers.LLDPNeighbor{}) {
			s.lldp[name] = n
		}
	}
}

// lagDescription marks a LAG interface the driver made: the node and
// its interface (the design's LAG name), which the switch's interface
// name cannot carry on every switch.
const lagDescription = "slipway:"

// port is the PortState of port name.
func (s *switchState) port(sp drivers.SwitchPort) drivers.PortState {
	st := drivers.PortState{PortConfig: drivers.PortConfig{SwitchPort: sp}}
	in := s.ifaces[sp.Port]
	if in == nil || in.isLAG {
		return st
	}
	st.Found, st.Up, st.Enabled, st.MTU = true, in.operUp, in.enabled, in.mtu
	st.Mode, st.VLAN = drivers.ModeAccess, in.access
	if in.mode == "TRUNK" {
		st.Mode, st.VLAN, st.Trunk = drivers.ModeTrunk, in.native, slices.DeleteFunc(slices.Clone(in.trunk), func(v int) bool { return v == in.native })
		if len(st.Trunk) == 0 {
			st.Trunk = nil
		}
	}
	if in.aggregateID != "" {
		st.LAG = in.aggregateID
		lag := s.ifaces[in.aggregateID]
		if lag != nil {
			if _, name, ok := strings.Cut(strings.TrimPrefix(lag.description, lagDescription), "/"); ok && strings.HasPrefix(lag.description, lagDescription) {
				st.LAG = name
			}
			if l, ok := s.lacp[in.aggregateID]; ok && lag.lagType == "LACP" {
				st.LACP, st.LACPRate = strings.ToLower(l.mode), strings.ToLower(l.interval)
			}
		}
	}
	st.Neighbor = s.lldp[sp.Port]
	return st
}
