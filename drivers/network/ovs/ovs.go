// Package ovs is the built-in network driver for Open vSwitch, over
// OVSDB (RFC 7047) with libovsdb: each switch of the design is a bridge
// of an Open vSwitch database, each design port an Interface of that
// bridge (a veth or a NIC the operator attached). For each node and
// phase the driver sets what drivers.PortPlan says: access VLAN (Port
// tag), trunk VLANs with the native VLAN untagged (vlan_mode
// native-untagged), LAGs as OVS bonds (balance-tcp with LACP active for
// 802.3ad, active-backup otherwise), MTU (Interface mtu_request); one
// transaction per switch per call, none when nothing differs. It never
// creates or deletes an Interface, and never changes a port PortPlan
// does not name. After a change it waits until ovs-vswitchd applied it
// (cur_cfg reaches next_cfg), so the datapath carries what the call
// returned.
package ovs

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"

	"github.com/slipway-dev/slipway/drivers"
)

// Name is the driver's registry name.
const Name = "ovs"

// switchConf is how to reach one design switch: its OVSDB address and
// the bridge that is the switch.
type switchConf struct {
	name, addr, bridge string
}

// Driver is the Open vSwitch network driver.
type Driver struct {
	dbm      model.ClientDBModel
	switches map[string]switchConf // by design switch name

	mu    sync.Mutex
	conns map[string]*conn // by address: one connection per OVSDB server
}

// maxSwitches bounds the switches of one configuration.
const maxSwitches = 4096

// New builds the driver from the switch settings drivers.Switches reads:
// switch.NAME.address (unix:/path or tcp:host:port) and
// switch.NAME.bridge (default NAME). OVSDB over a unix socket or plain
// TCP has no credentials: a username or password given is refused
// rather than ignored. Nothing is dialled until a call needs a switch.
func New(cfg drivers.Config) (drivers.Network, error) {
	sws, rest, err := drivers.Switches(cfg)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, drivers.Errorf(drivers.Permanent, "ovs: unknown settings %s (the driver takes switch.NAME.address and switch.NAME.bridge)",
			strings.Join(slices.Sorted(maps.Keys(rest)), ", "))
	}
	if len(sws) > maxSwitches {
		return nil, drivers.Errorf(drivers.Permanent, "ovs: %d switches, more than %d", len(sws), maxSwitches)
	}
	dbm, err := dbModel()
	if err != nil {
		return nil, err
	}
	d := &Driver{dbm: dbm, switches: map[string]switchConf{}, conns: map[string]*conn{}}
	for name, e := range sws {
		sc, err := switchFrom(e)
		if err != nil {
			return nil, err
		}
		d.switches[name] = sc
	}
	return d, nil
}

// switchFrom checks one switch's settings.
func switchFrom(e drivers.SwitchEndpoint) (switchConf, error) {
	addr, err := parseAddress(e.Address)
	if err != nil {
		return switchConf{}, drivers.Errorf(drivers.Permanent, "ovs: switch %s: %v (setting switch.%s.address)", e.Name, err, e.Name)
	}
	if e.Username != "" || !e.Password.IsZero() {
		return switchConf{}, drivers.Errorf(drivers.Permanent,
			"ovs: switch %s has credentials, but OVSDB over unix: or tcp: takes none: remove switch.%s.username and its password", e.Name, e.Name)
	}
	sc := switchConf{name: e.Name, addr: addr, bridge: e.Name}
	for k, v := range e.Settings {
		switch k {
		case "bridge":
			if v == "" || len(v) > 255 {
				return switchConf{}, drivers.Errorf(drivers.Permanent, "ovs: switch %s: bridge %q is empty or too long", e.Name, v)
			}
			sc.bridge = v
		default:
			return switchConf{}, drivers.Errorf(drivers.Permanent, "ovs: switch %s: unknown setting switch.%s.%s (known: address, bridge)", e.Name, e.Name, k)
		}
	}
	return sc, nil
}

// conn is the connection for addr, made on first use.
func (d *Driver) conn(addr string) *conn {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.conns[addr]
	if c == nil {
		c = &conn{addr: addr, sem: make(chan struct{}, 1), cmu: make(chan struct{}, 1)}
		d.conns[addr] = c
	}
	return c
}

// sw is the design switch name's configuration; a switch the driver
// was not given is a Permanent error naming the node's port.
func (d *Driver) sw(p drivers.SwitchPort, node string) (switchConf, error) {
	sc, ok := d.switches[p.Switch]
	if !ok {
		who := ""
		if node != "" {
			who = " (node " + node + ")"
		}
		return switchConf{}, drivers.Errorf(drivers.Permanent,
			"ovs: port %s%s is on switch %s, which the driver has no address for: add switch.%s.address to the network driver's settings",
			p, who, p.Switch, p.Switch)
	}
	return sc, nil
}

// unreachable is the Transient error of a switch that does not answer.
func unreachable(sc switchConf, err error) error {
	return drivers.Errorf(drivers.Transient,
		"ovs: switch %s (OVSDB %s) does not answer: %v; check that ovsdb-server runs and listens there (ovs-vsctl --db=%s show), then retry",
		sc.name, sc.addr, err, sc.addr)
}

// snapshot reads sc's bridge and the interfaces names over c's client. When the read fails for
// want of a connection (the server restarted, the connection broke
// since the last call), it connects again and reads once more.
func (d *Driver) snapshot(ctx context.Context, c *conn, sc switchConf, names []string) (client.Client, *snapshot, error) {
	var err error
	for try := 0; try < 2; try++ {
		var cl client.Client
		cl, err = c.client(ctx, d.dbm)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			return nil, nil, unreachable(sc, err)
		}
		var snap *snapshot
		if snap, err = readBridge(ctx, cl, sc, names); err == nil {
			return cl, snap, nil
		}
		if ctx.Err() != nil || drivers.Classify(err) == drivers.Permanent {
			return nil, nil, err
		}
		c.drop()
	}
	return nil, nil, err
}

// Probe connects to every switch and checks its bridge exists.
func (d *Driver) Probe(ctx context.Context) (drivers.NetworkInfo, error) {
	if err := ctx.Err(); err != nil {
		return drivers.NetworkInfo{}, err
	}
	names := slices.Sorted(maps.Keys(d.switches))
	for _, name := range names {
		sc := d.switches[name]
		if _, _, err := d.snapshot(ctx, d.conn(sc.addr), sc, nil); err != nil {
			return drivers.NetworkInfo{}, err
		}
	}
	return drivers.NetworkInfo{Reachable: true,
		Description: fmt.Sprintf("ovs: Open vSwitch over OVSDB, %d switches (%s)", len(names), strings.Join(names, ", "))}, nil
}

// Close closes the driver's connections.
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.drop()
	}
	return nil
}

// String names the driver.
func (d *Driver) String() string { return fmt.Sprintf("network driver %q (built in)", Name) }

var (
	_ drivers.Network       = (*Driver)(nil)
	_ drivers.NetworkReader = (*Driver)(nil)
)
