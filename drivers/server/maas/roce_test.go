package maas

import (
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	maassim "github.com/slipway-dev/slipway/sim/maas"
)

// TestRoCELinks: a RoCE /31 on an interface is made a subnet on that
// interface's VLAN (link_subnet takes only those) and linked static beside
// the interface's own network; a second run writes nothing; a subnet of
// that CIDR on another VLAN is refused naming both, and so is an address
// on a DHCP interface (MAAS's static link would drop the DHCP one).
func TestRoCELinks(t *testing.T) {
	d := cfgDesign(t)
	l, drv := cfgLab(t, d)
	const name = "r01-cmp01"
	id := cfgCommission(t, l, drv, name)
	cfgSubnets(t, drv, driverspec.Site(d))
	n := driverspec.Node(d, d.Nodes[name], id)
	if err := driverspec.AddRoCE(&n, d.Nodes[name].Spec.Hardware, []driverspec.RoCEAddress{{Interface: "bond0", CIDR: "10.250.0.1/31"}}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	r, err := drv.ApplyNetworking(ctx, n)
	if err != nil || r.Status != drivers.StatusDone || !strings.Contains(r.Message, "made subnet 10.250.0.0/31") {
		t.Fatalf("networking: %+v %v", r, err)
	}
	w1, _ := cfgWrites(l)
	if r, err := drv.ApplyNetworking(ctx, n); err != nil || !strings.Contains(r.Message, "already configured") {
		t.Fatalf("again: %+v %v", r, err)
	}
	if w2, _ := cfgWrites(l); w2 != w1 {
		t.Errorf("the second run wrote %d times", w2-w1)
	}
	m := cfgMachine(t, drv, id)
	i := slices.IndexFunc(m.Interfaces, func(x mInterface) bool { return x.Name == "bond0" })
	if i < 0 {
		t.Fatalf("no bond0 interface: %+v", m.Interfaces)
	}
	bond := m.Interfaces[i]
	var roce, own *mLink
	for j := range bond.Links {
		switch lk := &bond.Links[j]; {
		case strings.EqualFold(lk.Mode, "static") && lk.IP == "10.250.0.1":
			roce = lk
		case strings.EqualFold(lk.Mode, "static") && lk.IP == "10.12.0.101":
			own = lk
		}
	}
	if roce == nil || own == nil || roce.Subnet == nil || roce.Subnet.VLAN == nil || bond.VLAN == nil || roce.Subnet.VLAN.ID != bond.VLAN.ID {
		t.Fatalf("bond0 links: %+v (VLAN %+v)", bond.Links, bond.VLAN)
	}

	// The same CIDR on another VLAN: refused, nothing linked.
	n2 := driverspec.Node(d, d.Nodes[name], id)
	var subnets []mSubnet
	cfgCall(t, drv, "GET", "subnets/", "", nil, &subnets)
	other := slices.IndexFunc(subnets, func(s mSubnet) bool { return s.VLAN != nil && s.VLAN.ID != bond.VLAN.ID })
	if other < 0 {
		t.Fatal("no subnet on another VLAN")
	}
	if err := driverspec.AddRoCE(&n2, d.Nodes[name].Spec.Hardware, []driverspec.RoCEAddress{{Interface: "bond0", CIDR: subnets[other].CIDR}}); err != nil {
		t.Fatal(err)
	}
	if _, err := drv.ApplyNetworking(ctx, n2); drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), "not on bond0's") {
		t.Errorf("a RoCE CIDR of another VLAN's subnet: %v", err)
	}
	// AddRoCE refuses this one too; the spec is built by hand to see that
	// the driver refuses it on its own.
	n3 := driverspec.Node(d, d.Nodes[name], id)
	pxe := slices.IndexFunc(n3.Interfaces, func(in drivers.Interface) bool {
		return slices.ContainsFunc(in.Devices, func(dv drivers.Device) bool { return dv.Alias == "pxe0" })
	})
	if pxe < 0 {
		t.Fatal("no interface holds pxe0")
	}
	n3.Interfaces[pxe].Networks = append(n3.Interfaces[pxe].Networks, drivers.InterfaceNetwork{
		Subnet: drivers.Subnet{Name: "roce-10-250-0-2-31", CIDR: "10.250.0.2/31"}, Address: "10.250.0.3", PointToPoint: true})
	if _, err := drv.ApplyNetworking(ctx, n3); drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), "takes DHCP") {
		t.Errorf("a RoCE address on the DHCP interface: %v", err)
	}
}

// TestCommissionOptions: Commission asks MAAS to leave the BMC alone
// unless the skipBMCConfig setting is false (a site's policy), and runs
// the scripts the node's profile chose; the lab's MAAS says what it was
// asked.
func TestCommissionOptions(t *testing.T) {
	d := cfgDesign(t)
	l, drv := cfgLab(t, d)
	info := l.Info()
	own, err := NewDriver(drivers.Config{Settings: map[string]string{SettingURL: info.MAASURL, SettingSkipBMCConfig: "false"},
		Secrets: map[string]drivers.Secret{SecretAPIKey: drivers.NewSecret(info.APIKey)}})
	if err != nil {
		t.Fatal(err)
	}
	region := l.Regions()[0].MAAS
	for i, c := range []struct {
		node    string
		drv     *Driver
		scripts *drivers.CommissionScripts
		skip    bool
	}{
		{"r01-cmp01", drv, &drivers.CommissionScripts{Commissioning: []string{"maas-lshw"}, Testing: []string{"none"}}, true},
		{"r01-cmp02", own, nil, false},
	} {
		id := cfgEnlisted(t, l, drv, c.node)
		r, err := c.drv.Commission(t.Context(), drivers.NodeRef{Name: c.node, MachineID: id, Scripts: c.scripts})
		if err != nil || r.Status != drivers.StatusInProgress {
			t.Fatalf("%d: commission: %+v %v", i, r, err)
		}
		got := region.LastCommission(id)
		want := maassim.CommissionRequest{SkipBMCConfig: c.skip}
		if c.scripts != nil {
			want.Commissioning, want.Testing = c.scripts.Commissioning, c.scripts.Testing
		}
		if !slices.Equal(got.Commissioning, want.Commissioning) || !slices.Equal(got.Testing, want.Testing) || got.SkipBMCConfig != want.SkipBMCConfig {
			t.Errorf("%d: the lab's MAAS was asked %+v, want %+v", i, got, want)
		}
	}
}
