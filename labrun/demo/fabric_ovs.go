package demo

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/ovs"
)

// InstallHint is what a machine without the fabric's tools needs.
const InstallHint = "apt-get install openvswitch-switch iproute2 iputils-ping (and run as root)"

// ovsFabric is the demo's switch fabric in Open vSwitch (sim/ovs): one
// Open vSwitch per switch of the design (its bridge named as the switch,
// its ports the design's port names), an inter-switch trunk carrying
// every VLAN between consecutive switches (a port no node is cabled to),
// and a host-side Open vSwitch where each node's NICs end (ovs.NodeSide):
// a bridge per node interface bonds and tags them as the node's
// production plan says (this kernel has no bonding or 802.1Q modules),
// and a network namespace per node and network holds the node's address
// there. The node side is built before the deploy; until the driver
// configures them, the switch ports are Open vSwitch's default (every
// VLAN).
type ovsFabric struct {
	dir      string
	names    []string                // the switches, in order
	switches map[string]*ovs.Switchd // by switch name
	hosts    *ovs.Switchd            // the nodes' side
	attach   map[string]nodeNet      // node+"/"+network
	trunks   []string                // the inter-switch trunk's ports
}

// nodeNet is a node's attachment to one network: a namespace and the
// device holding its address.
type nodeNet struct {
	ns, dev string
	own     netip.Prefix
}

