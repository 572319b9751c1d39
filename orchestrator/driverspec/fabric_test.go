package driverspec_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
)

// Without a fabric a node carries no switch port, switch VLAN or
// NodeFabric, so noop sites are what they were.
func TestNodeWithoutFabric(t *testing.T) {
	d := designtest.Example(t)
	cabled := designtest.Fabric(d, "fake", nil)
	for _, site := range d.SiteNames() { // cabled nodes, no fabric
		s := d.SiteNamed(site)
		s.Spec.Fabric, s.Spec.Drivers.Network = design.Fabric{}, "noop"
	}
	if len(cabled) == 0 || len(d.Nodes["r01-cmp01"].Spec.Cabling) == 0 {
		t.Fatalf("r01-cmp01 is not cabled: %v", cabled)
	}
	n := driverspec.Node(d, d.Nodes["r01-cmp01"], "")
	if n.Fabric != nil {
		t.Errorf("Fabric = %+v, want nil", n.Fabric)
	}
	for _, in := range n.Interfaces {
		for _, dev := range in.Devices {
			if dev.Switch != "" || dev.Port != "" {
				t.Errorf("%s: device %s cabled to %s:%s without a fabric", in.Name, dev.Alias, dev.Switch, dev.Port)
			}
		}
		for _, nw := range in.Networks {
			if nw.UntaggedVLAN != 0 {
				t.Errorf("%s: network %s has switch VLAN %d without a fabric", in.Name, nw.Name, nw.UntaggedVLAN)
			}
		}
	}
	if ports, err := driverspec.Ports(d, d.Nodes["r01-cmp01"], drivers.PhaseProduction); err != nil || len(ports) != 0 {
		t.Errorf("Ports without a fabric = %v, %v; want none", ports, err)
	}
}

// With a fabric, each cabled device names its switch port, untagged
// networks their switchVlan, and the ports of each phase follow.
func TestNodeFabricPorts(t *testing.T) {
	d := designtest.Example(t)
	designtest.Fabric(d, "fake", nil)
	node := d.Nodes["r01-cmp01"]
	n := driverspec.Node(d, node, "")
	pxeVLAN, mgmtVLAN := d.Networks["pxe"].Spec.SwitchVLAN, d.Networks["mgmt"].Spec.SwitchVLAN
	if pxeVLAN == 0 || mgmtVLAN == 0 {
		t.Fatalf("designtest.Fabric gave no switchVlan: pxe %d mgmt %d", pxeVLAN, mgmtVLAN)
	}
	want := &drivers.NodeFabric{ProvisioningVLAN: pxeVLAN, QuarantineVLAN: designtest.FabricQuarantineVLAN, PXEInterface: "pxe"}
	if diff := cmp.Diff(want, n.Fabric); diff != "" {
		t.Errorf("Fabric (-want +got):\n%s", diff)
	}
	c := node.Spec.Cabling
	prov, err := driverspec.Ports(d, node, drivers.PhaseProvisioning)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]drivers.PortConfig{}
	for _, p := range prov {
		got[p.Alias] = p
	}
	if p := got["pxe0"]; p.SwitchPort != (drivers.SwitchPort{Switch: c["pxe0"].Switch, Port: c["pxe0"].Port}) || p.VLAN != pxeVLAN || p.Mode != drivers.ModeAccess {
		t.Errorf("provisioning pxe0 = %+v, want access on %d at %v", p, pxeVLAN, c["pxe0"])
	}
	if p := got["data0"]; p.VLAN != designtest.FabricQuarantineVLAN || p.Port != c["data0"].Port {
		t.Errorf("provisioning data0 = %+v, want quarantine", p)
	}
	prod, err := driverspec.Ports(d, node, drivers.PhaseProduction)
	if err != nil {
		t.Fatal(err)
	}
	if len(prod) != 3 {
		t.Fatalf("production ports = %d, want 3 (pxe0, data0, data1): %+v", len(prod), prod)
	}
	for _, p := range prod {
		if p.Alias == "pxe0" {
			continue
		}
		wantP := drivers.PortConfig{SwitchPort: drivers.SwitchPort{Switch: c[p.Alias].Switch, Port: c[p.Alias].Port}, Mode: drivers.ModeTrunk,
			VLAN: mgmtVLAN, Trunk: []int{30}, LAG: "bond0", LACP: "active", LACPRate: "fast", MTU: 9000, Enabled: true}
		if !p.Equal(wantP) {
			t.Errorf("production %s: %v", p.Alias, wantP.Diff(p))
		}
	}
}

// Switches resolves each switch's password and NetworkConfig writes the
// form drivers.Switches reads back.
func TestSwitchesConfigRoundTrip(t *testing.T) {
	d := designtest.Example(t)
	names := designtest.Fabric(d, "fake", func(sw string) string { return "tcp:127.0.0.1:66" + sw[len(sw)-1:] })
	sw := d.Site.Spec.Fabric.Switches[names[0]]
	sw.Password, sw.Username = "secret:leaf-pw", "admin"
	d.Site.Spec.Fabric.Switches[names[0]] = sw
	eps, err := driverspec.Switches(d, func(s design.SiteSwitch) (drivers.Secret, error) { return drivers.NewSecret("pw-" + s.Name), nil })
	if err != nil {
		t.Fatal(err)
	}
	cfg := driverspec.NetworkConfig(drivers.Config{Settings: map[string]string{"timeout": "5s"}}, eps)
	back, rest, err := drivers.Switches(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(names) || rest["timeout"] != "5s" {
		t.Fatalf("read back %d switches (want %d), rest %v", len(back), len(names), rest)
	}
	b := back[names[0]]
	if b.Address != sw.Address || b.Username != "admin" || b.Password.Reveal() != "pw-"+names[0] {
		t.Errorf("switch %s read back %+v", names[0], b)
	}
}
