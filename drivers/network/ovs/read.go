package ovs

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/slipway-dev/slipway/drivers"
)

// Keys the driver keeps in a Port's external_ids and other_config.
const (
	// keyLAG (external_ids) is the design LAG a port is (a bond, or one
	// member of a LAG on this switch), keyNode the node it serves.
	keyLAG  = "slipway-lag"
	keyNode = "slipway-node"
	// keyAdmin (other_config) "down" marks a port the design disables;
	// keyMode, keyVLAN and keyTrunks (external_ids) keep its VLAN
	// configuration meanwhile.
	keyAdmin  = "slipway-admin"
	keyMode   = "slipway-mode"
	keyVLAN   = "slipway-vlan"
	keyTrunks = "slipway-trunks"
	// keyLACPTime is OVS's own LACP rate (other_config).
	keyLACPTime = "lacp-time"
)

// blackholeVLAN is the VLAN a disabled port is put on, and the one a
// trunk with nothing to carry lists: 802.1Q reserves 4095, and the
// driver puts no port on it otherwise, so nothing else carries it.
const blackholeVLAN = 4095

// ModeAllVLANs is the mode a port reads in when it has OVS's default
// configuration (no tag, no trunks): it carries every VLAN.
const ModeAllVLANs = "trunk-all"

// snapshot is one bridge as one transaction read it.
type snapshot struct {
	sc     switchConf
	root   *ovsRoot
	bridge *bridge
	ports  map[string]*port  // the bridge's ports read, by UUID
	ifaces map[string]*iface // the Interfaces read, by UUID
	// byName is the bridge's interfaces by name, owner the port of each.
	byName map[string]*iface
	owner  map[string]*port
}

// readBridge reads sc's bridge and, of the interfaces named, those it
// has and their ports: a first transaction reads the Interface rows by
// name, a second the root and bridge rows with the Port rows holding
// those interfaces (so a call reads its own ports, not the whole switch,
// and the bridge and its ports come from one transaction). An interface
// that no Port held in the second read was regrouped in between: it
// reads again (three tries). A bridge the database lacks is a Permanent
// error.
func readBridge(ctx context.Context, cl client.Client, sc switchConf, names []string) (*snapshot, error) {
	for try := 1; ; try++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ifs, err := ifacesByName(ctx, cl, sc, names)
		if err != nil {
			return nil, err
		}
		s, held, err := portsHolding(ctx, cl, sc, ifs)
		if err != nil || held || try == maxAttempts {
			return s, err
		}
	}
}

// ifacesByName reads the Interface rows of names (those that exist).
func ifacesByName(ctx context.Context, cl client.Client, sc switchConf, names []string) ([]*iface, error) {
	if len(names) == 0 {
		return nil, nil
	}
	ops := make([]ovsdb.Operation, 0, len(names))
	for _, n := range names {
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: tableIface,
			Where: []ovsdb.Condition{ovsdb.NewCondition("name", ovsdb.ConditionEqual, n)}})
	}
	res, err := transact(ctx, cl, ops)
	if err != nil {
		return nil, readFailed(ctx, sc, err)
	}
	var ifs []*iface
	for _, r := range res {
		got, err := decode[iface](cl, r.Rows)
		if err != nil {
			return nil, err
		}
		ifs = append(ifs, got...)
	}
	return ifs, nil
}

// portsHolding reads the root and bridge rows and the Port rows holding
// ifs, into a snapshot; held reports whether some Port (of any bridge)
// holds every one of ifs.
func portsHolding(ctx context.Context, cl client.Client, sc switchConf, ifs []*iface) (*snapshot, bool, error) {
	ops := []ovsdb.Operation{selectAll(tableRoot),
		{Op: ovsdb.OperationSelect, Table: tableBridge, Where: []ovsdb.Condition{ovsdb.NewCondition("name", ovsdb.ConditionEqual, sc.bridge)}}}
	for _, i := range ifs {
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: tablePort,
			Where: []ovsdb.Condition{ovsdb.NewCondition("interfaces", ovsdb.ConditionIncludes, ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: i.UUID}}})}})
	}
	res, err := transact(ctx, cl, ops)
	if err != nil {
		return nil, false, readFailed(ctx, sc, err)
	}
	s, err := decodeBridge(cl, sc, res[0].Rows, res[1].Rows)
	if err != nil {
		return nil, false, err
	}
	for _, i := range ifs {
		s.ifaces[i.UUID] = i
	}
	held := true
	for _, r := range res[2:] {
		ports, err := decode[port](cl, r.Rows)
		if err != nil {
			return nil, false, err
		}
		held = held && len(ports) > 0
		s.addPorts(ports)
	}
	return s, held, nil
}

