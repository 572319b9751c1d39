package drivers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The network role: switch ports as the design cables them. The engine
// puts on each Node the switch port of every cabled NIC (Device.Switch,
// Device.Port) and the site's fabric VLANs (Node.Fabric); PortPlan turns
// that into the configuration each port must have in a phase, so that
// every network driver, built in or plugged in, configures the same
// thing. A driver touches only the ports PortPlan names: a port the
// design does not cable to a node is never changed.

// PhaseQuarantine returns every port of the node to the site's
// quarantine VLAN: after a release or a decommission.
const PhaseQuarantine Phase = "quarantine"

// Phases lists the phases every network driver knows.
var Phases = []Phase{PhaseProvisioning, PhaseProduction, PhaseQuarantine}

// KnownPhase reports whether p is one of Phases.
func KnownPhase(p Phase) bool { return slices.Contains(Phases, p) }

// NodeFabric is what the site's fabric says of a node's ports: the VLAN
// the switches carry the provisioning (PXE) network on, and the
// quarantine VLAN of ports no machine should use.
type NodeFabric struct {
	ProvisioningVLAN int `json:"provisioning_vlan"`
	QuarantineVLAN   int `json:"quarantine_vlan"`
	// PXEInterface is the node interface that boots from the network
	// (the one carrying the PXE network untagged).
	PXEInterface string `json:"pxe_interface,omitempty"`
}

// SwitchPort names one port of one switch. Switch is the switch's name
// as the design (and its LLDP system name) gives it.
type SwitchPort struct {
	Switch string `json:"switch"`
	Port   string `json:"port"`
}

func (p SwitchPort) String() string { return p.Switch + ":" + p.Port }

// Port modes.
const (
	ModeAccess = "access" // untagged on VLAN
	ModeTrunk  = "trunk"  // Trunk tagged, VLAN untagged (0: no native VLAN)
)

// PortConfig is what one switch port must be.
type PortConfig struct {
	SwitchPort
	// Who the port serves: the node, its NIC's device alias and the
	// node interface (bond or NIC) the NIC belongs to.
	Node      string `json:"node,omitempty"`
	Alias     string `json:"alias,omitempty"`
	Interface string `json:"interface,omitempty"`

	Mode  string `json:"mode"`            // access | trunk
	VLAN  int    `json:"vlan"`            // access VLAN, or the trunk's native VLAN (0: none)
	Trunk []int  `json:"trunk,omitempty"` // tagged VLANs (trunk only), ascending
	// LAG names the link aggregation the port is a member of ("" none):
	// the node interface's name, the same on every switch its members
	// are cabled to. LACP is "active" for an 802.3ad bond ("" static);
	// LACPRate fast | slow.
	LAG      string `json:"lag,omitempty"`
	LACP     string `json:"lacp,omitempty"`
	LACPRate string `json:"lacp_rate,omitempty"`
	MTU      int    `json:"mtu,omitempty"` // 0: the switch's default
	Enabled  bool   `json:"enabled"`       // admin state
}

// Equal reports whether two port configurations are the same (Node,
// Alias and Interface, which only say who the port serves, aside).
func (c PortConfig) Equal(o PortConfig) bool {
	return c.SwitchPort == o.SwitchPort && c.Mode == o.Mode && c.VLAN == o.VLAN && slices.Equal(c.Trunk, o.Trunk) &&
		c.LAG == o.LAG && c.LACP == o.LACP && c.LACPRate == o.LACPRate && c.MTU == o.MTU && c.Enabled == o.Enabled
}

// Diff lists in words how o (observed) differs from c (wanted); nil
// when they are Equal.
func (c PortConfig) Diff(o PortConfig) []string {
	var out []string
	add := func(what string, want, got any) {
		if fmt.Sprint(want) != fmt.Sprint(got) {
			out = append(out, fmt.Sprintf("%s %v, want %v", what, got, want))
		}
	}
	add("mode", c.Mode, o.Mode)
	add("vlan", c.VLAN, o.VLAN)
	add("trunk", c.Trunk, o.Trunk)
	add("lag", c.LAG, o.LAG)
	add("lacp", c.LACP, o.LACP)
	add("lacp_rate", c.LACPRate, o.LACPRate)
	add("mtu", c.MTU, o.MTU)
	add("enabled", c.Enabled, o.Enabled)
	return out
}

// VLANs are every VLAN the port carries, ascending.
func (c PortConfig) VLANs() []int {
	out := slices.Clone(c.Trunk)
	if c.VLAN != 0 && !slices.Contains(out, c.VLAN) {
		out = append(out, c.VLAN)
	}
	slices.Sort(out)
	return out
}

