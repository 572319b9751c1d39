package gnmi

import (
	"fmt"
	"maps"
	"slices"
)

// What a test reads of a switch: the target's own state, not what a
// client believes it set.

// PortView is one interface of a switch.
type PortView struct {
	Name        string
	Enabled     bool
	MTU         int    // 0: not configured (the switch's default)
	Mode        string // ACCESS | TRUNK
	AccessVLAN  int
	NativeVLAN  int
	TrunkVLANs  []int
	AggregateID string // the LAG interface it is a member of
	Description string
	OperUp      bool
	// LAG interfaces only.
	IsLAG        bool
	LAGType      string // LACP | STATIC
	LACPInterval string // FAST | SLOW ("" no LACP config)
	LACPMode     string // ACTIVE | PASSIVE
}

// Port reads interface name of switch sw (a port or a LAG interface).
func (t *Target) Port(sw, name string) (PortView, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, m, err := t.modelOf(sw)
	if err != nil {
		return PortView{}, err
	}
	im := m.ifaces[name]
	if im == nil {
		return PortView{}, fmt.Errorf("switch %s has no interface %s", sw, name)
	}
	v := PortView{Name: name, Enabled: im.enabled, MTU: im.mtu, Mode: im.mode, AccessVLAN: im.access,
		NativeVLAN: im.native, TrunkVLANs: slices.Clone(im.trunk), AggregateID: im.aggregateID,
		Description: im.description, IsLAG: im.isLAG, LAGType: im.lagType}
	v.OperUp = im.enabled && (s.link[name] || im.isLAG && lagUp(m, s, name))
	if l, ok := m.lacp[name]; ok {
		v.LACPInterval, v.LACPMode = l.interval, l.mode
	}
	return v, nil
}

// VLANs lists the VLANs created on switch sw, ascending.
func (t *Target) VLANs(sw string) ([]int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, m, err := t.modelOf(sw)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(m.vlans)), nil
}

// Interfaces names the interfaces of switch sw (ports and LAGs), sorted.
func (t *Target) Interfaces(sw string) ([]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, m, err := t.modelOf(sw)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(m.ifaces)), nil
}

// modelOf is switch sw and its state parsed; t.mu must be held.
func (t *Target) modelOf(sw string) (*switchState, model, error) {
	s := t.switches[sw]
	if s == nil {
		return nil, model{}, fmt.Errorf("no switch %s", sw)
	}
	m, err := parseModel(s.tree)
	return s, m, err
}
