package maas

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

// A machine as MAAS shows it after commissioning: two NICs on the
// untagged VLAN of fabric 1, and the subnets of the example site.
func planFixture() ([]mInterface, []mSubnet, map[string]resolved) {
	gw := "10.0.0.1"
	untagged := &mVLAN{ID: 5001, VID: 0, FabricID: 1, Fabric: "fabric-1"}
	storage := &mVLAN{ID: 5002, VID: 20, FabricID: 1, Fabric: "fabric-1"}
	other := &mVLAN{ID: 5003, VID: 30, FabricID: 2, Fabric: "fabric-2"}
	ifaces := []mInterface{
		{ID: 1, Name: "eth0", Type: "physical", MAC: "52:54:00:00:00:01", VLAN: untagged, MTU: 1500},
		{ID: 2, Name: "eth1", Type: "physical", MAC: "52:54:00:00:00:02", VLAN: untagged, MTU: 1500},
	}
	subnets := []mSubnet{
		{ID: 11, CIDR: "10.0.0.0/24", GatewayIP: &gw, VLAN: untagged},
		{ID: 12, CIDR: "10.0.20.0/24", VLAN: storage},
		{ID: 13, CIDR: "10.0.30.0/24", VLAN: other},
		{ID: 14, CIDR: "10.0.40.0/24"}, // no VLAN: not prepared
	}
	names := map[string]resolved{
		"nic0": {Name: "eth0", MAC: "52:54:00:00:00:01"},
		"nic1": {Name: "eth1", ID: 2},
	}
	return ifaces, subnets, names
}

func network(name, cidr string, vlan int, addr string) drivers.InterfaceNetwork {
	return drivers.InterfaceNetwork{Subnet: drivers.Subnet{Name: name, CIDR: cidr, VLAN: vlan}, Address: addr}
}

// TestPlanInterfaces: the design's interfaces are tied to the machine's
// NICs (by MAC, by ID) and their networks split into the untagged one and
// the tagged ones with their subnets; a design the machine cannot carry
// fails before anything is changed.
func TestPlanInterfaces(t *testing.T) {
	ifaces, subnets, names := planFixture()
	nic0, nic1 := drivers.Device{Alias: "nic0"}, drivers.Device{Alias: "nic1"}
	prov := network("prov", "10.0.0.0/24", 0, "10.0.0.10")
	stor := network("storage", "10.0.20.0/24", 20, "dhcp")
	trunk := drivers.Link{Name: "l0", BondMode: "802.3ad", Trunking: "802.1q", NativeNetwork: "prov"}
	for _, tc := range []struct {
		name    string
		in      []drivers.Interface
		parents [][]int
		native  []string // CIDR of the native subnet per interface ("" none)
		tagged  [][]int  // subnet IDs of the tagged networks per interface
		err     string
	}{
		{name: "plain", in: []drivers.Interface{{Name: "prov0", Devices: []drivers.Device{nic0}, Networks: []drivers.InterfaceNetwork{prov}}},
			parents: [][]int{{1}}, native: []string{"10.0.0.0/24"}, tagged: [][]int{nil}},
		{name: "bonded trunk", in: []drivers.Interface{{Name: "bond0", Link: trunk, Devices: []drivers.Device{nic0, nic1}, Networks: []drivers.InterfaceNetwork{stor, prov}}},
			parents: [][]int{{1, 2}}, native: []string{"10.0.0.0/24"}, tagged: [][]int{{12}}},
		{name: "carried only", in: []drivers.Interface{{Name: "eth1", Devices: []drivers.Device{nic1}}},
			parents: [][]int{{2}}, native: []string{""}, tagged: [][]int{nil}},
		{name: "unknown device", in: []drivers.Interface{{Name: "x", Devices: []drivers.Device{{Alias: "nic9"}}}}, err: "has no interface"},
		{name: "no device", in: []drivers.Interface{{Name: "x"}}, err: "names no device"},
		{name: "two devices unbonded", in: []drivers.Interface{{Name: "x", Devices: []drivers.Device{nic0, nic1}}}, err: "does not bond them"},
		{name: "two networks untrunked", in: []drivers.Interface{{Name: "x", Devices: []drivers.Device{nic0}, Networks: []drivers.InterfaceNetwork{prov, stor}}}, err: "without 802.1q"},
		{name: "no subnet", in: []drivers.Interface{{Name: "x", Devices: []drivers.Device{nic0}, Networks: []drivers.InterfaceNetwork{network("n", "10.9.0.0/24", 0, "")}}}, err: "prepare the site first"},
		{name: "subnet without VLAN", in: []drivers.Interface{{Name: "x", Devices: []drivers.Device{nic0}, Networks: []drivers.InterfaceNetwork{network("n", "10.0.40.0/24", 0, "")}}}, err: "prepare the site first"},
		{name: "wrong VID", in: []drivers.Interface{{Name: "x", Link: trunk, Devices: []drivers.Device{nic0}, Networks: []drivers.InterfaceNetwork{prov, network("s", "10.0.20.0/24", 21, "")}}}, err: "on VID 20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := planInterfaces("m1", drivers.Node{NodeRef: drivers.NodeRef{Name: "n1"}, Interfaces: tc.in}, names, ifaces, subnets)
			if tc.err != "" {
				var de *drivers.Error
				if err == nil || !errors.As(err, &de) || de.Class != drivers.Permanent || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want a Permanent error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(plan) != len(tc.in) {
				t.Fatalf("%d interface plans, want %d", len(plan), len(tc.in))
			}
			for k, ip := range plan {
				if !reflect.DeepEqual(ip.parents, tc.parents[k]) {
					t.Errorf("parents of %s = %v, want %v", ip.in.Name, ip.parents, tc.parents[k])
				}
				native := ""
				if ip.native != nil {
					native = ip.native.subnet.CIDR
				}
				if native != tc.native[k] {
					t.Errorf("native of %s = %q, want %q", ip.in.Name, native, tc.native[k])
				}
				var tagged []int
				for _, w := range ip.tagged {
					tagged = append(tagged, w.subnet.ID)
				}
				if !reflect.DeepEqual(tagged, tc.tagged[k]) {
					t.Errorf("tagged of %s = %v, want %v", ip.in.Name, tagged, tc.tagged[k])
				}
			}
		})
	}
}

