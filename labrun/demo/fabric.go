package demo

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/slipway-dev/slipway/drivers"
)

// The demo's fabric: after the deploy, the connectivity between the
// nodes is measured with real packets (ping between network namespaces
// cabled to Open vSwitch bridges, fabric_ovs.go), against what the design
// says: two nodes on one network reach each other, a node on another
// VLAN does not even with an address of the same subnet.

// Connectivity is what the demo measured of the fabric.
type Connectivity struct {
	// Networks are one matrix per network the switches carry, of the
	// nodes cabled to it.
	Networks []NetworkMatrix `json:"networks"`
	// CrossVLAN are probes from a node's attachment to one VLAN, given
	// an address of another network's subnet, to a node on that other
	// network: the design expects every one isolated.
	CrossVLAN []Probe `json:"cross_vlan"`
	// Quarantine are the ports of the node the demo destroyed, read with
	// ovs-vsctl after the destroy.
	Quarantine []QuarantinedPort `json:"quarantine,omitempty"`
	Pings      int               `json:"pings"`      // pings sent
	Unexpected int               `json:"unexpected"` // pings whose outcome the design does not expect
	Pass       bool              `json:"pass"`
}

// NetworkMatrix is one network's connectivity: Expected[i][j] is what
// the design says of node i reaching node j, Measured[i][j] what a ping
// from i to j's address did (the diagonal is not measured).
type NetworkMatrix struct {
	Network   string   `json:"network"`
	VLAN      int      `json:"vlan"`
	Nodes     []string `json:"nodes"`
	Addresses []string `json:"addresses"` // each node's address on the network
	Expected  [][]bool `json:"expected"`
	Measured  [][]bool `json:"measured"`
}

// Probe is one ping from node From's attachment to network Via (VLAN
// ViaVLAN), holding Source of network To's subnet, to node Target's
// address on network To.
type Probe struct {
	From     string `json:"from"`
	Via      string `json:"via"`
	ViaVLAN  int    `json:"via_vlan"`
	Source   string `json:"source"`
	Target   string `json:"target"`
	To       string `json:"to"`
	ToVLAN   int    `json:"to_vlan"`
	Address  string `json:"address"`
	Expected bool   `json:"expected"`
	Measured bool   `json:"measured"`
}

// QuarantinedPort is a destroyed node's port as the switch holds it.
type QuarantinedPort struct {
	Node   string `json:"node"`
	Switch string `json:"switch"`
	Port   string `json:"port"`
	Want   int    `json:"want_vlan"` // the site's quarantine VLAN
	VLAN   int    `json:"vlan"`      // the port's access VLAN (ovs-vsctl's tag)
	Trunk  []int  `json:"trunk,omitempty"`
	OK     bool   `json:"ok"`
}

// attachment is a node on one network the switches carry: its address
// there (a probe address when the network hands out addresses by DHCP).
type attachment struct {
	node, network string
	vlan          int
	prefix        netip.Prefix // the address with the subnet's length
}

// maxAttachments bounds the measured fabric: the pings grow with the
// square of the nodes of a network.
const maxAttachments = 256

// attachments lists, per network (in the order first met), the nodes
// with a cabled interface carrying it, of those include takes. A node
// whose address there is not static (DHCP) gets a probe address: the
// subnet's host number 200 + its index among the nodes.
func attachments(nodes []drivers.Node, include func(node string) bool) (map[string][]attachment, []string, error) {
	byNet := map[string][]attachment{}
	var order []string
	count := 0
	for i, n := range nodes {
		if !include(n.Name) {
			continue
		}
		for _, in := range n.Interfaces {
			if !cabled(in) {
				continue
			}
			for _, nw := range in.Networks {
				if nw.PointToPoint || nw.SwitchVLAN() == 0 {
					continue
				}
				p, err := probeAddress(nw, i)
				if err != nil {
					return nil, nil, fmt.Errorf("node %s network %s: %w", n.Name, nw.Name, err)
				}
				if _, ok := byNet[nw.Name]; !ok {
					order = append(order, nw.Name)
				}
				if count++; count > maxAttachments {
					return nil, nil, fmt.Errorf("the demo measures at most %d node attachments to networks", maxAttachments)
				}
				byNet[nw.Name] = append(byNet[nw.Name], attachment{node: n.Name, network: nw.Name, vlan: nw.SwitchVLAN(), prefix: p})
			}
		}
	}
	return byNet, order, nil
}