// readFailed is the error of a read that did not get an answer.
func readFailed(ctx context.Context, sc switchConf, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return unreachable(sc, err)
}

// decodeBridge is the snapshot of the root and bridge rows, its ports
// and interfaces still to add.
func decodeBridge(cl client.Client, sc switchConf, rootRows, bridgeRows []ovsdb.Row) (*snapshot, error) {
	roots, err := decode[ovsRoot](cl, rootRows)
	if err != nil {
		return nil, err
	}
	brs, err := decode[bridge](cl, bridgeRows)
	if err != nil {
		return nil, err
	}
	if len(roots) != 1 {
		return nil, drivers.Errorf(drivers.Permanent, "ovs: switch %s (OVSDB %s) has %d Open_vSwitch rows, want 1: run ovs-vsctl --db=%s init",
			sc.name, sc.addr, len(roots), sc.addr)
	}
	if len(brs) != 1 {
		return nil, drivers.Errorf(drivers.Permanent, "ovs: switch %s (OVSDB %s) has no bridge %s: add it (ovs-vsctl add-br %s) or set switch.%s.bridge",
			sc.name, sc.addr, sc.bridge, sc.bridge, sc.name)
	}
	return &snapshot{sc: sc, root: roots[0], bridge: brs[0], ports: map[string]*port{}, ifaces: map[string]*iface{},
		byName: map[string]*iface{}, owner: map[string]*port{}}, nil
}

// addPorts adds the ports of the bridge among ports, and their
// interfaces the snapshot read.
func (s *snapshot) addPorts(ports []*port) {
	for _, p := range ports {
		if !slices.Contains(s.bridge.Ports, p.UUID) {
			continue
		}
		s.ports[p.UUID] = p
		for _, u := range p.Interfaces {
			if i := s.ifaces[u]; i != nil {
				s.byName[i.Name] = i
				s.owner[i.Name] = p
			}
		}
	}
}

// state is the design port name's configuration as the bridge has it.
func (s *snapshot) state(name string) drivers.PortState {
	st := drivers.PortState{PortConfig: drivers.PortConfig{SwitchPort: drivers.SwitchPort{Switch: s.sc.name, Port: name}}}
	i, p := s.byName[name], s.owner[name]
	if i == nil || p == nil {
		return st
	}
	st.Found = true
	st.Up = deref(i.LinkState) == "up"
	st.PortConfig = portConfig(st.SwitchPort, p, i)
	return st
}

// portConfig reads a Port and one of its Interfaces back into the
// design's terms. A port the driver disabled reads its kept VLAN
// configuration (as a switch keeps a shut port's), unless its columns
// were changed since.
func portConfig(sp drivers.SwitchPort, p *port, i *iface) drivers.PortConfig {
	c := drivers.PortConfig{SwitchPort: sp, Enabled: deref(i.AdminState) != "down"}
	c.Mode, c.VLAN, c.Trunk = vlansOf(p)
	if p.OtherConfig[keyAdmin] == "down" && c.Mode == drivers.ModeAccess && c.VLAN == blackholeVLAN {
		c.Enabled = false
		c.Mode, c.VLAN, c.Trunk = keptVLANs(p.ExternalIDs)
	}
	c.LAG = p.ExternalIDs[keyLAG]
	if c.LAG == "" && len(p.Interfaces) > 1 {
		c.LAG = p.Name
	}
	c.LACP = deref(p.LACP)
	if c.LACP == "off" {
		c.LACP = ""
	}
	if c.LACP != "" {
		c.LACPRate = p.OtherConfig[keyLACPTime]
		if c.LACPRate == "" {
			c.LACPRate = "slow"
		}
	}
	if i.MTURequest != nil {
		// What the device took, when OVS says; else what was asked.
		c.MTU = *i.MTURequest
		if i.MTU != nil && *i.MTU > 0 {
			c.MTU = *i.MTU
		}
	}
	return c
}

