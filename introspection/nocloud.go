package introspection

import (
	"bytes"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/labstack/echo/v4"
	"gopkg.in/yaml.v3"

	"github.com/slipway-dev/slipway/drivers"
)

// The NoCloud-net seed: cloud-init can't send headers, so these routes
// take the token in their path; point cloud-init at
// ds=nocloud-net;s=<URL>/v1/nocloud/<token>/ (the trailing slash matters).

const yamlType = "text/yaml; charset=utf-8"

func (s *Server) metaData(c echo.Context) error {
	ss := sessionOf(c)
	b, err := marshalYAML(struct {
		InstanceID    string `yaml:"instance-id"`
		LocalHostname string `yaml:"local-hostname"`
	}{ss.rec.Node + "-" + ss.rec.Deployment, ss.n.Metadata.Name})
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, yamlType, b)
}

func (s *Server) seedUserData(c echo.Context) error {
	ss := sessionOf(c)
	return c.Blob(http.StatusOK, yamlType, s.userData(s.Token(ss.rec.Node, ss.rec.Deployment)))
}

func (s *Server) vendorData(c echo.Context) error {
	return c.Blob(http.StatusOK, yamlType, []byte(cloudConfigH+"{}\n"))
}

func (s *Server) networkConfig(c echo.Context) error {
	ss := sessionOf(c)
	var names map[string]string
	if s.cfg.DeviceNames != nil {
		var err error
		if names, err = s.cfg.DeviceNames(c.Request().Context(), ss.rec.Node); err != nil {
			return internal(http.StatusServiceUnavailable, "the node's device names could not be looked up; try again", err)
		}
	}
	b, err := marshalYAML(netplan(selfOf(ss.d, ss.n, ss.rec.Deployment), names))
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, yamlType, b)
}

// npConfig is a netplan (network config version 2) document.
type npConfig struct {
	Network npNetwork `yaml:"network"`
}

// npNetwork is netplan's network section.
type npNetwork struct {
	Version   int                    `yaml:"version"`
	Ethernets map[string]*npEthernet `yaml:"ethernets,omitempty"`
	Bonds     map[string]*npBond     `yaml:"bonds,omitempty"`
	VLANs     map[string]*npVLAN     `yaml:"vlans,omitempty"`
}

// npCommon are the settings every netplan device takes.
type npCommon struct {
	MTU         int            `yaml:"mtu,omitempty"`
	DHCP4       bool           `yaml:"dhcp4,omitempty"`
	DHCP6       bool           `yaml:"dhcp6,omitempty"`
	Addresses   []string       `yaml:"addresses,omitempty"`
	Routes      []npRoute      `yaml:"routes,omitempty"`
	Nameservers *npNameservers `yaml:"nameservers,omitempty"`
}

// npEthernet is a physical NIC.
type npEthernet struct {
	Match    *npMatch `yaml:"match,omitempty"`
	SetName  string   `yaml:"set-name,omitempty"`
	npCommon `yaml:",inline"`
}

// npMatch selects a NIC.
type npMatch struct {
	Name string `yaml:"name,omitempty"`
}

// npBond is a bond of NICs.
type npBond struct {
	Interfaces []string      `yaml:"interfaces"`
	Parameters *npBondParams `yaml:"parameters,omitempty"`
	npCommon   `yaml:",inline"`
}

// npBondParams are a bond's parameters.
type npBondParams struct {
	Mode               string `yaml:"mode"`
	LACPRate           string `yaml:"lacp-rate,omitempty"`
	MIIMonitorInterval int    `yaml:"mii-monitor-interval,omitempty"`
	TransmitHashPolicy string `yaml:"transmit-hash-policy,omitempty"`
	UpDelay            int    `yaml:"up-delay,omitempty"`
	DownDelay          int    `yaml:"down-delay,omitempty"`
}

// npVLAN is a tagged network on a NIC or bond.
type npVLAN struct {
	ID       int    `yaml:"id"`
	Link     string `yaml:"link"`
	npCommon `yaml:",inline"`
}

// npRoute is a static route.
type npRoute struct {
	To     string `yaml:"to"`
	Via    string `yaml:"via"`
	Metric int    `yaml:"metric,omitempty"`
}

// npNameservers are DNS settings.
type npNameservers struct {
	Addresses []string `yaml:"addresses,omitempty"`
	Search    []string `yaml:"search,omitempty"`
}

