package introspection_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/juju/gomaasapi/v2"
	"gopkg.in/yaml.v3"

	"github.com/slipway-dev/slipway/introspection"
	"github.com/slipway-dev/slipway/labrun"
)

// ifMeaning is what an interface means on the node once booted: how the
// NIC is found, what the interface is built of, its MTU, addresses and
// routes. Both MAAS's view and the served netplan reduce to it.
type ifMeaning struct {
	Kind      string // ethernet | bond | vlan
	MAC       string
	Members   []string
	VLAN      int
	Link      string
	MTU       int
	Addresses []string
	DHCP4     bool
	Routes    []string // "to via metric"
}

// The served network-config of every node of the example site means what
// MAAS was told by the MAAS driver, read back from MAAS's API with
// gomaasapi's own client (not the driver): the same interface names, NICs
// by MAC, bonds, VLANs, MTUs (MAAS's effective MTU), addresses and routes
// (static routes of the linked subnets, and the default route on the
// default-gateway link), as MAAS renders them for curtin. Nameservers are
// not compared: MAAS adds its rack controllers (docs/bootstrap.md).
func TestNetworkConfigMatchesMAAS(t *testing.T) {
	env, nodes := deployExample(t)
	mc := maasClient(t, env)
	machines := maasMachines(t, mc)
	routes := maasRoutes(t, mc)
	for _, node := range nodes {
		t.Run(node, func(t *testing.T) {
			m, ok := machines[node]
			if !ok {
				t.Fatalf("MAAS has no machine whose owner data names node %s", node)
			}
			want := m.meaning(routes)
			got := servedMeaning(t, part(t, env, node, introspection.PartNetworkConfig))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("network-config differs from what MAAS was told (-maas +served):\n%s", diff)
			}
		})
	}
}