// startFabric starts one Open vSwitch per switch in dir, the trunks
// between them and the host side, and emulates every node's NICs, each
// cabled to its designed port (added unconfigured: every VLAN, until the
// network driver configures it).
func startFabric(ctx context.Context, dir string, switches []string, nodes []drivers.Node) (*ovsFabric, error) {
	if err := ovs.Available(); err != nil {
		return nil, fmt.Errorf("the demo's switch fabric runs Open vSwitch: %v; install it with %s, or run the demo with --no-fabric", err, InstallHint)
	}
	if len(switches) == 0 {
		return nil, errors.New("the design's fabric declares no switches")
	}
	f := &ovsFabric{dir: dir, names: switches, switches: map[string]*ovs.Switchd{}, attach: map[string]nodeNet{}}
	if err := f.start(ctx, nodes); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (f *ovsFabric) start(ctx context.Context, nodes []drivers.Node) error {
	for i, name := range f.names {
		sd, err := startSwitchd(ctx, filepath.Join(f.dir, "s"+strconv.Itoa(i)))
		if err != nil {
			return fmt.Errorf("switch %s: %w", name, err)
		}
		f.switches[name] = sd
		if err := sd.AddBridge(ctx, name); err != nil {
			return fmt.Errorf("switch %s: %w", name, err)
		}
	}
	var err error
	if f.hosts, err = startSwitchd(ctx, filepath.Join(f.dir, "h")); err != nil {
		return fmt.Errorf("the nodes' side: %w", err)
	}
	for i := 1; i < len(f.names); i++ {
		if err := f.trunk(ctx, f.names[i-1], f.names[i]); err != nil {
			return err
		}
	}
	return f.nodeSides(ctx, nodes)
}

func startSwitchd(ctx context.Context, dir string) (*ovs.Switchd, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return ovs.Start(ctx, dir)
}

// trunk cables switch a to switch b with a veth pair whose ends are
// ports carrying every VLAN (no tag, no trunks: Open vSwitch's trunk
// of all VLANs).
func (f *ovsFabric) trunk(ctx context.Context, a, b string) error {
	sa, sb := f.switches[a], f.switches[b]
	pa, err := sa.Name("isl")
	if err != nil {
		return err
	}
	pb, err := sb.Name("isl")
	if err != nil {
		return err
	}
	if err := sa.Veth(ctx, pa, pb); err != nil {
		return err
	}
	if err := sa.MoveTo(ctx, "", pb, sb.NS); err != nil {
		return err
	}
	for _, x := range []struct {
		sd          *ovs.Switchd
		bridge, dev string
	}{{sa, a, pa}, {sb, b, pb}} {
		if _, err := x.sd.Vsctl(ctx, "add-port", x.bridge, x.dev); err != nil {
			return fmt.Errorf("the trunk between %s and %s: %w", a, b, err)
		}
		if err := x.sd.Up(ctx, "", x.dev); err != nil {
			return err
		}
	}
	f.trunks = append(f.trunks, a+":"+pa, b+":"+pb)
	return nil
}

// Endpoints are the switches' endpoints for the ovs network driver: the
// Open vSwitch database of each, its bridge named as the switch.
func (f *ovsFabric) Endpoints() []drivers.SwitchEndpoint {
	out := make([]drivers.SwitchEndpoint, 0, len(f.names))
	for _, name := range f.names {
		out = append(out, drivers.SwitchEndpoint{Name: name, Address: f.switches[name].Unix, Settings: map[string]string{"bridge": name}})
	}
	return out
}

// nodeSides emulates every node's NIC stack (sim/ovs NodeSide: its
// NICs cabled to their designed switch ports, bonds and VLANs as its
// production plan says) and gives a node with no address on a network
// (DHCP) its probe address there.
func (f *ovsFabric) nodeSides(ctx context.Context, nodes []drivers.Node) error {
	sw := map[string]ovs.SwitchBridge{}
	for name, d := range f.switches {
		sw[name] = ovs.SwitchBridge{D: d, Bridge: name}
	}
	for i, n := range nodes {
		if err := checkCabling(n, f.switches); err != nil {
			return err
		}
		side, err := ovs.NodeSide(ctx, f.hosts, sw, n)
		if err != nil {
			return fmt.Errorf("node %s: emulate its NICs: %w", n.Name, err)
		}
		for _, nn := range side.Nets {
			nw, ok := networkOf(n, nn.Interface, nn.Network)
			if !ok {
				continue
			}
			addr, err := probeAddress(nw, i)
			if err != nil {
				return fmt.Errorf("node %s network %s: %w", n.Name, nn.Network, err)
			}
			if nn.Address == "" {
				if err := f.hosts.Addr(ctx, nn.NS, nn.Dev, addr.String()); err != nil {
					return err
				}
			}
			f.attach[n.Name+"/"+nn.Network] = nodeNet{ns: nn.NS, dev: nn.Dev, own: addr}
		}
	}
	return nil
}

// checkCabling: every switch n's NICs are cabled to is one of the fabric's.
func checkCabling(n drivers.Node, switches map[string]*ovs.Switchd) error {
	for _, in := range n.Interfaces {
		for _, d := range in.Devices {
			if _, ok := switches[d.Switch]; d.Switch != "" && !ok {
				return fmt.Errorf("node %s: NIC %s is cabled to switch %s, which the site's fabric does not declare", n.Name, d.Alias, d.Switch)
			}
		}
	}
	return nil
}

// networkOf is network nw of n's interface in.
func networkOf(n drivers.Node, in, nw string) (drivers.InterfaceNetwork, bool) {
	for _, i := range n.Interfaces {
		for _, x := range i.Networks {
			if i.Name == in && x.Name == nw {
				return x, true
			}
		}
	}
	return drivers.InterfaceNetwork{}, false
}

// Ping pings dst from node's namespace on network via, with src added
// for the probe when it is not the node's own address there: any answer
// within 5 s counts (ovs.Switchd.Ping returns at the first; a probe the
// fabric isolates waits the 5 s out).
func (f *ovsFabric) Ping(ctx context.Context, node, via string, src netip.Prefix, dst netip.Addr) (bool, error) {
	a, ok := f.attach[node+"/"+via]
	if !ok {
		return false, fmt.Errorf("node %s has no namespace on network %s", node, via)
	}
	if src != a.own {
		if err := f.hosts.Addr(ctx, a.ns, a.dev, src.String()); err != nil {
			return false, err
		}
		defer func() {
			_, _ = f.hosts.IP(context.WithoutCancel(ctx), a.ns, "addr", "del", src.String(), "dev", a.dev)
		}()
	}
	return f.hosts.Ping(ctx, a.ns, dst.String(), 5*time.Second), nil
}

// portVLAN reads port's access VLAN and trunks with ovs-vsctl, as its
// own Port row (found false: no Port of that name, e.g. still a LAG's
// member).
func (f *ovsFabric) portVLAN(ctx context.Context, p drivers.SwitchPort) (vlan int, trunk []int, found bool, err error) {
	sd, ok := f.switches[p.Switch]
	if !ok {
		return 0, nil, false, fmt.Errorf("no switch %s", p.Switch)
	}
	tag, err := sd.Vsctl(ctx, "--if-exists", "get", "Port", p.Port, "tag")
	if err != nil || strings.TrimSpace(tag) == "" {
		return 0, nil, false, err
	}
	vlan, _ = strconv.Atoi(strings.TrimSpace(tag)) // "[]": none
	trunks, err := sd.Vsctl(ctx, "--if-exists", "get", "Port", p.Port, "trunks")
	if err != nil {
		return 0, nil, false, err
	}
	for _, t := range strings.FieldsFunc(trunks, func(r rune) bool { return r == '[' || r == ']' || r == ',' || r == ' ' || r == '\n' }) {
		if v, err := strconv.Atoi(t); err == nil {
			trunk = append(trunk, v)
		}
	}
	return vlan, trunk, true, nil
}

// Close stops every Open vSwitch of the fabric, deleting its namespaces
// and veth pairs.
func (f *ovsFabric) Close() error {
	var errs []error
	if f.hosts != nil {
		errs = append(errs, f.hosts.Close())
	}
	for _, name := range f.names {
		if sd := f.switches[name]; sd != nil {
			errs = append(errs, sd.Close())
		}
	}
	return errors.Join(errs...)
}