// vlansOf reads a Port's VLAN columns: access (tag), a trunk with its
// native VLAN untagged (native-untagged: tag and trunks), a trunk
// without one (trunks), or OVS's default, every VLAN. The blackhole
// VLAN and the native one are not listed among the trunk's VLANs.
func vlansOf(p *port) (mode string, vlan int, trunk []int) {
	tag := 0
	if p.Tag != nil {
		tag = *p.Tag
	}
	var others []int
	for _, v := range p.Trunks {
		if v != tag && v != blackholeVLAN {
			others = append(others, v)
		}
	}
	slices.Sort(others)
	switch m := deref(p.VLANMode); {
	case m == "access" || (m == "" && p.Tag != nil):
		return drivers.ModeAccess, tag, nil
	case m == "native-untagged":
		return drivers.ModeTrunk, tag, others
	case m == "trunk" || m == "":
		if len(p.Trunks) == 0 {
			return ModeAllVLANs, 0, nil
		}
		return drivers.ModeTrunk, 0, others
	default: // native-tagged, dot1q-tunnel: not what the driver sets
		return m, tag, others
	}
}

// maxKept bounds the kept trunk list read (4094 VLANs of 4 digits and
// commas); a longer one is not the driver's and is ignored.
const maxKept = 4094 * 5

// keptVLANs is the VLAN configuration a disabled port keeps: only
// VLANs 1..4094, each once, ascending.
func keptVLANs(ext map[string]string) (mode string, vlan int, trunk []int) {
	vlan, _ = strconv.Atoi(ext[keyVLAN])
	if vlan < 0 || vlan >= blackholeVLAN {
		vlan = 0
	}
	if t := ext[keyTrunks]; len(t) <= maxKept {
		for _, f := range strings.Split(t, ",") {
			if v, err := strconv.Atoi(f); err == nil && v > 0 && v < blackholeVLAN && !slices.Contains(trunk, v) {
				trunk = append(trunk, v)
			}
		}
	}
	slices.Sort(trunk)
	return ext[keyMode], vlan, trunk
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

// ReadPorts reads the ports back, one PortState each in order, one
// transaction per switch. A port the bridge has not is Found false.
// Neighbor is always nil: Open vSwitch keeps no LLDP neighbour table.
func (d *Driver) ReadPorts(ctx context.Context, refs []drivers.SwitchPort) ([]drivers.PortState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(refs) > maxPortsPerCall {
		return nil, drivers.Errorf(drivers.Permanent, "ovs: %d ports in one read, more than %d", len(refs), maxPortsPerCall)
	}
	names := map[string][]string{}
	for _, r := range refs {
		sc, err := d.sw(r, "")
		if err != nil {
			return nil, err
		}
		names[sc.name] = append(names[sc.name], r.Port)
	}
	snaps := map[string]*snapshot{}
	for name, ports := range names {
		sc := d.switches[name]
		_, s, err := d.snapshot(ctx, d.conn(sc.addr), sc, ports)
		if err != nil {
			return nil, err
		}
		snaps[name] = s
	}
	out := make([]drivers.PortState, len(refs))
	for i, r := range refs {
		out[i] = snaps[r.Switch].state(r.Port)
	}
	return out, nil
}

// maxPortsPerCall bounds the ports of one ReadPorts.
const maxPortsPerCall = 20_000

func (s *snapshot) String() string {
	return fmt.Sprintf("bridge %s of switch %s (%d ports)", s.bridge.Name, s.sc.name, len(s.ports))
}
