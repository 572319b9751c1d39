package maas

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

type mDomain struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

type mFabric struct {
	ID    int     `json:"id"`
	Name  string  `json:"name"`
	VLANs []mVLAN `json:"vlans"`
}

type mIPRange struct {
	ID      int      `json:"id"`
	Type    string   `json:"type"`
	StartIP string   `json:"start_ip"`
	EndIP   string   `json:"end_ip"`
	Subnet  *mSubnet `json:"subnet"`
}

// PrepareSite makes MAAS's networks match the site's, looking before
// acting (four GETs: domains, fabrics with their VLANs, subnets, IP
// ranges) so that a second run changes nothing and answers Done
// "no changes".
//
//   - The domain is created when missing (authoritative).
//   - A subnet is found by CIDR wherever it is. A missing one is created
//     on the default fabric (fabric ID 0, else the lowest ID): on its
//     untagged VLAN when the design gives no VLAN, else on the VLAN with
//     that VID there, created when missing. SiteSpec has subnets, not
//     the design's NetworkLinks, so one fabric carries every tagged VLAN;
//     MAAS's "a fabric per link" layout would need the links. An
//     existing subnet is not moved to another VLAN (that would re-home
//     machines' links); a VID mismatch is reported.
//   - Gateway and DNS servers are set on the subnet; the MTU on its VLAN
//     (several subnets sharing a VLAN with different MTUs: the last wins).
//   - Ranges: design dhcp -> MAAS dynamic, reserved -> reserved; static
//     ranges are the design's own assignments, not MAAS ranges. A range
//     is matched by start and end; a wrong type is corrected; ranges the
//     design doesn't name are left alone. DHCP on the VLAN is not turned
//     on here.
func (d *Driver) PrepareSite(ctx context.Context, site drivers.SiteSpec) (drivers.Result, error) {
	if err := ctx.Err(); err != nil { // even when there is nothing to do
		return drivers.Result{}, err
	}
	var changes, notes []string
	if site.Domain != "" {
		ok, err := d.domainExists(ctx, site.Domain)
		if err != nil {
			return drivers.Result{}, err
		}
		if !ok {
			if err := d.c.call(ctx, http.MethodPost, "domains/", "", url.Values{"name": {site.Domain}, "authoritative": {"true"}}, nil); err != nil {
				return drivers.Result{}, err
			}
			changes = append(changes, "created domain "+site.Domain)
		}
	}
	if len(site.Subnets) > 0 {
		var fabrics []mFabric
		var subnets []mSubnet
		var ranges []mIPRange
		for _, g := range []struct {
			path string
			out  any
		}{{"fabrics/", &fabrics}, {"subnets/", &subnets}, {"ipranges/", &ranges}} {
			if err := d.c.call(ctx, http.MethodGet, g.path, "", nil, g.out); err != nil {
				return drivers.Result{}, err
			}
		}
		p := &sitePrep{d: d, fabrics: fabrics, subnets: subnets, ranges: ranges}
		for _, sn := range site.Subnets {
			if err := p.subnet(ctx, sn); err != nil {
				return drivers.Result{}, err
			}
		}
		changes, notes = append(changes, p.changes...), p.notes
	}
	msg := "no changes"
	if len(changes) > 0 {
		msg = strings.Join(changes, "; ")
	}
	if len(notes) > 0 {
		msg += " (" + strings.Join(notes, "; ") + ")"
	}
	return drivers.Done("%s", msg), nil
}

type sitePrep struct {
	d       *Driver
	fabrics []mFabric
	subnets []mSubnet
	ranges  []mIPRange
	changes []string
	notes   []string
}

func (p *sitePrep) changed(format string, args ...any) {
	p.changes = append(p.changes, fmt.Sprintf(format, args...))
}

func (p *sitePrep) defaultFabric() *mFabric {
	var best *mFabric
	for i := range p.fabrics {
		if best == nil || p.fabrics[i].ID < best.ID {
			best = &p.fabrics[i]
		}
	}
	return best
}

func (p *sitePrep) vlanByID(id int) *mVLAN {
	for i := range p.fabrics {
		for j := range p.fabrics[i].VLANs {
			if p.fabrics[i].VLANs[j].ID == id {
				return &p.fabrics[i].VLANs[j]
			}
		}
	}
	return nil
}

