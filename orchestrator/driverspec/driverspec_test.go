package driverspec_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
)

func TestNodeSiteAndBMC(t *testing.T) {
	d := designtest.Example(t)
	n := d.Nodes["r01-cmp01"]
	got := driverspec.Node(d, n, "abc123")
	if got.MachineID != "abc123" || got.Hostname != "r01-cmp01" || got.Domain != d.Site.Spec.Domain || got.Platform.Image == "" {
		t.Errorf("node basics: %+v", got.NodeRef)
	}
	var bond *drivers.Interface
	for i := range got.Interfaces {
		if got.Interfaces[i].Link.BondMode == "802.3ad" {
			bond = &got.Interfaces[i]
		}
	}
	if bond == nil {
		t.Fatal("no 802.3ad interface")
	}
	if len(bond.Devices) != 2 || bond.Devices[0].Bus != "pci" || bond.Devices[0].Address == "" {
		t.Errorf("bond devices not resolved to PCI addresses: %+v", bond.Devices)
	}
	addressed := map[string]string{}
	for _, nw := range bond.Networks {
		addressed[nw.Name] = nw.Address
	}
	want := map[string]string{}
	for _, a := range n.Spec.Addressing {
		if _, ok := addressed[a.Network]; ok {
			want[a.Network] = a.Address
		}
	}
	if d := cmp.Diff(want, addressed); d != "" || len(want) == 0 {
		t.Errorf("bond addresses (-want +got):\n%s", d)
	}
	if len(got.Storage.Devices) == 0 || len(got.Storage.VolumeGroups) == 0 {
		t.Errorf("storage not carried: %+v", got.Storage)
	}
	site := driverspec.Site(d)
	if len(site.Subnets) != len(d.Networks) {
		t.Errorf("site has %d subnets, design %d networks", len(site.Subnets), len(d.Networks))
	}
	bmc := driverspec.BMC(d, n, drivers.NewSecret("pw"))
	if bmc.Address != n.Spec.OOB.Address || bmc.Port != 623 || bmc.CipherSuite != 3 || bmc.Username == "" || bmc.Password.Reveal() != "pw" {
		t.Errorf("bmc: %+v", bmc)
	}
	p := driverspec.Power(d, n, drivers.NewSecret("pw"))
	if p.Address != bmc.Address || p.Type == "" || p.Password.Reveal() != "pw" {
		t.Errorf("power: %+v", p)
	}
}

// A node's constraints reach the driver with the memory in MiB, rounded
// up; a node without them has none.
func TestNodeConstraints(t *testing.T) {
	d := designtest.Example(t)
	n := *d.Nodes["r01-cmp01"]
	if got := driverspec.Node(d, &n, "").Constraints; got != nil {
		t.Fatalf("constraints of a node without them: %+v", got)
	}
	n.Spec.Constraints = &design.Constraints{Zone: "z1", Pool: "gpu", Tags: []string{"gpu-h100x8"}, MinCPU: 64, MinMemory: "1000m"}
	got := driverspec.Node(d, &n, "").Constraints
	want := &drivers.Constraints{Zone: "z1", Pool: "gpu", Tags: []string{"gpu-h100x8"}, MinCPU: 64, MinMemoryMiB: 954}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("constraints (-want +got):\n%s", diff)
	}
}

// TestPXENetwork: each point of Site's PXE rule, in its order.
func TestPXENetwork(t *testing.T) {
	link := func(mode, native string, nets ...string) *design.NetworkLink {
		return &design.NetworkLink{Spec: design.NetworkLinkSpec{Trunking: design.Trunking{Mode: mode, NativeNetwork: native}, AllowedNetworks: nets}}
	}
	node := func(dev, linkName string, nets ...string) *design.Node {
		n := &design.Node{}
		n.Spec.Hardware = &design.HardwareProfileSpec{PXE: design.PXEConfig{Interface: dev}}
		n.Spec.Interfaces = map[string]design.Interface{"if0": {Link: linkName, Devices: []string{"nic0"}, Networks: nets}}
		return n
	}
	nets := func(names ...string) map[string]*design.Network {
		m := map[string]*design.Network{}
		for _, n := range names {
			m[n] = &design.Network{}
		}
		return m
	}
	for _, tc := range []struct {
		name string
		d    design.Design
		want string
	}{
		{"node's untagged network", design.Design{Networks: nets("prov", "pxe"), NetworkLinks: map[string]*design.NetworkLink{"l": link("disabled", "")},
			Nodes: map[string]*design.Node{"a": node("nic0", "l", "prov")}}, "prov"},
		{"node's trunk native", design.Design{Networks: nets("prov", "st", "pxe"), NetworkLinks: map[string]*design.NetworkLink{"l": link("802.1q", "prov")},
			Nodes: map[string]*design.Node{"a": node("nic0", "l", "st", "prov")}}, "prov"},
		{"trunk without native: the pxe network", design.Design{Networks: nets("st", "pxe"), NetworkLinks: map[string]*design.NetworkLink{"l": link("802.1q", "")},
			Nodes: map[string]*design.Node{"a": node("nic0", "l", "st")}}, "pxe"},
		{"device on no interface", design.Design{Networks: nets("prov", "pxe"), NetworkLinks: map[string]*design.NetworkLink{"l": link("disabled", "")},
			Nodes: map[string]*design.Node{"a": node("nic9", "l", "prov")}}, "pxe"},
		{"pxe link native", design.Design{Networks: nets("boot"), NetworkLinks: map[string]*design.NetworkLink{"pxe-link": link("802.1q", "boot", "boot", "x")}}, "boot"},
		{"pxe link's only network", design.Design{Networks: nets("boot"), NetworkLinks: map[string]*design.NetworkLink{"pxe-link": link("disabled", "", "boot")}}, "boot"},
		{"nothing", design.Design{Networks: nets("a"), NetworkLinks: map[string]*design.NetworkLink{"l": link("disabled", "", "a")}}, ""},
	} {
		if got := driverspec.Site(&tc.d).PXENetwork; got != tc.want {
			t.Errorf("%s: PXE network %q, want %q", tc.name, got, tc.want)
		}
	}
}
