package orchestrator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
)

// The as-built stage's switch side: when the node's Site has a fabric
// and the network driver reads ports back, each switch the design cables
// the node to is asked (one ReadPorts per switch, within
// asBuiltSwitchTimeout) for the LLDP neighbour of each of those ports,
// which must be this node's NIC of the port's alias (matched as the
// fabric view matches: lldp_neighbours.go). This is independent of the
// hardware profile's expect.lldp (the machine's side). A port with no
// neighbour, a switch without LLDP or one that does not answer is no
// mismatch: the stage says so in an event and goes on.

// Bounds of the switch-side check: the time one switch's read may take
// and the ports of one node read from one switch.
const (
	asBuiltSwitchTimeout = 10 * time.Second
	asBuiltSwitchPorts   = fabricReadBatch
)

// switchCheck is what the switch-side check found: mismatches, events
// to write (level, message) and a note for the stage's message.
type switchCheck struct {
	mism   []string
	events [][2]string
	note   string
}

// switchSideReader is the network driver's read-back side when the
// node's switch-side cabling check applies (nil when it does not).
func (r *nodeRun) switchSideReader() drivers.NetworkReader {
	if len(r.n.Spec.Cabling) == 0 || !r.d.SiteOf(r.n).HasFabric() {
		return nil
	}
	rd, ok := drivers.ReaderOf(r.e.cfg.Drivers.Network)
	if !ok {
		return nil
	}
	return rd
}

// cabledPort is one port the design cables the node to.
type cabledPort struct {
	drivers.SwitchPort
	Alias string
}

// switchCabling runs the switch-side check of the node's cabling; an
// error only when ctx ended (a switch read cut short by the task's end is
// no switch that did not answer).
func (r *nodeRun) switchCabling(ctx context.Context, exp *design.HardwareExpect) (switchCheck, error) {
	var sc switchCheck
	rd := r.switchSideReader()
	if rd == nil {
		return sc, nil
	}
	bySwitch := map[string][]cabledPort{}
	for _, alias := range slices.Sorted(maps.Keys(r.n.Spec.Cabling)) {
		c := r.n.Spec.Cabling[alias]
		bySwitch[c.Switch] = append(bySwitch[c.Switch], cabledPort{SwitchPort: drivers.SwitchPort{Switch: c.Switch, Port: c.Port}, Alias: alias})
	}
	seen := map[cabledPort]*drivers.LLDPNeighbor{}
	for _, sw := range slices.Sorted(maps.Keys(bySwitch)) {
		ports := bySwitch[sw]
		if len(ports) > asBuiltSwitchPorts {
			ports = ports[:asBuiltSwitchPorts]
		}
		nbs, err := readNeighbours(ctx, rd, ports)
		if ctx.Err() != nil {
			return sc, ctx.Err()
		}
		if err != nil {
			sc.events = append(sc.events, [2]string{"warn", fmt.Sprintf("switch %s did not answer for the LLDP cabling check (%s): its %d port(s) not checked from the switch's side; the node goes on (check the switch: `orchestrator drivers` probes it)",
				sw, boundedErr(err), len(ports))})
			continue
		}
		sc.sortPorts(sw, ports, nbs, exp, seen)
	}
	sc.mism = r.switchMismatches(ctx, seen)
	if len(seen) > 0 {
		sc.note = fmt.Sprintf("; %d cable(s) checked from the switch's LLDP table", len(seen))
	}
	return sc, nil
}

// sortPorts puts each port of switch sw that reports a neighbour in
// seen, and says in an event which report none and which the switch
// does not have (the ports stages fail for those: not checked here).
func (sc *switchCheck) sortPorts(sw string, ports []cabledPort, st []drivers.PortState, exp *design.HardwareExpect, seen map[cabledPort]*drivers.LLDPNeighbor) {
	var silent, missing []string
	for i, p := range ports {
		nb := st[i].Neighbor
		switch {
		case !st[i].Found:
			missing = append(missing, p.Port)
		case nb == nil || (nb.SystemName == "" && nb.ChassisID == "" && nb.PortID == ""):
			silent = append(silent, p.Port)
		default:
			seen[p] = nb
		}
	}
	if len(silent) > 0 {
		sc.events = append(sc.events, [2]string{"info", silentWords(sw, silent, len(ports)-len(missing), exp)})
	}
	if len(missing) > 0 {
		sc.events = append(sc.events, [2]string{"warn", fmt.Sprintf("switch %s has no port %s: the design cables the node there; not checked by LLDP (fix the design's cabling or the switch)",
			sw, limitJoin(missing, 8))})
	}
}

