package orchestrator

import (
	"context"
	"fmt"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
)

// Who a switch port's LLDP neighbour is, by the design: the matching the
// fabric view's LLDP findings and the as-built stage's switch-side
// cabling check share.

// neighbours tells who an LLDP neighbour is: by the design's hostnames
// (a node's name) and the NIC MACs of the nodes' stored inventories.
type neighbours struct {
	host map[string]string // lower-case hostname (and node name) → node
	mac  map[string]string // lower-case MAC → node/alias
	// nics: by node, its cabled NICs' aliases, and from its inventory
	// their kernel names and MACs (lower case) → alias.
	nics map[string]map[string]string
}

// newNeighbours indexes the hostnames of every node of d and the NIC
// MACs of the inventories of the nodes in view.
func newNeighbours(ctx context.Context, e *Engine, d *design.Design, nodes []FabricNode) neighbours {
	w := neighbours{host: map[string]string{}, mac: map[string]string{}, nics: map[string]map[string]string{}}
	for name := range d.Nodes { // a node's hostname is its name
		w.host[strings.ToLower(name)] = name
	}
	for _, n := range nodes {
		if len(n.Ports) == 0 {
			continue
		}
		ids := map[string]string{}
		for _, p := range n.Ports {
			ids[strings.ToLower(p.Alias)] = p.Alias
		}
		w.nics[n.Node] = ids
		inv, ok, err := NodeInventory(ctx, e.rec.s, n.Node)
		if err != nil || !ok {
			continue
		}
		for _, nic := range inv.NICs {
			if nic.MAC != "" {
				w.mac[strings.ToLower(nic.MAC)] = n.Node + "/" + nic.Alias
			}
			if nic.Alias != "" {
				ids[strings.ToLower(nic.Name)], ids[strings.ToLower(nic.MAC)] = nic.Alias, nic.Alias
			}
		}
	}
	return w
}

// nicOf is the NIC of node a neighbour's port ID or description names
// (its alias, kernel name or MAC); "" when neither does.
func (w neighbours) nicOf(node string, nb *drivers.LLDPNeighbor) string {
	for _, id := range []string{nb.PortID, nb.PortDescr} {
		if a := w.nics[node][strings.ToLower(id)]; a != "" && id != "" {
			return a
		}
	}
	return ""
}

// lldpMatch is who a port's LLDP neighbour is, against who the design
// cables there.
type lldpMatch struct {
	Kind string // FindingCabled, FindingMiscabled or FindingNoNeighbor
	Seen string // the neighbour in a few words
	Node string // the node of the design it is ("" none)
	How  string // how that node was known
	NIC  string // the node's NIC its port ID or description names ("" unknown)
}

// match tells whether nb is the NIC alias of node, as the design cables
// the port.
func (w neighbours) match(node, alias string, nb *drivers.LLDPNeighbor) lldpMatch {
	if nb == nil || (nb.SystemName == "" && nb.ChassisID == "" && nb.PortID == "") {
		return lldpMatch{Kind: FindingNoNeighbor}
	}
	m := lldpMatch{Kind: FindingCabled, Seen: neighbourWords(nb)}
	m.Node, m.How = w.identify(nb)
	if m.Node != "" {
		m.NIC = w.nicOf(m.Node, nb)
	}
	if m.Node != node || (m.NIC != "" && m.NIC != alias) {
		m.Kind = FindingMiscabled
	}
	return m
}

// finding names what a port's neighbour says of its cabling.
func (w neighbours) finding(p *FabricPort, nb *drivers.LLDPNeighbor) (kind, msg string) {
	m := w.match(p.Node, p.Alias, nb)
	switch {
	case m.Kind == FindingNoNeighbor:
		return FindingNoNeighbor, "no neighbour"
	case m.Node == "":
		return FindingMiscabled, fmt.Sprintf("neighbour %s (not a node of the design), design says node %s", m.Seen, p.Node)
	case m.Node != p.Node:
		return FindingMiscabled, fmt.Sprintf("neighbour %s is node %s (%s), design says node %s", m.Seen, m.Node, m.How, p.Node)
	case m.Kind == FindingMiscabled:
		return FindingMiscabled, fmt.Sprintf("neighbour %s is node %s's NIC %s, design says NIC %s", m.Seen, m.Node, m.NIC, p.Alias)
	}
	how := m.How
	if m.NIC != "" && !strings.HasSuffix(how, "NIC "+m.NIC) { // not said already (known by its MAC)
		how += ", NIC " + m.NIC
	}
	return FindingCabled, "cabled as designed (" + how + ")"
}

// identify is the node a neighbour is, and how it was known ("" when
// none): its system name, else its chassis or port ID as a NIC's MAC.
func (w neighbours) identify(nb *drivers.LLDPNeighbor) (node, how string) {
	name := strings.ToLower(nb.SystemName)
	if n, ok := w.host[name]; ok {
		return n, "system name " + nb.SystemName
	}
	if short, _, ok := strings.Cut(name, "."); ok && w.host[short] != "" {
		return w.host[short], "system name " + nb.SystemName
	}
	for _, id := range []string{nb.PortID, nb.ChassisID} {
		if v, ok := w.mac[strings.ToLower(id)]; ok {
			n, alias, _ := strings.Cut(v, "/")
			return n, "MAC " + id + " of NIC " + alias
		}
	}
	return "", ""
}