// cabled: one of the interface's NICs has a switch port.
func cabled(in drivers.Interface) bool {
	return slices.ContainsFunc(in.Devices, func(d drivers.Device) bool { return d.Switch != "" && d.Port != "" })
}

// probeAddress is the node's address on nw with its prefix length; a
// DHCP (or unaddressed) node the host number 200+index of the subnet.
func probeAddress(nw drivers.InterfaceNetwork, index int) (netip.Prefix, error) {
	cidr, err := netip.ParsePrefix(nw.CIDR)
	if err != nil || !cidr.Addr().Is4() || cidr.Bits() > 24 {
		return netip.Prefix{}, fmt.Errorf("cidr %q: the demo probes IPv4 subnets of /24 or larger", nw.CIDR)
	}
	if a, err := netip.ParseAddr(nw.Address); err == nil {
		return netip.PrefixFrom(a, cidr.Bits()), nil
	}
	return hostOf(cidr, 200+index)
}

// hostOf is host number h of the subnet (h < 255).
func hostOf(cidr netip.Prefix, h int) (netip.Prefix, error) {
	if h <= 0 || h >= 255 {
		return netip.Prefix{}, fmt.Errorf("no probe address number %d in %s", h, cidr)
	}
	b := cidr.Masked().Addr().As4()
	b[3] += byte(h)
	return netip.PrefixFrom(netip.AddrFrom4(b), cidr.Bits()), nil
}

// pinger sends real packets between the emulated nodes.
type pinger interface {
	// Ping reports whether node's attachment to network via, holding
	// src (added for the probe when it is not the attachment's own
	// address), gets an answer from dst.
	Ping(ctx context.Context, node, via string, src netip.Prefix, dst netip.Addr) (bool, error)
}

// pingJob is one ping of the measurement and where its answer goes.
type pingJob struct {
	node, via string
	src       netip.Prefix
	dst       netip.Addr
	out       *bool
}

// measureConnectivity pings between every pair of the nodes include
// takes on each network, and sends one cross-VLAN probe per node and
// ordered pair of networks on different VLANs (to the next node on the
// other network), at most parallel pings at once.
func measureConnectivity(ctx context.Context, p pinger, nodes []drivers.Node, include func(string) bool, parallel int) (Connectivity, error) {
	byNet, order, err := attachments(nodes, include)
	if err != nil {
		return Connectivity{}, err
	}
	var c Connectivity
	var jobs []pingJob
	for _, name := range order {
		as := byNet[name]
		m := NetworkMatrix{Network: name, VLAN: as[0].vlan}
		m.Expected, m.Measured = square(len(as)), square(len(as))
		for _, a := range as {
			m.Nodes, m.Addresses = append(m.Nodes, a.node), append(m.Addresses, a.prefix.Addr().String())
		}
		c.Networks = append(c.Networks, m)
	}
	for k, name := range order {
		m, as := &c.Networks[k], byNet[name]
		for i, a := range as {
			for j, b := range as {
				if i != j {
					m.Expected[i][j] = true
					jobs = append(jobs, pingJob{node: a.node, via: name, src: a.prefix, dst: b.prefix.Addr(), out: &m.Measured[i][j]})
				}
			}
		}
	}
	c.CrossVLAN = crossProbes(byNet, order)
	for i := range c.CrossVLAN {
		pr := &c.CrossVLAN[i]
		src, dst := netip.MustParsePrefix(pr.Source), netip.MustParseAddr(pr.Address)
		jobs = append(jobs, pingJob{node: pr.From, via: pr.Via, src: src, dst: dst, out: &pr.Measured})
	}
	if err := runPings(ctx, p, jobs, parallel); err != nil {
		return c, err
	}
	c.Pings = len(jobs)
	c.judge()
	return c, nil
}

func square(n int) [][]bool {
	out := make([][]bool, n)
	for i := range out {
		out[i] = make([]bool, n)
	}
	return out
}