// PortState is a port as the switch reports it.
type PortState struct {
	PortConfig
	// Found is false when the switch has no such port.
	Found bool `json:"found"`
	// Up is the port's operational state (link up).
	Up bool `json:"up"`
	// Neighbor is the LLDP neighbour the port sees (nil: none, or the
	// switch does not run LLDP).
	Neighbor *LLDPNeighbor `json:"neighbor,omitempty"`
}

// LLDPNeighbor is what a port learned from the device at the cable's
// other end.
type LLDPNeighbor struct {
	ChassisID  string `json:"chassis_id,omitempty"`
	SystemName string `json:"system_name,omitempty"`
	PortID     string `json:"port_id,omitempty"`
	PortDescr  string `json:"port_description,omitempty"`
}

// NetworkReader is the optional read-back side of a network driver:
// the configuration, link state and LLDP neighbour of switch ports. The
// engine uses it to verify what ConfigurePorts did, to find ports
// changed behind its back (reconciliation's switchport drift) and to
// compare the cabling with LLDP.
type NetworkReader interface {
	// ReadPorts answers one PortState per port, in order; a port the
	// switch does not have gets Found false. A switch that does not
	// answer is an error naming it.
	ReadPorts(ctx context.Context, ports []SwitchPort) ([]PortState, error)
}