func maasClient(t *testing.T, env *labrun.Env) *gomaasapi.Client {
	t.Helper()
	info := env.Lab.Info()
	c, err := gomaasapi.NewAuthenticatedClient(gomaasapi.AddAPIVersionToURL(info.MAASURL, "2.0"), info.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func maasGet(t *testing.T, c *gomaasapi.Client, path string, v any) {
	t.Helper()
	b, err := c.Get(&url.URL{Path: path}, "", nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

type mSubnet struct {
	ID        int    `json:"id"`
	CIDR      string `json:"cidr"`
	GatewayIP string `json:"gateway_ip"`
}

type mLink struct {
	ID     int      `json:"id"`
	Mode   string   `json:"mode"`
	IP     string   `json:"ip_address"`
	Subnet *mSubnet `json:"subnet"`
}

type mIface struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Enabled  bool     `json:"enabled"`
	MAC      string   `json:"mac_address"`
	Parents  []string `json:"parents"`
	Children []string `json:"children"`
	MTU      int      `json:"effective_mtu"`
	VLAN     struct {
		VID int `json:"vid"`
	} `json:"vlan"`
	Links []mLink `json:"links"`
}

type mMachine struct {
	OwnerData  map[string]string `json:"owner_data"`
	Interfaces []mIface          `json:"interface_set"`
	Gateways   struct {
		IPv4 struct {
			LinkID    *int   `json:"link_id"`
			GatewayIP string `json:"gateway_ip"`
		} `json:"ipv4"`
	} `json:"default_gateways"`
}

type mRoute struct {
	Source      mSubnet `json:"source"`
	Destination mSubnet `json:"destination"`
	GatewayIP   string  `json:"gateway_ip"`
	Metric      int     `json:"metric"`
}

// maasMachines are MAAS's machines by the node their owner data names.
func maasMachines(t *testing.T, c *gomaasapi.Client) map[string]mMachine {
	t.Helper()
	var ms []mMachine
	maasGet(t, c, "machines/", &ms)
	out := map[string]mMachine{}
	for _, m := range ms {
		if n := m.OwnerData["slipway_node"]; n != "" {
			out[n] = m
		}
	}
	return out
}

func maasRoutes(t *testing.T, c *gomaasapi.Client) []mRoute {
	t.Helper()
	var rs []mRoute
	maasGet(t, c, "static-routes/", &rs)
	return rs
}

// meaning reduces the machine's interfaces the way MAAS renders them for
// curtin (preseed_network): enabled interfaces that carry a link or are
// built upon; NICs by MAC; the effective MTU; static addresses with their
// subnet's prefix; DHCP; the static routes whose source subnet an
// interface addresses; the default route on the default-gateway link.
func (m mMachine) meaning(routes []mRoute) map[string]ifMeaning {
	out := map[string]ifMeaning{}
	for _, i := range m.Interfaces {
		linked := slices.ContainsFunc(i.Links, func(l mLink) bool { return l.Subnet != nil || l.IP != "" })
		if !i.Enabled || (!linked && len(i.Children) == 0) {
			continue
		}
		im := ifMeaning{MTU: i.MTU}
		switch i.Type {
		case "physical":
			im.Kind, im.MAC = "ethernet", strings.ToLower(i.MAC)
		case "bond":
			im.Kind, im.Members = "bond", slices.Sorted(slices.Values(i.Parents))
		case "vlan":
			im.Kind, im.VLAN, im.Link = "vlan", i.VLAN.VID, i.Parents[0]
		}
		for _, l := range i.Links {
			if l.Subnet == nil {
				continue
			}
			switch {
			case strings.EqualFold(l.Mode, "dhcp"):
				im.DHCP4 = true
			case l.IP != "":
				p := netip.MustParsePrefix(l.Subnet.CIDR)
				im.Addresses = append(im.Addresses, netip.PrefixFrom(netip.MustParseAddr(l.IP), p.Bits()).String())
				for _, r := range routes {
					if r.Source.ID == l.Subnet.ID {
						im.Routes = append(im.Routes, fmt.Sprintf("%s via %s metric %d", r.Destination.CIDR, r.GatewayIP, r.Metric))
					}
				}
			}
			if gw := m.Gateways.IPv4.LinkID; gw != nil && *gw == l.ID {
				im.Routes = append(im.Routes, fmt.Sprintf("0.0.0.0/0 via %s metric 0", l.Subnet.GatewayIP))
			}
		}
		slices.Sort(im.Routes)
		out[i.Name] = im
	}
	return out
}

// servedMeaning reduces a served netplan document.
func servedMeaning(t *testing.T, raw []byte) map[string]ifMeaning {
	t.Helper()
	type common struct {
		MTU       int      `yaml:"mtu"`
		DHCP4     bool     `yaml:"dhcp4"`
		Addresses []string `yaml:"addresses"`
		Routes    []struct {
			To, Via string
			Metric  int
		} `yaml:"routes"`
	}
	var doc struct {
		Network struct {
			Ethernets map[string]struct {
				Match struct {
					MACAddress string `yaml:"macaddress"`
				}
				SetName string `yaml:"set-name"`
				common  `yaml:",inline"`
			}
			Bonds map[string]struct {
				Interfaces []string
				common     `yaml:",inline"`
			}
			VLANs map[string]struct {
				ID     int
				Link   string
				common `yaml:",inline"`
			} `yaml:"vlans"`
		}
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("network-config: %v\n%s", err, raw)
	}
	out := map[string]ifMeaning{}
	add := func(name string, im ifMeaning, c common) {
		im.MTU, im.DHCP4, im.Addresses = c.MTU, c.DHCP4, c.Addresses
		if im.MTU == 0 {
			im.MTU = 1500 // the kernel's, and MAAS's default
		}
		for _, r := range c.Routes {
			im.Routes = append(im.Routes, fmt.Sprintf("%s via %s metric %d", r.To, r.Via, r.Metric))
		}
		slices.Sort(im.Routes)
		out[name] = im
	}
	for name, e := range doc.Network.Ethernets {
		if e.SetName != name {
			t.Errorf("ethernet %s: set-name %q: the NIC would not get the name the configuration uses", name, e.SetName)
		}
		add(name, ifMeaning{Kind: "ethernet", MAC: e.Match.MACAddress}, e.common)
	}
	for name, b := range doc.Network.Bonds {
		add(name, ifMeaning{Kind: "bond", Members: slices.Sorted(slices.Values(b.Interfaces))}, b.common)
	}
	for name, v := range doc.Network.VLANs {
		add(name, ifMeaning{Kind: "vlan", VLAN: v.ID, Link: v.Link}, v.common)
	}
	return out
}