// crossProbes are the cross-VLAN probes: for each ordered pair of
// networks on different VLANs and each node a of the first, from a's
// attachment to the first with a probe address of the second's subnet
// (host 250 - a's index) to the next node of the second network (not a).
func crossProbes(byNet map[string][]attachment, order []string) []Probe {
	var out []Probe
	for _, via := range order {
		for _, to := range order {
			from, targets := byNet[via], byNet[to]
			if via == to || from[0].vlan == targets[0].vlan {
				continue
			}
			for i, a := range from {
				t, ok := nextOther(targets, a.node, i)
				if !ok {
					continue
				}
				src, err := hostOf(t.prefix.Masked(), 250-i%40)
				if err != nil {
					continue
				}
				out = append(out, Probe{From: a.node, Via: via, ViaVLAN: a.vlan, Source: src.String(), Target: t.node,
					To: to, ToVLAN: t.vlan, Address: t.prefix.Addr().String()})
			}
		}
	}
	return out
}

// nextOther is the target after index i (cyclically) that is not node.
func nextOther(targets []attachment, node string, i int) (attachment, bool) {
	for k := 1; k <= len(targets); k++ {
		if t := targets[(i+k)%len(targets)]; t.node != node {
			return t, true
		}
	}
	return attachment{}, false
}

// runPings runs the jobs, at most parallel at once; the first error
// stops the rest.
func runPings(ctx context.Context, p pinger, jobs []pingJob, parallel int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, j := range jobs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			ok, err := p.Ping(ctx, j.node, j.via, j.src, j.dst)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = fmt.Errorf("ping from node %s on %s to %s: %w", j.node, j.via, j.dst, err)
				cancel()
			}
			*j.out = ok
		}()
	}
	wg.Wait()
	return first
}

// judge counts the pings the design does not expect and sets Pass.
func (c *Connectivity) judge() {
	c.Unexpected = 0
	for _, m := range c.Networks {
		for i := range m.Nodes {
			for j := range m.Nodes {
				if i != j && m.Expected[i][j] != m.Measured[i][j] {
					c.Unexpected++
				}
			}
		}
	}
	for _, p := range c.CrossVLAN {
		if p.Expected != p.Measured {
			c.Unexpected++
		}
	}
	quarantined := true
	for _, q := range c.Quarantine {
		quarantined = quarantined && q.OK
	}
	c.Pass = c.Pings > 0 && c.Unexpected == 0 && quarantined
}

// Text writes the matrices, the probes, the quarantined ports and the
// PASS/FAIL line to w. A cell is "yes" (reached, as expected), "no"
// (isolated, as expected), "yes!" / "no!" (measured so, against the
// design) or "." (the node itself).
func (c Connectivity) Text(w io.Writer) {
	for _, m := range c.Networks {
		fmt.Fprintf(w, "\nnetwork %s (VLAN %d on the switches), ping from row to column:\n", m.Network, m.VLAN)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "\t%s\n", strings.Join(m.Nodes, "\t"))
		for i, n := range m.Nodes {
			cells := make([]string, len(m.Nodes))
			for j := range m.Nodes {
				cells[j] = cell(i == j, m.Expected[i][j], m.Measured[i][j])
			}
			fmt.Fprintf(tw, "%s %s\t%s\n", n, m.Addresses[i], strings.Join(cells, "\t"))
		}
		_ = tw.Flush()
	}
	isolated := 0
	for _, p := range c.CrossVLAN {
		if !p.Measured {
			isolated++
		} else {
			fmt.Fprintf(w, "cross-VLAN probe REACHED: %s on %s (VLAN %d) as %s -> %s %s on %s (VLAN %d)\n",
				p.From, p.Via, p.ViaVLAN, p.Source, p.Target, p.Address, p.To, p.ToVLAN)
		}
	}
	fmt.Fprintf(w, "\ncross-VLAN probes (an address of the other network's subnet, on the wrong VLAN): %d of %d isolated, as the design expects\n",
		isolated, len(c.CrossVLAN))
	for _, q := range c.Quarantine {
		fmt.Fprintf(w, "after destroy: %s port %s:%s in VLAN %d (ovs-vsctl), quarantine VLAN %d%s\n",
			q.Node, q.Switch, q.Port, q.VLAN, q.Want, map[bool]string{true: "", false: "  FAIL"}[q.OK])
	}
	verdict := "PASS"
	if !c.Pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "%s: %d pings measured, %d not as the design says\n", verdict, c.Pings, c.Unexpected)
}

func cell(self, expected, measured bool) string {
	switch {
	case self:
		return "."
	case expected == measured && measured:
		return "yes"
	case expected == measured:
		return "no"
	case measured:
		return "yes!"
	}
	return "no!"
}
