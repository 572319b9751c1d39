package introspection

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"gopkg.in/yaml.v3"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
)

// The NoCloud-net seed: cloud-init can't send headers, so these routes
// take the token in their path; point cloud-init at
// ds=nocloud-net;s=<URL>/v1/nocloud/<token>/ (the trailing slash matters).

const yamlType = "text/yaml; charset=utf-8"

// The parts of the seed, as BootData names them.
const (
	PartSelf          = "self"
	PartMetaData      = "meta-data"
	PartUserData      = "user-data"
	PartVendorData    = "vendor-data"
	PartNetworkConfig = "network-config"
)

// Parts lists the parts BootData renders.
var Parts = []string{PartSelf, PartMetaData, PartUserData, PartVendorData, PartNetworkConfig}

func (s *Server) metaData(c echo.Context) error { return s.servePart(c, PartMetaData) }

func (s *Server) seedUserData(c echo.Context) error { return s.servePart(c, PartUserData) }

func (s *Server) vendorData(c echo.Context) error { return s.servePart(c, PartVendorData) }

func (s *Server) networkConfig(c echo.Context) error { return s.servePart(c, PartNetworkConfig) }

func (s *Server) servePart(c echo.Context, part string) error {
	ss := sessionOf(c)
	b, err := s.renderPart(c.Request().Context(), ss, part, s.tokenOf(ss.rec))
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, yamlType, b)
}

// metaData is the NoCloud meta-data: the instance (one per deployment),
// the host name and the site's SSH keys.
type metaData struct {
	InstanceID    string   `yaml:"instance-id"`
	LocalHostname string   `yaml:"local-hostname"`
	PublicKeys    []string `yaml:"public-keys,omitempty"`
}

// renderPart renders one part of what the node is served for the
// session's deployment; tok goes into the user data.
func (s *Server) renderPart(ctx context.Context, ss *session, part, tok string) ([]byte, error) {
	switch part {
	case PartSelf:
		return s.selfJSON(ss)
	case PartMetaData:
		self := selfOf(ss.d, ss.n, ss.rec.Deployment)
		return marshalYAML(metaData{InstanceID: ss.rec.Node + "-" + ss.rec.Deployment, LocalHostname: self.Hostname,
			PublicKeys: self.SSHKeys})
	case PartUserData:
		return s.userData(ss.d, selfOf(ss.d, ss.n, ss.rec.Deployment), tok)
	case PartVendorData:
		return []byte(cloudConfigH + "{}\n"), nil
	case PartNetworkConfig:
		inv, ok, err := orchestrator.NodeInventory(ctx, s.store, ss.rec.Node)
		if err != nil {
			return nil, internal(http.StatusServiceUnavailable, "the node's inventory could not be read; try again", err)
		}
		if !ok {
			return nil, problem(http.StatusNotFound, "no network-config: the node's NICs were never inventoried (commission or deploy it with this orchestrator); MAAS configures its network")
		}
		self, err := s.networkSelf(ctx, ss)
		if err != nil {
			return nil, err
		}
		np, err := netplan(self, inv)
		if err != nil {
			return nil, problem(http.StatusConflict, "no network-config: "+err.Error())
		}
		return marshalYAML(np)
	}
	return nil, problem(http.StatusNotFound, fmt.Sprintf("no part %q: use one of %s", echoName(part), strings.Join(Parts, ", ")))
}

