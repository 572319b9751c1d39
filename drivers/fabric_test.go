package drivers_test

import (
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

// fabricNode is a node of a site with a fabric: a PXE NIC on an
// untagged network (switch VLAN 11), an LACP bond of two NICs on two
// switches trunking mgmt (untagged, native, switch VLAN 12) and storage
// (VLAN 30), and a NIC without a cable.
func fabricNode() drivers.Node {
	pxe := drivers.Subnet{Name: "pxe", CIDR: "10.11.0.0/24", UntaggedVLAN: 11}
	mgmt := drivers.Subnet{Name: "mgmt", CIDR: "10.12.0.0/24", UntaggedVLAN: 12}
	storage := drivers.Subnet{Name: "storage", CIDR: "10.13.0.0/24", VLAN: 30}
	return drivers.Node{
		NodeRef: drivers.NodeRef{Name: "n1"},
		Fabric:  &drivers.NodeFabric{ProvisioningVLAN: 11, QuarantineVLAN: 999, PXEInterface: "pxe"},
		Interfaces: []drivers.Interface{
			{Name: "pxe", Link: drivers.Link{Name: "pxe-link", MTU: 1500, BondMode: "disabled", Trunking: "disabled"},
				Devices:  []drivers.Device{{Alias: "pxe0", Switch: "leaf.r01", Port: "p1"}},
				Networks: []drivers.InterfaceNetwork{{Subnet: pxe, Address: "dhcp"}}},
			{Name: "bond0", Link: drivers.Link{Name: "data-bond", MTU: 9000, BondMode: "802.3ad", LACPRate: "fast", Trunking: "802.1q", NativeNetwork: "mgmt"},
				Devices:  []drivers.Device{{Alias: "data0", Switch: "leaf.r01", Port: "p2"}, {Alias: "data1", Switch: "leaf.r02", Port: "p2"}},
				Networks: []drivers.InterfaceNetwork{{Subnet: mgmt}, {Subnet: storage}}},
			{Name: "spare", Link: drivers.Link{Name: "spare-link", MTU: 1500, BondMode: "disabled", Trunking: "disabled"},
				Devices:  []drivers.Device{{Alias: "data2"}},
				Networks: []drivers.InterfaceNetwork{{Subnet: mgmt}}},
		},
	}
}

func port(sw, p, alias, iface, mode string, vlan int) drivers.PortConfig {
	return drivers.PortConfig{SwitchPort: drivers.SwitchPort{Switch: sw, Port: p}, Node: "n1", Alias: alias, Interface: iface, Mode: mode, VLAN: vlan, Enabled: true}
}

// PortPlan's rules, each with a case that fails and one that passes.
func TestPortPlanRules(t *testing.T) {
	access := func(c drivers.PortConfig, mtu int) drivers.PortConfig { c.MTU = mtu; return c }
	member := func(sw, alias, rate string) drivers.PortConfig {
		c := port(sw, "p2", alias, "bond0", drivers.ModeTrunk, 12)
		c.Trunk, c.LAG, c.LACP, c.LACPRate, c.MTU = []int{30}, "bond0", "active", rate, 9000
		return c
	}
	for _, tc := range []struct {
		name    string
		phase   drivers.Phase
		edit    func(n *drivers.Node)
		want    []drivers.PortConfig
		wantErr string
	}{
		{name: "unknown phase", phase: "staging", wantErr: `unknown network phase "staging"`},
		{name: "quarantine without a quarantine VLAN", phase: drivers.PhaseQuarantine,
			edit: func(n *drivers.Node) { n.Fabric.QuarantineVLAN = 0 }, wantErr: "fabric.quarantineVlan"},
		{name: "ok: quarantine puts every cabled port on the quarantine VLAN", phase: drivers.PhaseQuarantine,
			want: []drivers.PortConfig{port("leaf.r01", "p1", "pxe0", "pxe", drivers.ModeAccess, 999),
				port("leaf.r01", "p2", "data0", "bond0", drivers.ModeAccess, 999), port("leaf.r02", "p2", "data1", "bond0", drivers.ModeAccess, 999)}},
		{name: "provisioning without a provisioning VLAN", phase: drivers.PhaseProvisioning,
			edit: func(n *drivers.Node) { n.Fabric.ProvisioningVLAN = 0 }, wantErr: "no VLAN for the provisioning network"},
		{name: "ok: provisioning: the PXE interface on the provisioning VLAN, the others quarantined, no LAG", phase: drivers.PhaseProvisioning,
			want: []drivers.PortConfig{access(port("leaf.r01", "p1", "pxe0", "pxe", drivers.ModeAccess, 11), 1500),
				port("leaf.r01", "p2", "data0", "bond0", drivers.ModeAccess, 999), port("leaf.r02", "p2", "data1", "bond0", drivers.ModeAccess, 999)}},
		{name: "ok: production: access, trunk with its native VLAN, LAG with LACP", phase: drivers.PhaseProduction,
			want: []drivers.PortConfig{access(port("leaf.r01", "p1", "pxe0", "pxe", drivers.ModeAccess, 11), 1500),
				member("leaf.r01", "data0", "fast"), member("leaf.r02", "data1", "fast")}},
		{name: "ok: production: LACP rate slow when the bond names none", phase: drivers.PhaseProduction,
			edit: func(n *drivers.Node) { n.Interfaces[1].Link.LACPRate = "" },
			want: []drivers.PortConfig{access(port("leaf.r01", "p1", "pxe0", "pxe", drivers.ModeAccess, 11), 1500),
				member("leaf.r01", "data0", "slow"), member("leaf.r02", "data1", "slow")}},
		{name: "ok: production: a point-to-point network needs no switch VLAN", phase: drivers.PhaseProduction,
			edit: func(n *drivers.Node) {
				n.Interfaces[0].Networks = append(n.Interfaces[0].Networks, drivers.InterfaceNetwork{
					Subnet: drivers.Subnet{Name: "roce-10-50-0-0-31", CIDR: "10.50.0.0/31"}, Address: "10.50.0.0", PointToPoint: true})
			},
			want: []drivers.PortConfig{access(port("leaf.r01", "p1", "pxe0", "pxe", drivers.ModeAccess, 11), 1500),
				member("leaf.r01", "data0", "fast"), member("leaf.r02", "data1", "fast")}},
		{name: "production: two untagged networks", phase: drivers.PhaseProduction,
			edit: func(n *drivers.Node) {
				n.Interfaces[1].Networks = append(n.Interfaces[1].Networks, drivers.InterfaceNetwork{Subnet: drivers.Subnet{Name: "public", UntaggedVLAN: 13}})
			},
			wantErr: "two networks ride untagged (mgmt and public)"},
		{name: "production: several networks without trunking", phase: drivers.PhaseProduction,
			edit: func(n *drivers.Node) {
				n.Interfaces[0].Networks = append(n.Interfaces[0].Networks, drivers.InterfaceNetwork{Subnet: drivers.Subnet{Name: "storage", VLAN: 30}})
			},
			wantErr: "2 networks but the link pxe-link does not trunk"},
		{name: "production: an untagged network without a switch VLAN", phase: drivers.PhaseProduction,
			edit:    func(n *drivers.Node) { n.Interfaces[1].Networks[0].UntaggedVLAN = 0 },
			wantErr: "network mgmt has no VLAN on the switches"},
		{name: "ok: a node without a fabric or cables has no port", phase: drivers.PhaseProduction,
			edit: func(n *drivers.Node) {
				n.Fabric = nil
				for i := range n.Interfaces {
					for j := range n.Interfaces[i].Devices {
						n.Interfaces[i].Devices[j].Switch, n.Interfaces[i].Devices[j].Port = "", ""
					}
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := fabricNode()
			if tc.edit != nil {
				tc.edit(&n)
			}
			got, err := drivers.PortPlan(n, tc.phase)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || drivers.Classify(err) != drivers.Permanent {
					t.Fatalf("error %v (%s), want a permanent one saying %q", err, drivers.Classify(err), tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d ports, want %d: %+v", len(got), len(tc.want), got)
			}
			for i := range got {
				if !got[i].Equal(tc.want[i]) || got[i].Alias != tc.want[i].Alias || got[i].Interface != tc.want[i].Interface {
					t.Errorf("port %d: %+v\nwant %+v (%v)", i, got[i], tc.want[i], tc.want[i].Diff(got[i]))
				}
			}
		})
	}
}

// Switch endpoints written with SwitchSettings read back the same with
// Switches, names with dots included; the other settings are returned
// apart; a switch without an address is an error naming it.
func TestSwitchSettingsRoundTrip(t *testing.T) {
	in := []drivers.SwitchEndpoint{
		{Name: "leaf-r01", Address: "tcp:127.0.0.1:6640", Username: "admin", Password: drivers.NewSecret("pw1"), Settings: map[string]string{"bridge": "br-leaf"}},
		{Name: "leaf.r02.dc1", Address: "unix:/run/ovs/db.sock"},
	}
	cfg := drivers.Config{Settings: map[string]string{"timeout": "5s"}, Secrets: map[string]drivers.Secret{}}
	for _, e := range in {
		drivers.SwitchSettings(e, cfg.Settings, cfg.Secrets)
	}
	got, rest, err := drivers.Switches(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(rest, map[string]string{"timeout": "5s"}) {
		t.Errorf("rest %v", rest)
	}
	for _, e := range in {
		g := got[e.Name]
		if g.Name != e.Name || g.Address != e.Address || g.Username != e.Username || g.Password.Reveal() != e.Password.Reveal() || !maps.Equal(g.Settings, e.Settings) {
			t.Errorf("%s read back %+v, want %+v", e.Name, g, e)
		}
	}
	if len(got) != len(in) {
		t.Errorf("%d switches read back, want %d", len(got), len(in))
	}
	delete(cfg.Settings, "switch.leaf.r02.dc1.address")
	cfg.Settings["switch.leaf.r02.dc1.username"] = "x"
	if _, _, err := drivers.Switches(cfg); err == nil || !strings.Contains(err.Error(), "switch leaf.r02.dc1 has no address") {
		t.Errorf("a switch without an address: %v", err)
	}
}

// FuzzSwitchesKeys: whatever a setting's key, Switches does not panic, a
// switch it answers has an address, and what it answers written back
// with SwitchSettings reads back the same.
func FuzzSwitchesKeys(f *testing.F) {
	for _, k := range []string{"switch.a.address", "switch..address", "switch.a.", "switch.", "switch.a.b.c.bridge", "switchx.a.address", ".", "switch.a.password"} {
		f.Add(k, "v")
	}
	f.Fuzz(func(t *testing.T, key, val string) {
		cfg := drivers.Config{Settings: map[string]string{key: val, "switch.s1.address": "tcp:127.0.0.1:1"},
			Secrets: map[string]drivers.Secret{key: drivers.NewSecret("pw")}}
		got, rest, err := drivers.Switches(cfg)
		if err != nil {
			return
		}
		again := drivers.Config{Settings: maps.Clone(rest), Secrets: map[string]drivers.Secret{}}
		for name, e := range got {
			if e.Name != name || strings.TrimSpace(e.Address) == "" {
				t.Fatalf("switch %q: %+v", name, e)
			}
			drivers.SwitchSettings(e, again.Settings, again.Secrets)
		}
		got2, rest2, err := drivers.Switches(again)
		if err != nil {
			t.Fatalf("written back: %v", err)
		}
		if !maps.Equal(rest, rest2) || len(got) != len(got2) {
			t.Fatalf("written back: rest %v / %v, %d / %d switches", rest, rest2, len(got), len(got2))
		}
		for name, e := range got {
			g := got2[name]
			if g.Address != e.Address || g.Username != e.Username || g.Password.Reveal() != e.Password.Reveal() || !reflect.DeepEqual(g.Settings, e.Settings) {
				t.Fatalf("switch %q written back: %+v, was %+v", name, g, e)
			}
		}
	})
}

// A cabled interface that carries no switched network in production
// (none, or point-to-point ones only: RoCE) has its ports on the
// quarantine VLAN, as an access port: never an access port on VLAN 0,
// which no switch carries (and which Open vSwitch reads as untagged,
// sharing the node's frames with every port that passes them).
func TestPortPlanNoSwitchedNetwork(t *testing.T) {
	n := fabricNode()
	n.Interfaces[0].Networks = []drivers.InterfaceNetwork{{Subnet: drivers.Subnet{Name: "roce-10-50-0-0-31", CIDR: "10.50.0.0/31"},
		Address: "10.50.0.0", PointToPoint: true}}
	n.Interfaces[1].Networks = nil
	plan, err := drivers.PortPlan(n, drivers.PhaseProduction)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 3 {
		t.Fatalf("%d ports planned, want 3: %+v", len(plan), plan)
	}
	for _, p := range plan {
		if p.Mode != drivers.ModeAccess || p.VLAN != 999 || len(p.Trunk) != 0 || !p.Enabled {
			t.Errorf("port %s of interface %s: %s vlan %d trunk %v enabled %v, want access on the quarantine VLAN 999",
				p.SwitchPort, p.Interface, p.Mode, p.VLAN, p.Trunk, p.Enabled)
		}
	}
}

// TestGroupBySwitch: switches in the order the plan first names them,
// each with its ports in plan order, none lost.
func TestGroupBySwitch(t *testing.T) {
	p := func(sw, port string) drivers.PortConfig {
		return drivers.PortConfig{SwitchPort: drivers.SwitchPort{Switch: sw, Port: port}}
	}
	plan := []drivers.PortConfig{p("b", "1"), p("a", "1"), p("b", "2"), p("a", "2"), p("c", "9")}
	got := drivers.GroupBySwitch(plan)
	want := []string{"b:1 b:2", "a:1 a:2", "c:9"}
	if len(got) != len(want) {
		t.Fatalf("%d groups, want %d: %+v", len(got), len(want), got)
	}
	for i, g := range got {
		var names []string
		for _, c := range g.Ports {
			if c.Switch != g.Switch {
				t.Errorf("group %s holds %s", g.Switch, c.SwitchPort)
			}
			names = append(names, c.String())
		}
		if s := strings.Join(names, " "); s != want[i] {
			t.Errorf("group %d: %q, want %q", i, s, want[i])
		}
	}
	if drivers.GroupBySwitch(nil) != nil {
		t.Error("an empty plan has groups")
	}
}
