package ovs

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// SwitchBridge is where a design switch's ports are: a harness and the
// bridge the switch is.
type SwitchBridge struct {
	D      *Switchd
	Bridge string
}

// NodeNIC is one cabled NIC of an emulated node.
type NodeNIC struct {
	Alias, Interface string
	// Switch and Port are the design's cable: Port is the veth end on
	// the switch's bridge, in the switch harness's namespace.
	Switch, Port string
	// Peer is the node's end, a port of the node interface's bridge in
	// the host harness's namespace.
	Peer string
}

// NodeNet is one network of an emulated node: a namespace whose Dev
// carries the node's address on the network.
type NodeNet struct {
	Network, Interface string
	NS, Dev            string
	// Address is the node's address with the subnet's prefix
	// (10.1.0.10/24), "" when the design gives none (dhcp, auto).
	Address string
	VLAN    int // the VLAN the switches carry the network on
}

// IP is the address without its prefix ("" none).
func (n NodeNet) IP() string {
	ip, _, _ := strings.Cut(n.Address, "/")
	return ip
}

// Node is a node's NIC stack emulated on Open vSwitch: per node
// interface a netdev bridge (the node's kernel: its bond or NIC and its
// VLANs), the interface's NICs as ports of that bridge (an OVS bond,
// with LACP when the design's bond is 802.3ad) cabled by veth to the
// design's switch ports, and per network a namespace on the bridge
// with the VLAN's tag and the node's address.
type Node struct {
	Name    string
	Bridges []string // one per cabled node interface
	NICs    []NodeNIC
	Nets    []NodeNet
}

// Net is the node's network by name.
func (n *Node) Net(network string) (NodeNet, bool) {
	for _, x := range n.Nets {
		if x.Network == network {
			return x, true
		}
	}
	return NodeNet{}, false
}

// NIC is the node's NIC by device alias.
func (n *Node) NIC(alias string) (NodeNIC, bool) {
	for _, x := range n.NICs {
		if x.Alias == alias {
			return x, true
		}
	}
	return NodeNIC{}, false
}

// NodeSide emulates node n's NIC stack in host (see Node), cabling each
// of its NICs to the port of switches[switch] the design names; the
// switch ports are added to their bridges unconfigured (OVS's default:
// every VLAN), for a network driver to configure. The node side is set
// as the production phase's PortPlan says the switch ports will be.
// Everything is registered with the harnesses' Close.
func NodeSide(ctx context.Context, host *Switchd, switches map[string]SwitchBridge, n drivers.Node) (*Node, error) {
	plan, err := drivers.PortPlan(n, drivers.PhaseProduction)
	if err != nil {
		return nil, err
	}
	out := &Node{Name: n.Name}
	for _, in := range n.Interfaces {
		var ports []drivers.PortConfig
		for _, p := range plan {
			if p.Interface == in.Name {
				ports = append(ports, p)
			}
		}
		if len(ports) == 0 {
			continue
		}
		if err := out.addInterface(ctx, host, switches, in, ports); err != nil {
			return nil, fmt.Errorf("node %s interface %s: %w", n.Name, in.Name, err)
		}
	}
	return out, nil
}

// addInterface builds one node interface: its bridge, its NICs cabled
// to their switch ports and its uplink (a port or a bond) set as the
// switch side's ports, then its networks.
func (nd *Node) addInterface(ctx context.Context, host *Switchd, switches map[string]SwitchBridge, in drivers.Interface, ports []drivers.PortConfig) error {
	br, err := host.Name("nb")
	if err != nil {
		return err
	}
	if err := host.AddBridge(ctx, br); err != nil {
		return err
	}
	nd.Bridges = append(nd.Bridges, br)
	var peers []string
	for _, p := range ports {
		nic, err := cableNIC(ctx, host, switches, p, in.Link.MTU)
		if err != nil {
			return err
		}
		nd.NICs = append(nd.NICs, nic)
		peers = append(peers, nic.Peer)
	}
	args := []string{"add-port", br, peers[0]}
	if len(peers) > 1 {
		bond, err := host.Name("bond")
		if err != nil {
			return err
		}
		args = append(append([]string{"add-bond", br, bond}, peers...), bondSettings(ports[0])...)
	}
	if _, err := host.Vsctl(ctx, append(args, uplinkSettings(ports[0])...)...); err != nil {
		return err
	}
	return nd.addNetworks(ctx, host, br, in)
}