// networkSelf is the node for its network-config: as the server driver
// is told it, with its RoCE addresses when its site profile enables RoCE.
func (s *Server) networkSelf(ctx context.Context, ss *session) (Self, error) {
	dn := driverspec.Node(ss.d, ss.n, "")
	if s.cfg.RoCE != nil {
		addrs, err := s.cfg.RoCE(ctx, ss.d, ss.n)
		if err != nil {
			return Self{}, internal(http.StatusServiceUnavailable, "the node's RoCE assignments could not be read; try again", err)
		}
		if err := driverspec.AddRoCE(&dn, ss.n.Spec.Hardware, addrs); err != nil {
			return Self{}, problem(http.StatusConflict, "no network-config: "+err.Error())
		}
	}
	return selfFrom(ss.d, ss.n, dn, ss.rec.Deployment), nil
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
	MACAddress string `yaml:"macaddress"`
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

// netplan renders a node's networking as netplan v2, mirroring what the
// server driver configured in the provisioner (the naming contract of
// drivers.Interface), so that an image that reads it agrees with what
// MAAS renders:
//   - every NIC is matched by the MAC the inventory recorded and named
//     with set-name: a NIC carrying an interface on its own gets the
//     interface's name, a bond member keeps its kernel name;
//   - an interface on a bonded link is a bond (named like the interface)
//     of its NICs;
//   - untagged networks (the native network of an 802.1q trunk, or the
//     one network of a link without trunking) are addressed on the
//     carrier; tagged ones on a VLAN <carrier>.<vlan id>;
//   - a static address gets its CIDR's prefix, "dhcp" turns on DHCP; the
//     network's routes follow it; the primary network also carries the
//     default route through its gateway (static addresses only: DHCP
//     brings its own) and the node's DNS settings;
//   - MTUs: the link's on NICs and bonds, the network's on VLANs.
func netplan(self Self, inv drivers.Inventory) (npConfig, error) {
	nw := npNetwork{Version: 2, Ethernets: map[string]*npEthernet{}, Bonds: map[string]*npBond{},
		VLANs: map[string]*npVLAN{}}
	for _, in := range self.Interfaces {
		if len(in.Devices) == 0 {
			continue
		}
		carrier := in.Name
		var members []string
		for _, dev := range in.Devices {
			nic, ok := inv.NIC(dev.Alias)
			if !ok {
				return npConfig{}, fmt.Errorf("machine %s has no NIC recorded for device %s of interface %s", inv.MachineID, dev.Alias, in.Name)
			}
			name := carrier
			if in.Link.Bonded() {
				name = nic.Name
				members = append(members, name)
			}
			e := &npEthernet{Match: &npMatch{MACAddress: nic.MAC}, SetName: name}
			e.MTU = in.Link.MTU
			nw.Ethernets[name] = e
		}
		var parent *npCommon
		if in.Link.Bonded() {
			slices.Sort(members)
			b := &npBond{Interfaces: members, Parameters: bondParams(drivers.Link(in.Link))}
			b.MTU = in.Link.MTU
			nw.Bonds[carrier] = b
			parent = &b.npCommon
		} else {
			parent = &nw.Ethernets[carrier].npCommon
		}
		for _, n := range in.Networks {
			target := parent
			if n.Tagged {
				v := &npVLAN{ID: n.VLAN, Link: carrier}
				v.MTU = n.MTU
				nw.VLANs[drivers.VLANName(carrier, n.VLAN)] = v
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
	return npConfig{Network: nw}, nil
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

func bondParams(l drivers.Link) *npBondParams {
	p := &npBondParams{Mode: l.BondMode, MIIMonitorInterval: l.MIIMon, TransmitHashPolicy: l.BondHash,
		UpDelay: l.UpDelay, DownDelay: l.DownDelay}
	if l.BondMode == "802.3ad" {
		p.LACPRate = l.LACPRate
	}
	return p
}

// address puts a network's address, routes and (on the primary network)
// default route and DNS on a device.
func address(c *npCommon, n Network, primary bool, dns DNS) {
	ownAddress(c, n)
	if primary && n.Gateway != "" && n.Address != "" && n.Address != "dhcp" {
		c.Routes = append(c.Routes, npRoute{To: defaultRoute(n.Gateway), Via: n.Gateway})
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

// ownAddress puts the device's address on the network: DHCP (v4 or v6
// by the network's family) or its static address with the prefix length.
func ownAddress(c *npCommon, n Network) {
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
}

// defaultRoute is the destination of a default route through gw, written
// out (cloud-init's older netplan converters refuse "default").
func defaultRoute(gw string) string {
	if a, err := netip.ParseAddr(gw); err == nil && a.Is6() {
		return "::/0"
	}
	return "0.0.0.0/0"
}
