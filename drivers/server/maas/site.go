package maas

import (
	"context"
	"fmt"
	"maps"
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

type mStaticRoute struct {
	ID          int      `json:"id"`
	Source      *mSubnet `json:"source"`
	Destination *mSubnet `json:"destination"`
	GatewayIP   string   `json:"gateway_ip"`
	Metric      int      `json:"metric"`
}

type mSSHKey struct {
	ID  int    `json:"id"`
	Key string `json:"key"`
}

type mRackController struct {
	SystemID string `json:"system_id"`
}

// PrepareSite makes MAAS's networks match the site's, looking before
// acting (one GET per collection it needs: domains, SSH keys, fabrics with
// their VLANs, subnets, IP ranges, static routes; rack controllers only
// to turn DHCP on) so that a second run changes nothing and answers Done
// "no changes".
//
//   - The domain is created when missing (authoritative); SSH keys are
//     added to the API user's keys when missing (compared by type and
//     key, not comment).
//   - A fabric per link, named after it, created when missing.
//   - A network carried by a link lives on that link's fabric: on its
//     untagged VLAN when it is the link's native network (or has no VID),
//     else on the VLAN with its VID there, created when missing. A network
//     carried by several links goes on the first (by order in the spec).
//     A network no link carries goes on the default fabric (fabric ID 0,
//     else the lowest ID) the same way.
//   - A subnet is found by CIDR wherever it is. A missing one is created
//     on its VLAN; an existing one of a network a link carries is moved
//     there (PUT vlan) when it is elsewhere; one no link carries is not
//     moved, a VID mismatch is reported.
//   - Gateway and DNS servers are set on the subnet; the MTU on its VLAN
//     (several subnets sharing a VLAN with different MTUs: the last wins).
//   - Ranges: design dhcp -> MAAS dynamic, reserved -> reserved; static
//     ranges are the design's own assignments, not MAAS ranges. A range
//     is matched by start and end; a wrong type is corrected; ranges the
//     design doesn't name are left alone.
//   - DHCP is turned on on the PXE network's VLAN, with the first rack
//     controller as primary rack (MAAS needs a dynamic range there).
//   - Static routes: from a network's subnet to the MAAS subnet whose CIDR
//     is the route's "to", via its gateway; a route to anything else is
//     skipped with a note (MAAS routes go between subnets). A route is
//     matched by source, destination and gateway; a wrong metric is
//     corrected.
func (d *Driver) PrepareSite(ctx context.Context, site drivers.SiteSpec) (drivers.Result, error) {
	if err := ctx.Err(); err != nil { // even when there is nothing to do
		return drivers.Result{}, err
	}
	p := &sitePrep{d: d}
	if err := p.prepare(ctx, site); err != nil {
		return drivers.Result{}, err
	}
	msg := "no changes"
	if len(p.changes) > 0 {
		msg = strings.Join(p.changes, "; ")
	}
	if len(p.notes) > 0 {
		msg += " (" + strings.Join(p.notes, "; ") + ")"
	}
	return drivers.Done("%s", msg), nil
}

// PlanSite lists what PrepareSite(site) would change, reading only: the
// same decisions, each write recorded instead of made (sitePrep.dry);
// objects that a write would create and later steps build on (a fabric,
// a VLAN, a subnet) are made up, so what goes on them is planned as
// created too.
func (d *Driver) PlanSite(ctx context.Context, site drivers.SiteSpec) ([]drivers.PlannedChange, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := &sitePrep{d: d, dry: true}
	if err := p.prepare(ctx, site); err != nil {
		return nil, err
	}
	return p.planned, nil
}

// prepare makes (or, dry, plans) the site's domain, SSH keys and networks.
func (p *sitePrep) prepare(ctx context.Context, site drivers.SiteSpec) error {
	if site.Domain != "" {
		ok, err := p.d.domainExists(ctx, site.Domain)
		if err != nil {
			return err
		}
		if !ok {
			pc := drivers.PlannedChange{Part: drivers.PartDomain, Op: opCreate, Object: site.Domain, Detail: "authoritative"}
			if _, err := p.write(ctx, pc, http.MethodPost, "domains/", url.Values{"name": {site.Domain}, "authoritative": {"true"}}, nil); err != nil {
				return err
			}
			p.changed("created domain %s", site.Domain)
		}
	}
	if len(site.SSHKeys) > 0 {
		if err := p.sshKeys(ctx, site.SSHKeys); err != nil {
			return err
		}
	}
	if len(site.Subnets) > 0 || len(site.Links) > 0 {
		return p.networks(ctx, site)
	}
	return nil
}

// placement is where a network's subnet goes: a link's fabric and a VID.
type placement struct {
	link string
	vid  int
}

// networks reads the region's fabrics, subnets, IP ranges (and static
// routes when the site has routes), places each network on a link's
// fabric, then makes each subnet, DHCP and the static routes.
func (p *sitePrep) networks(ctx context.Context, site drivers.SiteSpec) error {
	hasRoutes := slices.ContainsFunc(site.Subnets, func(sn drivers.Subnet) bool { return len(sn.Routes) > 0 })
	if err := p.readNetworks(ctx, hasRoutes); err != nil {
		return err
	}
	place, err := p.placements(ctx, site)
	if err != nil {
		return err
	}
	p.byName = map[string]int{}
	for _, sn := range site.Subnets {
		var pl *placement
		if x, ok := place[sn.Name]; ok {
			pl = &x
		}
		if err := p.subnet(ctx, sn, pl); err != nil {
			return err
		}
	}
	if site.PXENetwork != "" {
		if err := p.dhcp(ctx, site); err != nil {
			return err
		}
	}
	if !hasRoutes {
		return nil
	}
	for _, sn := range site.Subnets {
		if err := p.staticRoutes(ctx, sn); err != nil {
			return err
		}
	}
	return nil
}

// readNetworks reads the collections networks compares with.
func (p *sitePrep) readNetworks(ctx context.Context, routes bool) error {
	type get struct {
		path string
		out  any
	}
	gets := []get{{"fabrics/", &p.fabrics}, {"subnets/", &p.subnets}, {"ipranges/", &p.ranges}}
	if routes {
		gets = append(gets, get{"static-routes/", &p.routes})
	}
	for _, g := range gets {
		if err := p.d.c.call(ctx, http.MethodGet, g.path, "", nil, g.out); err != nil {
			return err
		}
	}
	for _, f := range p.fabrics {
		for i := range f.VLANs {
			f.VLANs[i].FabricID, f.VLANs[i].Fabric = f.ID, f.Name
		}
	}
	return nil
}

// placements makes a fabric per link and places each network a link
// carries on the first such link's fabric: untagged when it is the
// link's native network, else on its VID.
func (p *sitePrep) placements(ctx context.Context, site drivers.SiteSpec) (map[string]placement, error) {
	vids := map[string]int{}
	for _, sn := range site.Subnets {
		vids[sn.Name] = sn.VLAN
	}
	place := map[string]placement{}
	for _, l := range site.Links {
		if err := p.fabric(ctx, l.Name); err != nil {
			return nil, err
		}
		for _, n := range l.Networks {
			if pl, ok := place[n]; ok {
				if pl.link != l.Name {
					p.notes = append(p.notes, fmt.Sprintf("network %s is carried by links %s and %s: its subnet is on fabric %s", n, pl.link, l.Name, pl.link))
				}
				continue
			}
			vid := vids[n]
			if n == l.NativeNetwork {
				vid = 0
			}
			place[n] = placement{link: l.Name, vid: vid}
		}
	}
	return place, nil
}

type sitePrep struct {
	d       *Driver
	fabrics []*mFabric
	subnets []*mSubnet
	ranges  []mIPRange
	routes  []mStaticRoute
	byName  map[string]int // design network -> MAAS subnet ID
	changes []string
	notes   []string
	// dry (PlanSite): each write is recorded in planned, not made.
	dry     bool
	planned []drivers.PlannedChange
	fake    int // the last made-up ID of an object a dry run creates (negative)
}

// write makes one write of PrepareSite and answers true, or, dry,
// records pc instead and answers false: the caller then makes up what
// MAAS would have answered.
func (p *sitePrep) write(ctx context.Context, pc drivers.PlannedChange, method, path string, params url.Values, out any) (bool, error) {
	if p.dry {
		p.planned = append(p.planned, pc)
		return false, nil
	}
	return true, p.d.c.call(ctx, method, path, "", params, out)
}

func (p *sitePrep) fakeID() int {
	p.fake--
	return p.fake
}

func (p *sitePrep) changed(format string, args ...any) {
	p.changes = append(p.changes, fmt.Sprintf(format, args...))
}

func (p *sitePrep) sshKeys(ctx context.Context, keys []string) error {
	var have []mSSHKey
	if err := p.d.c.call(ctx, http.MethodGet, "account/prefs/sshkeys/", "", nil, &have); err != nil {
		return err
	}
	known := map[string]bool{}
	for _, k := range have {
		known[keyID(k.Key)] = true
	}
	for _, k := range keys {
		k = strings.TrimSpace(k)
		if k == "" || known[keyID(k)] {
			continue
		}
		label := strings.Fields(k)
		name := label[0]
		if len(label) > 2 {
			name = label[len(label)-1]
		}
		pc := drivers.PlannedChange{Part: drivers.PartSSHKey, Op: opCreate, Object: name}
		if _, err := p.write(ctx, pc, http.MethodPost, "account/prefs/sshkeys/", url.Values{"key": {k}}, nil); err != nil {
			return err
		}
		known[keyID(k)] = true
		p.changed("added SSH key %s", name)
	}
	return nil
}

// keyID is an SSH public key without its comment.
func keyID(k string) string {
	f := strings.Fields(k)
	if len(f) > 2 {
		f = f[:2]
	}
	return strings.Join(f, " ")
}

func (p *sitePrep) fabricByName(name string) *mFabric {
	for _, f := range p.fabrics {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// fabric creates the link's fabric when missing.
func (p *sitePrep) fabric(ctx context.Context, name string) error {
	if p.fabricByName(name) != nil {
		return nil
	}
	var f mFabric
	pc := drivers.PlannedChange{Part: drivers.PartFabric, Op: opCreate, Object: name}
	wrote, err := p.write(ctx, pc, http.MethodPost, "fabrics/", url.Values{"name": {name}}, &f)
	if err != nil {
		return err
	}
	if !wrote { // MAAS makes a fabric with its untagged VLAN
		f = mFabric{ID: p.fakeID(), Name: name, VLANs: []mVLAN{{ID: p.fakeID(), VID: 0, MTU: 1500, Name: "untagged"}}}
	}
	for i := range f.VLANs {
		f.VLANs[i].FabricID, f.VLANs[i].Fabric = f.ID, f.Name
	}
	p.fabrics = append(p.fabrics, &f)
	p.changed("created fabric %s", name)
	return nil
}

func (p *sitePrep) defaultFabric() *mFabric {
	var best *mFabric
	for _, f := range p.fabrics {
		if best == nil || f.ID < best.ID {
			best = f
		}
	}
	return best
}

func (p *sitePrep) vlanByID(id int) *mVLAN {
	for _, f := range p.fabrics {
		for j := range f.VLANs {
			if f.VLANs[j].ID == id {
				return &f.VLANs[j]
			}
		}
	}
	return nil
}

func (p *sitePrep) subnetByID(id int) *mSubnet {
	for _, sn := range p.subnets {
		if sn.ID == id {
			return sn
		}
	}
	return nil
}

func (p *sitePrep) subnetByCIDR(cidr string) *mSubnet {
	pfx, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil
	}
	for _, sn := range p.subnets {
		if sp, err := netip.ParsePrefix(sn.CIDR); err == nil && sp.Masked() == pfx.Masked() {
			return sn
		}
	}
	return nil
}

// subnetAt is where a design subnet goes: its CIDR (masked), the label
// messages name it by, the fabric and VID, and whether a link placed it
// (else it is not moved when found elsewhere).
type subnetAt struct {
	cidr, label string
	fab         *mFabric
	vid         int
	placed      bool
}

// subnet makes one design subnet what the design says: created on its
// VLAN when missing, else updated (and moved when a link places it), then
// its VLAN's MTU and its IP ranges.
func (p *sitePrep) subnet(ctx context.Context, want drivers.Subnet, pl *placement) error {
	at, err := p.subnetPlace(want, pl)
	if err != nil {
		return err
	}
	cur := p.subnetByCIDR(at.cidr)
	if cur == nil {
		if cur, err = p.createSubnet(ctx, want, at); err != nil {
			return err
		}
	} else if err := p.updateSubnet(ctx, want, cur, at); err != nil {
		return err
	}
	p.byName[want.Name] = cur.ID
	if err := p.subnetMTU(ctx, want, cur, at.label); err != nil {
		return err
	}
	return p.ipRanges(ctx, want, cur, at.label)
}

// subnetPlace answers where a design subnet goes: on its link's fabric
// with the placement's VID, else on the default fabric with its own.
func (p *sitePrep) subnetPlace(want drivers.Subnet, pl *placement) (subnetAt, error) {
	pfx, err := netip.ParsePrefix(want.CIDR)
	if err != nil {
		return subnetAt{}, drivers.Errorf(drivers.Permanent, "maas: subnet %s: CIDR %q: %v", want.Name, want.CIDR, err)
	}
	at := subnetAt{cidr: pfx.Masked().String(), label: want.Name, fab: p.defaultFabric(), vid: want.VLAN}
	if at.label == "" {
		at.label = at.cidr
	}
	if pl != nil {
		at.fab, at.vid, at.placed = p.fabricByName(pl.link), pl.vid, true
	}
	if at.fab == nil {
		return subnetAt{}, drivers.Errorf(drivers.Permanent, "maas: the region has no fabric to put subnet %s on", at.label)
	}
	return at, nil
}

// createSubnet creates a missing subnet on its VLAN (created when missing).
func (p *sitePrep) createSubnet(ctx context.Context, want drivers.Subnet, at subnetAt) (*mSubnet, error) {
	v, err := p.vlanOn(ctx, at.fab, at.vid, want)
	if err != nil {
		return nil, err
	}
	f := subnetFields(want, nil)
	f.Set("cidr", at.cidr)
	f.Set("vlan", strconv.Itoa(v.ID))
	pc := drivers.PlannedChange{Part: drivers.PartSubnet, Op: opCreate, Object: "subnet " + at.cidr,
		Detail: fmt.Sprintf("%s on VLAN %d of fabric %s%s", at.label, v.VID, at.fab.Name, describeSubnetFields(f, nil))}
	sn, err := p.postSubnet(ctx, pc, f, v)
	if err != nil {
		return nil, err
	}
	p.changed("created subnet %s (%s) on VLAN %d of fabric %s", at.label, at.cidr, v.VID, at.fab.Name)
	return sn, nil
}

// postSubnet creates a subnet of the form f on the VLAN v and keeps it
// among the region's subnets.
func (p *sitePrep) postSubnet(ctx context.Context, pc drivers.PlannedChange, f url.Values, v *mVLAN) (*mSubnet, error) {
	var sn mSubnet
	wrote, err := p.write(ctx, pc, http.MethodPost, "subnets/", f, &sn)
	if err != nil {
		return nil, err
	}
	if !wrote {
		sn = mSubnet{ID: p.fakeID(), Name: f.Get("name"), CIDR: f.Get("cidr")}
	}
	vc := *v
	sn.VLAN = &vc
	p.subnets = append(p.subnets, &sn)
	return &sn, nil
}

// subnetFields are the name, gateway and DNS servers of want that cur
// (nil: a new subnet) does not have yet.
func subnetFields(want drivers.Subnet, cur *mSubnet) url.Values {
	f := url.Values{}
	if want.Name != "" && (cur == nil || cur.Name != want.Name) {
		f.Set("name", want.Name)
	}
	if want.Gateway != "" && (cur == nil || !sameIP(str(cur.GatewayIP), want.Gateway)) {
		f.Set("gateway_ip", want.Gateway)
	}
	if len(want.DNSServers) > 0 && (cur == nil || !slices.Equal(normIPs(cur.DNS), normIPs(want.DNSServers))) {
		f.Set("dns_servers", strings.Join(want.DNSServers, ","))
	}
	return f
}

// updateSubnet sets what differs on an existing subnet, and moves it to
// its VLAN when a link places it elsewhere; one no link places is not
// moved (a VID mismatch is noted).
func (p *sitePrep) updateSubnet(ctx context.Context, want drivers.Subnet, cur *mSubnet, at subnetAt) error {
	f := subnetFields(want, cur)
	var moveTo *mVLAN
	if at.placed && (cur.VLAN == nil || cur.VLAN.FabricID != at.fab.ID || cur.VLAN.VID != at.vid) {
		var err error
		if moveTo, err = p.vlanOn(ctx, at.fab, at.vid, want); err != nil {
			return err
		}
		f.Set("vlan", strconv.Itoa(moveTo.ID))
	}
	if len(f) > 0 {
		detail := strings.TrimPrefix(describeSubnetFields(f, cur), ", ")
		if moveTo != nil {
			detail += fmt.Sprintf(", VLAN %s → %s", vlanText(cur.VLAN), vlanText(moveTo))
		}
		pc := drivers.PlannedChange{Part: drivers.PartSubnet, Op: opUpdate, Object: "subnet " + at.cidr, Detail: strings.TrimPrefix(detail, ", ")}
		if _, err := p.write(ctx, pc, http.MethodPut, "subnets/"+strconv.Itoa(cur.ID)+"/", f, nil); err != nil {
			return err
		}
		keys := slices.Sorted(maps.Keys(f))
		if moveTo != nil {
			vc := *moveTo
			cur.VLAN = &vc
			p.changed("updated subnet %s (%s): %s (now VLAN %d of fabric %s)", at.label, at.cidr, strings.Join(keys, ", "), at.vid, at.fab.Name)
		} else {
			p.changed("updated subnet %s (%s): %s", at.label, at.cidr, strings.Join(keys, ", "))
		}
	}
	if !at.placed && cur.VLAN != nil && cur.VLAN.VID != want.VLAN {
		p.notes = append(p.notes, fmt.Sprintf("subnet %s is on VLAN %d in MAAS, the design says %d; not moved", at.label, cur.VLAN.VID, want.VLAN))
	}
	return nil
}

// subnetMTU sets the design's MTU on the subnet's VLAN.
func (p *sitePrep) subnetMTU(ctx context.Context, want drivers.Subnet, cur *mSubnet, label string) error {
	if cur.VLAN == nil || want.MTU <= 0 {
		return nil
	}
	v := p.vlanByID(cur.VLAN.ID)
	if v == nil {
		v = cur.VLAN
	}
	if v.MTU == want.MTU {
		return nil
	}
	pc := drivers.PlannedChange{Part: drivers.PartVLAN, Op: opUpdate, Object: fmt.Sprintf("VLAN %d of fabric %s", v.VID, v.Fabric),
		Detail: fmt.Sprintf("mtu %d → %d (subnet %s)", v.MTU, want.MTU, label)}
	if _, err := p.write(ctx, pc, http.MethodPut, "vlans/"+strconv.Itoa(v.ID)+"/", url.Values{"mtu": {strconv.Itoa(want.MTU)}}, nil); err != nil {
		return err
	}
	v.MTU = want.MTU
	p.changed("set MTU %d on VLAN %d of fabric %s (subnet %s)", want.MTU, v.VID, v.Fabric, label)
	return nil
}

// vlanOn is the VLAN with the VID on the fabric, created when missing.
func (p *sitePrep) vlanOn(ctx context.Context, fab *mFabric, vid int, want drivers.Subnet) (*mVLAN, error) {
	for i := range fab.VLANs {
		if fab.VLANs[i].VID == vid {
			return &fab.VLANs[i], nil
		}
	}
	if vid == 0 {
		return nil, drivers.Errorf(drivers.Permanent, "maas: fabric %s has no untagged VLAN", fab.Name)
	}
	f := url.Values{"vid": {strconv.Itoa(vid)}}
	if want.Name != "" {
		f.Set("name", want.Name)
	}
	if want.MTU > 0 {
		f.Set("mtu", strconv.Itoa(want.MTU))
	}
	var v mVLAN
	pc := drivers.PlannedChange{Part: drivers.PartVLAN, Op: opCreate, Object: fmt.Sprintf("VLAN %d of fabric %s", vid, fab.Name), Detail: want.Name}
	wrote, err := p.write(ctx, pc, http.MethodPost, "fabrics/"+strconv.Itoa(fab.ID)+"/vlans/", f, &v)
	if err != nil {
		return nil, err
	}
	if !wrote {
		v = mVLAN{ID: p.fakeID(), VID: vid, Name: want.Name, MTU: max(want.MTU, 1500)}
	}
	v.FabricID, v.Fabric = fab.ID, fab.Name
	fab.VLANs = append(fab.VLANs, v)
	p.changed("created VLAN %d on fabric %s", v.VID, fab.Name)
	return &fab.VLANs[len(fab.VLANs)-1], nil
}

// hasDynamicRange: MAAS has a dynamic range on the subnet or its VLAN
// (DHCP needs one).
func (p *sitePrep) hasDynamicRange(sn *mSubnet, v *mVLAN) bool {
	return slices.ContainsFunc(p.ranges, func(r mIPRange) bool {
		return r.Type == "dynamic" && r.Subnet != nil && (r.Subnet.ID == sn.ID || r.Subnet.VLAN != nil && r.Subnet.VLAN.ID == v.ID)
	})
}

// dhcp turns DHCP on on the PXE network's VLAN.
func (p *sitePrep) dhcp(ctx context.Context, site drivers.SiteSpec) error {
	id, ok := p.byName[site.PXENetwork]
	sn := p.subnetByID(id)
	if !ok || sn == nil || sn.VLAN == nil {
		p.notes = append(p.notes, fmt.Sprintf("DHCP not enabled: the PXE network %s is not among the site's subnets", site.PXENetwork))
		return nil
	}
	v := p.vlanByID(sn.VLAN.ID)
	if v == nil {
		v = sn.VLAN
	}
	if v.DHCPOn && v.Primary != nil && *v.Primary != "" {
		return nil
	}
	if !p.hasDynamicRange(sn, v) {
		p.notes = append(p.notes, fmt.Sprintf("DHCP not enabled on VLAN %d of fabric %s: the PXE network %s has no dhcp range", v.VID, v.Fabric, site.PXENetwork))
		return nil
	}
	var racks []mRackController
	if err := p.d.c.call(ctx, http.MethodGet, "rackcontrollers/", "", nil, &racks); err != nil {
		return err
	}
	if len(racks) == 0 || racks[0].SystemID == "" {
		p.notes = append(p.notes, fmt.Sprintf("DHCP not enabled on VLAN %d of fabric %s: MAAS has no rack controller", v.VID, v.Fabric))
		return nil
	}
	rack := racks[0].SystemID
	pc := drivers.PlannedChange{Part: drivers.PartVLAN, Op: opUpdate, Object: fmt.Sprintf("VLAN %d of fabric %s", v.VID, v.Fabric),
		Detail: fmt.Sprintf("DHCP off → on, primary rack %s (network %s)", rack, site.PXENetwork)}
	if _, err := p.write(ctx, pc, http.MethodPut, "vlans/"+strconv.Itoa(v.ID)+"/", url.Values{"dhcp_on": {"true"}, "primary_rack": {rack}}, nil); err != nil {
		return err
	}
	v.DHCPOn, v.Primary = true, &rack
	p.changed("enabled DHCP on VLAN %d of fabric %s (network %s, rack %s)", v.VID, v.Fabric, site.PXENetwork, rack)
	return nil
}

// staticRoutes makes the network's routes MAAS static routes.
func (p *sitePrep) staticRoutes(ctx context.Context, want drivers.Subnet) error {
	src := p.subnetByID(p.byName[want.Name])
	if src == nil {
		return nil
	}
	for _, r := range want.Routes {
		dst, err := p.routeDestination(ctx, r.To)
		if err != nil {
			return err
		}
		if dst.ID == src.ID {
			p.notes = append(p.notes, fmt.Sprintf("route %s -> %s via %s skipped: it leads to the network itself", want.Name, r.To, r.Via))
			continue
		}
		var cur *mStaticRoute
		for i := range p.routes {
			x := &p.routes[i]
			if x.Source != nil && x.Destination != nil && x.Source.ID == src.ID && x.Destination.ID == dst.ID && sameIP(x.GatewayIP, r.Via) {
				cur = x
			}
		}
		switch {
		case cur == nil:
			f := url.Values{"source": {strconv.Itoa(src.ID)}, "destination": {strconv.Itoa(dst.ID)}, "gateway_ip": {r.Via},
				"metric": {strconv.Itoa(r.Metric)}}
			var nr mStaticRoute
			pc := drivers.PlannedChange{Part: drivers.PartRoute, Op: opCreate, Object: fmt.Sprintf("%s → %s via %s", want.Name, dst.CIDR, r.Via),
				Detail: fmt.Sprintf("metric %d", r.Metric)}
			wrote, err := p.write(ctx, pc, http.MethodPost, "static-routes/", f, &nr)
			if err != nil {
				return err
			}
			if !wrote {
				nr = mStaticRoute{ID: p.fakeID(), Source: src, Destination: dst, GatewayIP: r.Via, Metric: r.Metric}
			}
			p.routes = append(p.routes, nr)
			p.changed("created static route %s -> %s via %s", want.Name, dst.CIDR, r.Via)
		case cur.Metric != r.Metric:
			pc := drivers.PlannedChange{Part: drivers.PartRoute, Op: opUpdate, Object: fmt.Sprintf("%s → %s via %s", want.Name, dst.CIDR, r.Via),
				Detail: fmt.Sprintf("metric %d → %d", cur.Metric, r.Metric)}
			if _, err := p.write(ctx, pc, http.MethodPut, "static-routes/"+strconv.Itoa(cur.ID)+"/", url.Values{"metric": {strconv.Itoa(r.Metric)}}, nil); err != nil {
				return err
			}
			cur.Metric = r.Metric
			p.changed("set metric %d on static route %s -> %s via %s", r.Metric, want.Name, dst.CIDR, r.Via)
		}
	}
	return nil
}

// RouteFabric holds the subnets Slipway creates as destinations of static
// routes: MAAS routes only to a subnet it knows, and renders a route on
// the interfaces that address its source subnet.
const RouteFabric = "slipway-route-destinations"

// routeDestination is the MAAS subnet of a route's destination, created
// (unmanaged, on RouteFabric, which no machine is linked to) when MAAS has
// none, so that the route reaches the deployed node as the design says.
func (p *sitePrep) routeDestination(ctx context.Context, cidr string) (*mSubnet, error) {
	pfx, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, drivers.Errorf(drivers.Permanent, "maas: route destination %q: %v", cidr, err)
	}
	if sn := p.subnetByCIDR(cidr); sn != nil {
		return sn, nil
	}
	if err := p.fabric(ctx, RouteFabric); err != nil {
		return nil, err
	}
	v, err := p.vlanOn(ctx, p.fabricByName(RouteFabric), 0, drivers.Subnet{})
	if err != nil {
		return nil, err
	}
	f := url.Values{"cidr": {pfx.Masked().String()}, "vlan": {strconv.Itoa(v.ID)}, "managed": {"false"},
		"description": {"destination of static routes of the Slipway design (no machine is linked here)"}}
	pc := drivers.PlannedChange{Part: drivers.PartSubnet, Op: opCreate, Object: "subnet " + f.Get("cidr"),
		Detail: "unmanaged, on fabric " + RouteFabric + ", the destination of static routes"}
	sn, err := p.postSubnet(ctx, pc, f, v)
	if err != nil {
		return nil, err
	}
	p.changed("created subnet %s on fabric %s as the destination of static routes", sn.CIDR, RouteFabric)
	return sn, nil
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
			pc := drivers.PlannedChange{Part: drivers.PartRange, Op: opCreate, Object: r.Start + "-" + r.End, Detail: typ + " on subnet " + label}
			wrote, err := p.write(ctx, pc, http.MethodPost, "ipranges/", f, &nr)
			if err != nil {
				return err
			}
			if !wrote {
				nr = mIPRange{ID: p.fakeID(), Type: typ, StartIP: r.Start, EndIP: r.End, Subnet: sn}
			}
			p.ranges = append(p.ranges, nr)
			p.changed("created %s range %s-%s on subnet %s", typ, r.Start, r.End, label)
		case cur.Type != typ:
			pc := drivers.PlannedChange{Part: drivers.PartRange, Op: opUpdate, Object: r.Start + "-" + r.End, Detail: cur.Type + " → " + typ + " on subnet " + label}
			if _, err := p.write(ctx, pc, http.MethodPut, "ipranges/"+strconv.Itoa(cur.ID)+"/", url.Values{"type": {typ}}, nil); err != nil {
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

// describeSubnetFields says what the subnet form f (subnetFields) sets,
// from what cur has (nil: a new subnet), each part after ", ".
func describeSubnetFields(f url.Values, cur *mSubnet) string {
	var out strings.Builder
	from := func(s string) string {
		if cur == nil {
			return ""
		}
		return orNoneText(s) + " → "
	}
	if f.Has("name") && cur != nil {
		fmt.Fprintf(&out, ", name %s%s", from(cur.Name), f.Get("name"))
	}
	if f.Has("gateway_ip") {
		var now string
		if cur != nil {
			now = str(cur.GatewayIP)
		}
		fmt.Fprintf(&out, ", gateway %s%s", from(now), f.Get("gateway_ip"))
	}
	if f.Has("dns_servers") {
		var now []string
		if cur != nil {
			now = cur.DNS
		}
		fmt.Fprintf(&out, ", DNS %s%s", from(strings.Join(now, ",")), f.Get("dns_servers"))
	}
	return out.String()
}