// cableNIC makes the veth from the switch port p (added to its bridge)
// to a node end in host's namespace, both up, the link's MTU on both.
func cableNIC(ctx context.Context, host *Switchd, switches map[string]SwitchBridge, p drivers.PortConfig, mtu int) (NodeNIC, error) {
	sw, ok := switches[p.Switch]
	if !ok || sw.D == nil {
		return NodeNIC{}, fmt.Errorf("NIC %s is cabled to switch %s, which the harness does not have", p.Alias, p.Switch)
	}
	peer, err := host.Name("nic")
	if err != nil {
		return NodeNIC{}, err
	}
	if err := sw.D.Veth(ctx, p.Port, peer); err != nil {
		return NodeNIC{}, err
	}
	if sw.D.NS != host.NS {
		if err := sw.D.MoveTo(ctx, "", peer, host.NS); err != nil {
			return NodeNIC{}, err
		}
	}
	if _, err := sw.D.Vsctl(ctx, "add-port", sw.Bridge, p.Port); err != nil {
		return NodeNIC{}, err
	}
	for _, end := range []struct {
		d   *Switchd
		dev string
	}{{sw.D, p.Port}, {host, peer}} {
		if mtu > 0 {
			if err := end.d.SetMTU(ctx, "", end.dev, mtu); err != nil {
				return NodeNIC{}, err
			}
		}
		if err := end.d.Up(ctx, "", end.dev); err != nil {
			return NodeNIC{}, err
		}
	}
	return NodeNIC{Alias: p.Alias, Interface: p.Interface, Switch: p.Switch, Port: p.Port, Peer: peer}, nil
}

// bondSettings are the node bond's columns: LACP (active, the design's
// rate) with balance-tcp for 802.3ad, active-backup otherwise.
func bondSettings(p drivers.PortConfig) []string {
	if p.LACP == "" {
		return []string{"bond_mode=active-backup"}
	}
	return []string{"bond_mode=balance-tcp", "lacp=active", "other_config:lacp-time=" + p.LACPRate}
}

// uplinkSettings set the node's uplink as the switch port p will be: the
// node's untagged network on p's untagged VLAN, its tagged ones tagged.
func uplinkSettings(p drivers.PortConfig) []string {
	if p.Mode == drivers.ModeAccess {
		return []string{"tag=" + strconv.Itoa(p.VLAN)}
	}
	trunks := make([]string, 0, len(p.Trunk)+1)
	for _, v := range p.VLANs() {
		trunks = append(trunks, strconv.Itoa(v))
	}
	if p.VLAN == 0 {
		return []string{"vlan_mode=trunk", "trunks=" + strings.Join(trunks, ",")}
	}
	return []string{"vlan_mode=native-untagged", "tag=" + strconv.Itoa(p.VLAN),
		"trunks=" + strings.Join(trunks, ",")}
}

// addNetworks gives each network of in (point-to-point ones aside) a
// namespace cabled to the interface's bridge br with the network's
// switch VLAN as its tag, and the node's address when the design gives
// one.
func (nd *Node) addNetworks(ctx context.Context, host *Switchd, br string, in drivers.Interface) error {
	for _, nw := range in.Networks {
		if nw.PointToPoint || nw.SwitchVLAN() == 0 {
			continue
		}
		ns, err := host.NewNetns("nn")
		if err != nil {
			return err
		}
		port, err := host.Name("np")
		if err != nil {
			return err
		}
		dev, err := host.Cable(ctx, br, port, ns, "tag="+strconv.Itoa(nw.SwitchVLAN()))
		if err != nil {
			return err
		}
		net := NodeNet{Network: nw.Name, Interface: in.Name, NS: ns, Dev: dev, VLAN: nw.SwitchVLAN()}
		if net.Address, err = prefixed(nw.Address, nw.CIDR); err != nil {
			return fmt.Errorf("network %s: %w", nw.Name, err)
		}
		if net.Address != "" {
			if err := host.Addr(ctx, ns, dev, net.Address); err != nil {
				return err
			}
		}
		nd.Nets = append(nd.Nets, net)
	}
	return nil
}

// prefixed is addr with cidr's prefix length ("" when addr is no
// address: dhcp, auto).
func prefixed(addr, cidr string) (string, error) {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return "", nil
	}
	pfx, err := netip.ParsePrefix(cidr)
	if err != nil {
		return "", fmt.Errorf("subnet %q: %v", cidr, err)
	}
	return netip.PrefixFrom(ip, pfx.Bits()).String(), nil
}