// boundedErr is a switch's error for an event: printable, at most 240
// bytes.
func boundedErr(err error) string {
	const most = 240
	s := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, err.Error())
	if len(s) > most {
		s = s[:most] + "…"
	}
	return s
}

// silentWords says a switch reported no LLDP neighbour on some of the
// node's ports (all: the switch reports no LLDP).
func silentWords(sw string, silent []string, of int, exp *design.HardwareExpect) string {
	side := "cabling checked from the machine's side only"
	if exp == nil || !exp.LLDP {
		side = "cabling not checked by LLDP (the hardware profile does not expect LLDP on the machine's side either)"
	}
	if len(silent) == of {
		return fmt.Sprintf("switch %s reports no LLDP neighbour on the node's port(s) %s: %s", sw, limitJoin(silent, 8), side)
	}
	return fmt.Sprintf("switch %s reports no LLDP neighbour on port(s) %s (%d of the node's %d there): for those, %s", sw, limitJoin(silent, 8), len(silent), of, side)
}

// readNeighbours reads one switch's ports, their LLDP neighbours bounded
// (maxLLDPField), within asBuiltSwitchTimeout.
func readNeighbours(ctx context.Context, rd drivers.NetworkReader, ports []cabledPort) ([]drivers.PortState, error) {
	ctx, cancel := context.WithTimeout(ctx, asBuiltSwitchTimeout)
	defer cancel()
	refs := make([]drivers.SwitchPort, len(ports))
	for i, p := range ports {
		refs[i] = p.SwitchPort
	}
	st, err := rd.ReadPorts(ctx, refs)
	if err != nil {
		return nil, err
	}
	if len(st) != len(refs) {
		return nil, fmt.Errorf("asked for %d ports, the driver answered %d", len(refs), len(st))
	}
	for i := range st {
		st[i].Neighbor = boundNeighbor(st[i].Neighbor)
	}
	return st, nil
}

// switchMismatches compares each port's neighbour with the node's NIC
// the design cables there: one mismatch per port whose neighbour is
// another node, another NIC or no node of the design.
func (r *nodeRun) switchMismatches(ctx context.Context, seen map[cabledPort]*drivers.LLDPNeighbor) []string {
	if len(seen) == 0 {
		return nil
	}
	self := FabricNode{Node: r.rec.Name}
	for p := range seen {
		self.Ports = append(self.Ports, FabricPort{SwitchPort: p.SwitchPort, Alias: p.Alias})
	}
	index := []FabricNode{self}
	// The other nodes the neighbours name (a cable of another node
	// here): their NICs are indexed too, to say which NIC it is.
	first := newNeighbours(ctx, r.e, r.d, index)
	for _, nb := range seen {
		if other, _ := first.identify(nb); other != "" && other != r.rec.Name && !slices.ContainsFunc(index, func(f FabricNode) bool { return f.Node == other }) {
			index = append(index, cabledNode(r.d, other))
		}
	}
	who := newNeighbours(ctx, r.e, r.d, index)
	var out []string
	for _, p := range slices.SortedFunc(maps.Keys(seen), func(a, b cabledPort) int { return strings.Compare(a.String(), b.String()) }) {
		m := who.match(r.rec.Name, p.Alias, seen[p])
		if m.Kind != FindingMiscabled {
			continue
		}
		out = append(out, fmt.Sprintf("%s sees %s, the design cables %s's %s there", p.SwitchPort, m.words(), r.rec.Name, p.Alias))
	}
	return out
}

// cabledNode is a node of d with its cabled NICs' aliases (for the
// neighbour index).
func cabledNode(d *design.Design, name string) FabricNode {
	f := FabricNode{Node: name}
	if n := d.Nodes[name]; n != nil {
		for alias, c := range n.Spec.Cabling {
			f.Ports = append(f.Ports, FabricPort{SwitchPort: drivers.SwitchPort{Switch: c.Switch, Port: c.Port}, Alias: alias})
		}
	}
	return f
}

// words names the neighbour a match found: the node's NIC, the node, or
// what the switch reports of a device that is no node of the design.
func (m lldpMatch) words() string {
	switch {
	case m.Node == "":
		return m.Seen + " (not a node of the design)"
	case m.NIC == "":
		return fmt.Sprintf("node %s (%s: %s)", m.Node, m.How, m.Seen)
	}
	return fmt.Sprintf("%s's %s (%s)", m.Node, m.NIC, m.Seen)
}