// PortPlan is the configuration each cabled port of n must have in
// phase, in the order of the node's interfaces and devices. A NIC with
// no cable (Device.Switch or Port empty) has no port to configure. It
// fails for an unknown phase, a phase whose VLAN the fabric does not
// give, or an interface that asks what no port can be (two untagged
// networks without trunking).
func PortPlan(n Node, phase Phase) ([]PortConfig, error) {
	if !KnownPhase(phase) {
		return nil, Errorf(Permanent, "unknown network phase %q (known: %s)", phase, phaseList())
	}
	fab := NodeFabric{}
	if n.Fabric != nil {
		fab = *n.Fabric
	}
	var out []PortConfig
	for _, in := range n.Interfaces {
		for _, d := range in.Devices {
			if d.Switch == "" || d.Port == "" {
				continue
			}
			c := PortConfig{SwitchPort: SwitchPort{Switch: d.Switch, Port: d.Port}, Node: n.Name, Alias: d.Alias,
				Interface: in.Name, Mode: ModeAccess, Enabled: true}
			if err := planPort(&c, in, fab, phase); err != nil {
				return nil, Errorf(Permanent, "node %s interface %s (%s cabled to %s): %v", n.Name, in.Name, d.Alias, c.SwitchPort, err)
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func phaseList() string {
	s := make([]string, len(Phases))
	for i, p := range Phases {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// planPort fills c for phase: quarantine and the provisioning phase's
// ports other than the PXE interface's are access ports on the
// quarantine VLAN; the PXE interface's are access ports on the
// provisioning VLAN, no LAG (a machine PXE-boots on one NIC); in
// production the interface's networks decide, and an interface that
// carries no network on a switch VLAN (none, or point-to-point ones
// only) is an access port on the quarantine VLAN.
func planPort(c *PortConfig, in Interface, fab NodeFabric, phase Phase) error {
	quarantine := func() error {
		if fab.QuarantineVLAN == 0 {
			return fmt.Errorf("the site's fabric names no quarantine VLAN (fabric.quarantineVlan)")
		}
		c.VLAN = fab.QuarantineVLAN
		return nil
	}
	switch {
	case phase == PhaseQuarantine:
		return quarantine()
	case phase == PhaseProvisioning && in.Name != fab.PXEInterface:
		return quarantine()
	case phase == PhaseProvisioning:
		if fab.ProvisioningVLAN == 0 {
			return fmt.Errorf("the site's fabric gives no VLAN for the provisioning network")
		}
		c.VLAN, c.MTU = fab.ProvisioningVLAN, in.Link.MTU
		return nil
	}
	if err := productionPort(c, in); err != nil {
		return err
	}
	if c.VLAN == 0 && len(c.Trunk) == 0 { // no switched network (none, or point-to-point only): no VLAN 0 port
		c.Mode = ModeAccess
		return quarantine()
	}
	return nil
}

// productionPort is a port of in with the design's networks: an access
// port on the one network of an interface without trunking, else a
// trunk of every network, the native one untagged; a member of the
// interface's LAG when it is bonded.
func productionPort(c *PortConfig, in Interface) error {
	c.MTU = in.Link.MTU
	if in.Link.Bonded() {
		c.LAG = in.Name
		if in.Link.BondMode == "802.3ad" {
			c.LACP, c.LACPRate = "active", orSlow(in.Link.LACPRate)
		}
	}
	vlans := map[int]string{}
	native := 0
	for _, nw := range in.Networks {
		if nw.PointToPoint {
			continue
		}
		v := nw.SwitchVLAN()
		if v == 0 {
			return fmt.Errorf("network %s has no VLAN on the switches (an untagged network needs switchVlan)", nw.Name)
		}
		vlans[v] = nw.Name
		if nw.VLAN == 0 || nw.Name == in.Link.NativeNetwork {
			if native != 0 && native != v {
				return fmt.Errorf("two networks ride untagged (%s and %s)", vlans[native], nw.Name)
			}
			native = v
		}
	}
	if in.Link.Trunking != "802.1q" {
		if len(vlans) > 1 {
			return fmt.Errorf("%d networks but the link %s does not trunk (trunking.mode 802.1q)", len(vlans), in.Link.Name)
		}
		for v := range vlans {
			c.VLAN = v
		}
		return nil
	}
	c.Mode, c.VLAN = ModeTrunk, native
	for _, v := range slices.Sorted(maps.Keys(vlans)) {
		if v != native {
			c.Trunk = append(c.Trunk, v)
		}
	}
	return nil
}

func orSlow(rate string) string {
	if rate == "" {
		return "slow"
	}
	return rate
}

// SwitchVLAN is the VLAN switches carry the subnet on: its own 802.1Q
// VLAN when tagged, else the design's switchVlan for it (0: none given).
func (s Subnet) SwitchVLAN() int {
	if s.VLAN != 0 {
		return s.VLAN
	}
	return s.UntaggedVLAN
}

// Switch settings in a network driver's Config: for each switch NAME,
// "switch.NAME.address" (required), "switch.NAME.username" and any
// driver setting "switch.NAME.KEY"; its password is the secret
// "switch.NAME.password".
const switchPrefix = "switch."

// SwitchEndpoint is how a network driver reaches one switch.
type SwitchEndpoint struct {
	Name     string
	Address  string
	Username string
	Password Secret
	// Settings are the switch's other settings, by key.
	Settings map[string]string
}

// SwitchSettings writes e into settings and secrets, the form
// Switches reads.
func SwitchSettings(e SwitchEndpoint, settings map[string]string, secrets map[string]Secret) {
	p := switchPrefix + e.Name + "."
	settings[p+"address"] = e.Address
	if e.Username != "" {
		settings[p+"username"] = e.Username
	}
	for k, v := range e.Settings {
		settings[p+k] = v
	}
	if !e.Password.IsZero() {
		secrets[p+"password"] = e.Password
	}
}

// Switches reads the switch endpoints of cfg, by name, and returns the
// settings that are no switch's. A switch with no address is a
// Permanent error naming it.
func Switches(cfg Config) (map[string]SwitchEndpoint, map[string]string, error) {
	out := map[string]SwitchEndpoint{}
	rest := map[string]string{}
	for k, v := range cfg.Settings {
		name, key, ok := splitSwitchKey(k)
		if !ok {
			rest[k] = v
			continue
		}
		e := out[name]
		e.Name = name
		switch key {
		case "address":
			e.Address = strings.TrimSpace(v)
		case "username":
			e.Username = v
		default:
			if e.Settings == nil {
				e.Settings = map[string]string{}
			}
			e.Settings[key] = v
		}
		out[name] = e
	}
	for k, s := range cfg.Secrets {
		if name, key, ok := splitSwitchKey(k); ok && key == "password" {
			e := out[name]
			e.Name, e.Password = name, s
			out[name] = e
		}
	}
	for _, name := range slices.Sorted(maps.Keys(out)) {
		if out[name].Address == "" {
			return nil, nil, Errorf(Permanent, "switch %s has no address (setting %saddress)", name, switchPrefix+name+".")
		}
	}
	return out, rest, nil
}

func splitSwitchKey(k string) (name, key string, ok bool) {
	rest, ok := strings.CutPrefix(k, switchPrefix)
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 || i == len(rest)-1 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}

// SwitchGroup is the part of a port plan on one switch.
type SwitchGroup struct {
	Switch string
	Ports  []PortConfig
}

// GroupBySwitch splits a port plan by switch, the switches in the order
// the plan first names them and each switch's ports in plan order: a
// driver configures a switch at a time, one transaction each.
func GroupBySwitch(plan []PortConfig) []SwitchGroup {
	var out []SwitchGroup
	at := map[string]int{}
	for _, p := range plan {
		i, ok := at[p.Switch]
		if !ok {
			i = len(out)
			at[p.Switch] = i
			out = append(out, SwitchGroup{Switch: p.Switch})
		}
		out[i].Ports = append(out[i].Ports, p)
	}
	return out
}