func (p *sitePrep) subnet(ctx context.Context, want drivers.Subnet) error {
	pfx, err := netip.ParsePrefix(want.CIDR)
	if err != nil {
		return drivers.Errorf(drivers.Permanent, "maas: subnet %s: CIDR %q: %v", want.Name, want.CIDR, err)
	}
	cidr := pfx.Masked().String()
	var cur *mSubnet
	for i := range p.subnets {
		if sp, err := netip.ParsePrefix(p.subnets[i].CIDR); err == nil && sp.Masked().String() == cidr {
			cur = &p.subnets[i]
		}
	}
	label := want.Name
	if label == "" {
		label = cidr
	}
	if cur == nil {
		v, err := p.vlanFor(ctx, want)
		if err != nil {
			return err
		}
		f := url.Values{"cidr": {cidr}, "vlan": {strconv.Itoa(v.ID)}}
		if want.Name != "" {
			f.Set("name", want.Name)
		}
		if want.Gateway != "" {
			f.Set("gateway_ip", want.Gateway)
		}
		if len(want.DNSServers) > 0 {
			f.Set("dns_servers", strings.Join(want.DNSServers, ","))
		}
		var sn mSubnet
		if err := p.d.c.call(ctx, http.MethodPost, "subnets/", "", f, &sn); err != nil {
			return err
		}
		sn.VLAN = v
		p.subnets = append(p.subnets, sn)
		cur = &p.subnets[len(p.subnets)-1]
		p.changed("created subnet %s (%s) on VLAN %d of fabric %s", label, cidr, v.VID, v.Fabric)
	} else {
		f := url.Values{}
		if want.Name != "" && cur.Name != want.Name {
			f.Set("name", want.Name)
		}
		gw := ""
		if cur.GatewayIP != nil {
			gw = *cur.GatewayIP
		}
		if want.Gateway != "" && !sameIP(gw, want.Gateway) {
			f.Set("gateway_ip", want.Gateway)
		}
		if len(want.DNSServers) > 0 && !slices.Equal(normIPs(cur.DNS), normIPs(want.DNSServers)) {
			f.Set("dns_servers", strings.Join(want.DNSServers, ","))
		}
		if len(f) > 0 {
			if err := p.d.c.call(ctx, http.MethodPut, "subnets/"+strconv.Itoa(cur.ID)+"/", "", f, nil); err != nil {
				return err
			}
			keys := make([]string, 0, len(f))
			for k := range f {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			p.changed("updated subnet %s (%s): %s", label, cidr, strings.Join(keys, ", "))
		}
		if cur.VLAN != nil && cur.VLAN.VID != want.VLAN {
			p.notes = append(p.notes, fmt.Sprintf("subnet %s is on VLAN %d in MAAS, the design says %d; not moved", label, cur.VLAN.VID, want.VLAN))
		}
	}
	if cur.VLAN != nil && want.MTU > 0 {
		v := p.vlanByID(cur.VLAN.ID)
		if v == nil {
			v = cur.VLAN
		}
		if v.MTU != want.MTU {
			if err := p.d.c.call(ctx, http.MethodPut, "vlans/"+strconv.Itoa(v.ID)+"/", "", url.Values{"mtu": {strconv.Itoa(want.MTU)}}, nil); err != nil {
				return err
			}
			v.MTU = want.MTU
			p.changed("set MTU %d on VLAN %d of fabric %s (subnet %s)", want.MTU, v.VID, v.Fabric, label)
		}
	}
	return p.ipRanges(ctx, want, cur, label)
}

// vlanFor is the VLAN a new subnet goes on (created when missing).
func (p *sitePrep) vlanFor(ctx context.Context, want drivers.Subnet) (*mVLAN, error) {
	fab := p.defaultFabric()
	if fab == nil {
		return nil, drivers.Errorf(drivers.Permanent, "maas: the region has no fabric to put subnet %s on", want.Name)
	}
	for i := range fab.VLANs {
		if fab.VLANs[i].VID == want.VLAN {
			v := &fab.VLANs[i]
			if v.Fabric == "" {
				v.Fabric = fab.Name
			}
			return v, nil
		}
	}
	if want.VLAN == 0 {
		return nil, drivers.Errorf(drivers.Permanent, "maas: fabric %s has no untagged VLAN", fab.Name)
	}
	f := url.Values{"vid": {strconv.Itoa(want.VLAN)}}
	if want.Name != "" {
		f.Set("name", want.Name)
	}
	if want.MTU > 0 {
		f.Set("mtu", strconv.Itoa(want.MTU))
	}
	var v mVLAN
	if err := p.d.c.call(ctx, http.MethodPost, "fabrics/"+strconv.Itoa(fab.ID)+"/vlans/", "", f, &v); err != nil {
		return nil, err
	}
	if v.Fabric == "" {
		v.Fabric = fab.Name
	}
	fab.VLANs = append(fab.VLANs, v)
	p.changed("created VLAN %d on fabric %s", v.VID, fab.Name)
	return &fab.VLANs[len(fab.VLANs)-1], nil
}

func (p *sitePrep) ipRanges(ctx context.Context, want drivers.Subnet, sn *mSubnet, label string) error {
	for _, r := range want.Ranges {
		typ := ""
		switch r.Type {
		case "dhcp":
			typ = "dynamic"
		case "reserved":
			typ = "reserved"
		default:
			continue // static: the design's own assignments
		}
		var cur *mIPRange
		for i := range p.ranges {
			if sameIP(p.ranges[i].StartIP, r.Start) && sameIP(p.ranges[i].EndIP, r.End) {
				cur = &p.ranges[i]
			}
		}
		switch {
		case cur == nil:
			f := url.Values{"type": {typ}, "start_ip": {r.Start}, "end_ip": {r.End}, "subnet": {strconv.Itoa(sn.ID)},
				"comment": {"slipway: " + label + " " + r.Type}}
			var nr mIPRange
			if err := p.d.c.call(ctx, http.MethodPost, "ipranges/", "", f, &nr); err != nil {
				return err
			}
			p.ranges = append(p.ranges, nr)
			p.changed("created %s range %s-%s on subnet %s", typ, r.Start, r.End, label)
		case cur.Type != typ:
			if err := p.d.c.call(ctx, http.MethodPut, "ipranges/"+strconv.Itoa(cur.ID)+"/", "", url.Values{"type": {typ}}, nil); err != nil {
				return err
			}
			cur.Type = typ
			p.changed("made range %s-%s on subnet %s %s", r.Start, r.End, label, typ)
		}
	}
	return nil
}

func sameIP(a, b string) bool {
	x, err1 := netip.ParseAddr(a)
	y, err2 := netip.ParseAddr(b)
	if err1 != nil || err2 != nil {
		return a == b
	}
	return x == y
}

func normIPs(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if a, err := netip.ParseAddr(s); err == nil {
			s = a.String()
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