// netplan renders a node's networking as netplan v2:
//   - every device of an interface is an ethernet named by its alias,
//     matched by its kernel name when names knows it (set-name renames it
//     to the alias), else by the alias;
//   - an interface on a bonded link is a bond (named like the interface)
//     of its devices; otherwise its first device carries its networks;
//   - untagged networks (the native network of an 802.1q trunk, or the
//     one network of a link without trunking) are addressed on that
//     device; tagged ones on a VLAN <device>.<vlan id>;
//   - a static address gets its CIDR's prefix, "dhcp" turns on DHCP; the
//     network's routes follow it; the primary network also carries the
//     default route through its gateway (static addresses only: DHCP
//     brings its own) and the node's DNS settings;
//   - MTUs: the link's on NICs and bonds, the network's on VLANs.
func netplan(self Self, names map[string]string) npConfig {
	nw := npNetwork{Version: 2, Ethernets: map[string]*npEthernet{}, Bonds: map[string]*npBond{},
		VLANs: map[string]*npVLAN{}}
	for _, in := range self.Interfaces {
		if len(in.Devices) == 0 {
			continue
		}
		for _, dev := range in.Devices {
			e := &npEthernet{Match: &npMatch{Name: dev.Alias}}
			if k := names[dev.Alias]; k != "" && k != dev.Alias {
				e.Match.Name, e.SetName = k, dev.Alias
			}
			e.MTU = in.Link.MTU
			nw.Ethernets[dev.Alias] = e
		}
		var parent *npCommon
		parentName := in.Devices[0].Alias
		if bonded(in.Link) {
			parentName = in.Name
			b := &npBond{Parameters: bondParams(in.Link)}
			for _, dev := range in.Devices {
				b.Interfaces = append(b.Interfaces, dev.Alias)
			}
			b.MTU = in.Link.MTU
			nw.Bonds[parentName] = b
			parent = &b.npCommon
		} else {
			parent = &nw.Ethernets[parentName].npCommon
		}
		for _, n := range in.Networks {
			target := parent
			if n.Tagged {
				v := &npVLAN{ID: n.VLAN, Link: parentName}
				v.MTU = n.MTU
				nw.VLANs[vlanName(nw.VLANs, parentName, n.VLAN)] = v
				target = &v.npCommon
			}
			address(target, n, n.Name == self.PrimaryNetwork, self.DNS)
		}
	}
	if len(nw.Bonds) == 0 {
		nw.Bonds = nil
	}
	if len(nw.VLANs) == 0 {
		nw.VLANs = nil
	}
	return npConfig{Network: nw}
}

// marshalYAML encodes v with the 2-space indentation of cloud-init's and
// netplan's documentation.
func marshalYAML(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func bonded(l drivers.Link) bool { return l.BondMode != "" && l.BondMode != "disabled" }

func bondParams(l drivers.Link) *npBondParams {
	p := &npBondParams{Mode: l.BondMode, MIIMonitorInterval: l.MIIMon, TransmitHashPolicy: l.BondHash,
		UpDelay: l.UpDelay, DownDelay: l.DownDelay}
	if l.BondMode == "802.3ad" {
		p.LACPRate = l.LACPRate
	}
	return p
}

// vlanName names a VLAN device <parent>.<id>, or vlan<id> when that is
// longer than a kernel interface name (15 bytes).
func vlanName(taken map[string]*npVLAN, parent string, id int) string {
	name := parent + "." + strconv.Itoa(id)
	if len(name) <= 15 {
		return name
	}
	name = "vlan" + strconv.Itoa(id)
	for i := 1; taken[name] != nil; i++ {
		name = fmt.Sprintf("vlan%d-%d", id, i)
	}
	return name
}

// address puts a network's address, routes and (on the primary network)
// default route and DNS on a device.
func address(c *npCommon, n Network, primary bool, dns DNS) {
	p, perr := netip.ParsePrefix(n.CIDR)
	switch {
	case n.Address == "dhcp":
		if perr == nil && p.Addr().Is6() {
			c.DHCP6 = true
		} else {
			c.DHCP4 = true
		}
	case n.Address != "":
		if a, err := netip.ParseAddr(n.Address); err == nil && perr == nil {
			c.Addresses = append(c.Addresses, netip.PrefixFrom(a, p.Bits()).String())
		}
	}
	if primary && n.Gateway != "" && n.Address != "" && n.Address != "dhcp" {
		c.Routes = append(c.Routes, npRoute{To: "default", Via: n.Gateway})
	}
	if n.Address != "" {
		for _, r := range n.Routes {
			c.Routes = append(c.Routes, npRoute{To: r.To, Via: r.Via, Metric: r.Metric})
		}
	}
	if primary && (len(dns.Servers) > 0 || len(dns.Search) > 0) {
		c.Nameservers = &npNameservers{Addresses: dns.Servers, Search: dns.Search}
	}
}