// TestIfaceUpdate: the one PUT on an interface carries exactly what
// differs among name, VLAN and MTU.
func TestIfaceUpdate(t *testing.T) {
	ifaces, subnets, _ := planFixture()
	other := netWant{subnet: &subnets[1]}
	same := netWant{subnet: &subnets[0]}
	for _, tc := range []struct {
		name string
		ip   ifacePlan
		want string
	}{
		{"nothing", ifacePlan{in: drivers.Interface{Name: "eth0"}, native: &same}, ""},
		{"rename", ifacePlan{in: drivers.Interface{Name: "prov0"}, native: &same}, "name=prov0"},
		{"vlan", ifacePlan{in: drivers.Interface{Name: "eth0"}, native: &other}, "vlan=5002"},
		{"mtu", ifacePlan{in: drivers.Interface{Name: "eth0", Link: drivers.Link{MTU: 9000}}}, "mtu=9000"},
		{"same mtu", ifacePlan{in: drivers.Interface{Name: "eth0", Link: drivers.Link{MTU: 1500}}}, ""},
		{"all", ifacePlan{in: drivers.Interface{Name: "p", Link: drivers.Link{MTU: 9000}}, native: &other}, "name=p vlan=5002 mtu=9000"},
	} {
		if got := describePut(ifaceUpdate(&ifaces[0], tc.ip)); got != tc.want {
			t.Errorf("%s: update = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestStaleVLANsAndBondBlockers: the VLAN interfaces no tagged network
// asks for go, and a new bond replaces what sits on its parents.
func TestStaleVLANsAndBondBlockers(t *testing.T) {
	ifaces := []mInterface{
		{ID: 1, Name: "eth0", Type: "physical"},
		{ID: 2, Name: "eth1", Type: "physical"},
		{ID: 3, Name: "eth0.20", Type: "vlan", Parents: []string{"eth0"}, VLAN: &mVLAN{ID: 20}},
		{ID: 4, Name: "eth0.30", Type: "vlan", Parents: []string{"eth0"}, VLAN: &mVLAN{ID: 30}},
		{ID: 5, Name: "eth1.30", Type: "vlan", Parents: []string{"eth1"}, VLAN: &mVLAN{ID: 30}},
		{ID: 6, Name: "bond0", Type: "bridge"},
	}
	ids := func(l []mInterface) (out []int) {
		for _, i := range l {
			out = append(out, i.ID)
		}
		return out
	}
	if got := ids(staleVLANs(ifaces, "eth0", map[int]bool{20: true})); !reflect.DeepEqual(got, []int{4}) {
		t.Errorf("stale VLANs = %v, want [4]", got)
	}
	if got := ids(inTheWay(ifaces, "bond0", []string{"eth1"})); !reflect.DeepEqual(got, []int{5, 6}) {
		t.Errorf("in the way of bond0 = %v, want [5 6]", got)
	}
}

// TestPlanLinks: links that match are kept (the primary one noted), stale
// ones are removed (a bare link_up is left to MAAS), and missing ones made.
func TestPlanLinks(t *testing.T) {
	_, subnets, _ := planFixture()
	prov, stor := &subnets[0], &subnets[1]
	ifaces := []mInterface{
		{ID: 1, Name: "prov0", Links: []mLink{
			{ID: 100, Mode: "static", IP: "10.0.0.10", Subnet: prov},
			{ID: 101, Mode: "dhcp", Subnet: stor},
		}},
		{ID: 2, Name: "prov0.20", Links: []mLink{{ID: 102, Mode: "link_up"}}},
	}
	wantProv := linkWant{iface: "prov0", netWant: netWant{net: network("prov", prov.CIDR, 0, "10.0.0.10"), subnet: prov}}
	moved := linkWant{iface: "prov0", netWant: netWant{net: network("prov", prov.CIDR, 0, "10.0.0.11"), subnet: prov}}
	wantStor := linkWant{iface: "prov0.20", netWant: netWant{net: network("storage", stor.CIDR, 20, "dhcp"), subnet: stor}}

	plan, err := planLinks("m1", []linkWant{wantProv, wantStor}, ifaces, "prov")
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.unlink) != 1 || plan.unlink[0].link.ID != 101 || plan.unlink[0].ifaceID != 1 {
		t.Errorf("unlink = %+v, want link 101 of interface 1", plan.unlink)
	}
	if len(plan.link) != 1 || plan.link[0].iface != "prov0.20" {
		t.Errorf("link = %+v, want the storage network on prov0.20", plan.link)
	}
	if plan.primary == nil || plan.primary.id != 100 {
		t.Errorf("primary = %+v, want link 100", plan.primary)
	}

	// A moved address: the old link goes, the new one is made, and the
	// primary link is not known yet.
	plan, err = planLinks("m1", []linkWant{moved}, ifaces[:1], "prov")
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.unlink) != 2 || len(plan.link) != 1 || plan.primary != nil {
		t.Errorf("moved address: plan = %+v", plan)
	}
	if _, err := planLinks("m1", []linkWant{{iface: "gone"}}, ifaces, "prov"); err == nil {
		t.Error("a vanished interface planned without error")
	}
}

// TestLinkParams: the primary network's static link asks for the default
// gateway when its subnet has one; DHCP and carried networks do not.
func TestLinkParams(t *testing.T) {
	_, subnets, _ := planFixture()
	for _, tc := range []struct {
		w       linkWant
		want    string
		primary bool
	}{
		{linkWant{netWant: netWant{net: network("prov", "", 0, "10.0.0.10"), subnet: &subnets[0]}}, "default_gateway=true&ip_address=10.0.0.10&mode=static&subnet=11", true},
		{linkWant{netWant: netWant{net: network("prov", "", 0, "DHCP"), subnet: &subnets[0]}}, "mode=dhcp&subnet=11", true},
		{linkWant{netWant: netWant{net: network("prov", "", 0, ""), subnet: &subnets[0]}}, "mode=link_up&subnet=11", false},
		{linkWant{netWant: netWant{net: network("storage", "", 0, "10.0.20.5"), subnet: &subnets[1]}}, "ip_address=10.0.20.5&mode=static&subnet=12", false},
		{linkWant{netWant: netWant{net: network("prov", "", 0, "10.0.20.5"), subnet: &subnets[1]}}, "ip_address=10.0.20.5&mode=static&subnet=12", true},
	} {
		p, primary := linkParams(tc.w, "prov")
		if p.Encode() != tc.want || primary != tc.primary {
			t.Errorf("%s %q: params %s primary %v, want %s %v", tc.w.net.Name, tc.w.net.Address, p.Encode(), primary, tc.want, tc.primary)
		}
	}
}
