package introspection

import (
	"bytes"
	"net/http"
	"net/netip"
	"slices"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
)

// Self is a node's resolved design, as GET /v1/self answers it.
type Self struct {
	Name       string            `json:"name"`
	Hostname   string            `json:"hostname"`
	Domain     string            `json:"domain,omitempty"`
	FQDN       string            `json:"fqdn"`
	Deployment string            `json:"deployment"`
	Rack       string            `json:"rack,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Tags       []string          `json:"tags,omitempty"`
	// PrimaryNetwork carries the default route and the DNS settings.
	PrimaryNetwork string      `json:"primaryNetwork,omitempty"`
	DNS            DNS         `json:"dns"`
	NTPServers     []string    `json:"ntpServers,omitempty"`
	SSHKeys        []string    `json:"sshKeys,omitempty"` // the site's, authorized on the node
	Interfaces     []Interface `json:"interfaces"`
	Storage        Storage     `json:"storage"`
	Platform       Platform    `json:"platform"`
	BootActions    []ActionRef `json:"bootActions"`
}

// DNS is the resolver configuration of a node: its primary network's DNS
// servers (the site's when the network names none) and the search domains
// (the network's DNS domain first, then the site's).
type DNS struct {
	Servers []string `json:"servers,omitempty"`
	Search  []string `json:"search,omitempty"`
}

// Interface is a node interface with its devices resolved through the
// hardware profile's aliases.
type Interface struct {
	Name     string           `json:"name"`
	Link     Link             `json:"link"`
	Devices  []drivers.Device `json:"devices"`
	Networks []Network        `json:"networks,omitempty"`
}

// Network is a network on an interface and the node's address there.
type Network struct {
	Name   string `json:"name"`
	CIDR   string `json:"cidr"`
	Prefix int    `json:"prefix"` // the CIDR's prefix length
	VLAN   int    `json:"vlan,omitempty"`
	// Tagged: carried with its VLAN tag on the interface (an 802.1q trunk
	// and not the trunk's native network); else untagged.
	Tagged  bool            `json:"tagged"`
	MTU     int             `json:"mtu"`
	Address string          `json:"address,omitempty"` // IP, "dhcp", or "" (carried, not addressed)
	Gateway string          `json:"gateway,omitempty"`
	DNS     NetworkDNS      `json:"dns,omitzero"`
	Routes  []drivers.Route `json:"routes,omitempty"`
}

// NetworkDNS is a network's own DNS settings.
type NetworkDNS struct {
	Domain  string   `json:"domain,omitempty"`
	Servers []string `json:"servers,omitempty"`
}

// ActionRef is a boot action that targets the node.
type ActionRef struct {
	Name      string `json:"name"`
	Signaling bool   `json:"signaling"`
}

// getSelf answers the session's cached bytes, headers and all: nothing is
// encoded, allocated or looked up again for a token seen before.
func (s *Server) getSelf(c echo.Context) error {
	a := s.answer(sessionOf(c))
	w := c.Response()
	h := w.Header()
	h[echo.HeaderContentType] = jsonType
	h[echo.HeaderContentLength] = a.length
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(a.body)
	return err
}

// jsonType is the Content-Type of /v1/self, shared by every answer (a
// header value slice is only ever replaced, never written to).
var jsonType = []string{echo.MIMEApplicationJSON}

// selfAnswer is a rendered /v1/self answer and its Content-Length.
type selfAnswer struct {
	body      []byte
	length    []string // lengthArr[:]
	lengthArr [1]string
}

// answer is the session's /v1/self answer: the one stored at issue time
// (set when the session was read), else rendered on first use. It
// depends only on the design revision, the node and the deployment, all
// fixed for a session (a new revision or deployment is a new record, so
// a new session).
func (s *Server) answer(ss *session) *selfAnswer {
	if a := ss.self.Load(); a != nil {
		return a
	}
	p := ss.parts
	if p == nil {
		p = s.designs.selfParts(ss.d)
	}
	scratch := scratchBufs.Get().(*[]byte)
	b := appendSelf((*scratch)[:0], p, ss.n, ss.rec.Deployment)
	b = append(b, '\n')
	a := newSelfAnswer(bytes.Clone(b))
	*scratch = b
	scratchBufs.Put(scratch)
	ss.self.Store(a)
	return a
}

// scratchBufs are the buffers answers are rendered in; each answer keeps
// a copy of its exact size.
var scratchBufs = sync.Pool{New: func() any { b := make([]byte, 0, 8192); return &b }}

// selfJSON is the session's /v1/self answer.
func (s *Server) selfJSON(ss *session) ([]byte, error) { return s.answer(ss).body, nil }

// selfOf builds the node's view from the drivers' resolution of it.
func selfOf(d *design.Design, n *design.Node, deployment string) Self {
	return selfFrom(d, n, driverspec.Node(d, n, ""), deployment)
}

// selfFrom is selfOf over the node as the server driver is told it (dn:
// with RoCE addresses, for network-config).
func selfFrom(d *design.Design, n *design.Node, dn drivers.Node, deployment string) Self {
	out := Self{Name: n.Metadata.Name, Hostname: dn.Hostname, Domain: dn.Domain, FQDN: dn.Hostname,
		Deployment: deployment, Rack: dn.Rack, Labels: n.Metadata.Labels, Tags: dn.Tags,
		PrimaryNetwork: dn.Primary, Storage: storageOf(dn.Storage), Platform: Platform(dn.Platform), Interfaces: []Interface{}}
	if dn.Domain != "" {
		out.FQDN = dn.Hostname + "." + dn.Domain
	}
	if d.Site != nil {
		out.NTPServers = d.Site.Spec.NTP.Servers
		out.SSHKeys = d.Site.Spec.SSHKeys
		out.DNS = DNS{Servers: d.Site.Spec.DNS.Servers, Search: d.Site.Spec.DNS.Search}
	}
	if p := d.Networks[dn.Primary]; p != nil {
		if len(p.Spec.DNS.Servers) > 0 {
			out.DNS.Servers = p.Spec.DNS.Servers
		}
		if dom := p.Spec.DNS.Domain; dom != "" && !slices.Contains(out.DNS.Search, dom) {
			out.DNS.Search = append([]string{dom}, out.DNS.Search...)
		}
	}
	for _, in := range dn.Interfaces {
		oi := Interface{Name: in.Name, Link: Link(in.Link), Devices: in.Devices}
		for _, nw := range in.Networks {
			net := Network{Name: nw.Name, CIDR: nw.CIDR, VLAN: nw.VLAN, MTU: nw.MTU, Address: nw.Address,
				Gateway: nw.Gateway, Routes: nw.Routes, Tagged: !nw.PointToPoint && tagged(in.Link, nw.Name, nw.VLAN)}
			if p, err := netip.ParsePrefix(nw.CIDR); err == nil {
				net.Prefix = p.Bits()
			}
			if dn := d.Networks[nw.Name]; dn != nil {
				net.DNS = NetworkDNS{Domain: dn.Spec.DNS.Domain, Servers: dn.Spec.DNS.Servers}
			}
			oi.Networks = append(oi.Networks, net)
		}
		out.Interfaces = append(out.Interfaces, oi)
	}
	for _, name := range d.BootActionsFor(n) {
		out.BootActions = append(out.BootActions, ActionRef{Name: name, Signaling: d.BootActions[name].Spec.Signaling})
	}
	if out.BootActions == nil {
		out.BootActions = []ActionRef{}
	}
	return out
}

// tagged reports whether a network rides tagged on a link: only on an
// 802.1q trunk, and never the trunk's native network.
func tagged(l drivers.Link, network string, vlan int) bool {
	return l.Trunking == "802.1q" && network != l.NativeNetwork && vlan > 0
}
