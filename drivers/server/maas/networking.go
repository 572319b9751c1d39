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
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// configurable reads the machine and checks that MAAS lets its networking,
// storage and platform be changed: it must be Ready (commissioned). While
// it commissions the step is in progress; any other state is permanent.
func (d *Driver) configurable(ctx context.Context, n drivers.Node, what string, need part) (*mMachine, *drivers.Result, error) {
	if n.MachineID == "" {
		return nil, nil, drivers.Errorf(drivers.Permanent, "maas: %s of node %s: the node has no machine yet (identify it first)", what, n.Name)
	}
	m, err := d.machine(ctx, n.MachineID, need)
	if err != nil {
		return nil, nil, err
	}
	switch m.StatusName {
	case "Ready":
		return m, nil, nil
	case "Commissioning", "Testing":
		r := drivers.InProgress(30*time.Second, "%s of %s: waiting for machine %s to finish %s", what, n.Name, n.MachineID, strings.ToLower(m.StatusName))
		return nil, &r, nil
	}
	return nil, nil, drivers.Errorf(drivers.Permanent, "maas: %s of node %s: machine %s is %s; MAAS changes it only when Ready (commission it, or release it first)",
		what, n.Name, n.MachineID, m.StatusName)
}

// cfgChanges lists what a configuration step changed.
type cfgChanges []string

func (c *cfgChanges) add(format string, args ...any) { *c = append(*c, fmt.Sprintf(format, args...)) }

func (c cfgChanges) result(what, id string) drivers.Result {
	if len(c) == 0 {
		return drivers.Done("%s of machine %s already configured", what, id)
	}
	return drivers.Done("%s of machine %s configured: %s", what, id, strings.Join(c, "; "))
}

// ApplyNetworking makes the machine's interfaces what the design says:
// physical interfaces renamed to the design's names, bonds, VLAN
// interfaces for the tagged networks of 802.1q trunks, MTUs, and a link
// per network (static address, DHCP, or link up when only carried), with
// the default gateway on the primary network. It compares first and
// changes only what differs.
//
// The work goes in two phases, each planned before it is applied: the
// interfaces themselves (planInterfaces, then one handler per kind:
// bond, interface settings, VLAN interfaces), then the links
// (planLinks, then unlink, link and default gateway).
func (d *Driver) ApplyNetworking(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	if n.MachineID != "" { // its tags' batches wait for it (tags.go)
		d.tagging.coming(n.MachineID)
	}
	m, wait, err := d.configurable(ctx, n, "networking", partInterfaces)
	if err != nil || wait != nil {
		return cfgResult(wait), err
	}
	r, err := d.runNetworking(ctx, m, n, false)
	if err != nil {
		return drivers.Result{}, err
	}
	return r.done.result("networking", r.id), nil
}

// runNetworking plans the machine's networking and applies the plan.
// dry (PlanNodes) writes nothing: each write is recorded in r.planned
// and r.ifaces changes as MAAS would change them, so that the links are
// planned on the interfaces the writes would leave.
func (d *Driver) runNetworking(ctx context.Context, m *mMachine, n drivers.Node, dry bool) (*netRun, error) {
	plan, err := d.networkPlan(ctx, m, n)
	if err != nil {
		return nil, err
	}
	r := &netRun{d: d, id: m.SystemID, base: "nodes/" + m.SystemID + "/interfaces/", ifaces: m.Interfaces, subnets: plan.subnets, dry: dry}
	if dry {
		r.ifaces = cloneIfaces(m.Interfaces)
	}
	for _, ip := range plan.ifaces {
		if err := r.applyInterface(ctx, ip); err != nil {
			return nil, err
		}
	}
	// Each write's answer (and, for a bond, what MAAS does to its
	// parents: takeParents) keeps r.ifaces what MAAS has; only a rename
	// of an interface others name as their parent needs a read again.
	if r.reread && !dry {
		if err := d.c.call(ctx, http.MethodGet, r.base, "", nil, &r.ifaces); err != nil {
			return nil, err
		}
	}
	links, err := planLinks(r.id, r.wants, r.ifaces, n.Primary)
	if err != nil {
		return nil, err
	}
	if err := r.applyLinks(ctx, links, gatewayLinkOf(m)); err != nil {
		return nil, err
	}
	return r, nil
}

// networkPlan reads what the plan needs besides the machine (the node
// devices behind the design's aliases and the MAAS subnets) and plans.
func (d *Driver) networkPlan(ctx context.Context, m *mMachine, n drivers.Node) (netPlan, error) {
	var devs []drivers.Device
	for _, in := range n.Interfaces {
		devs = append(devs, in.Devices...)
	}
	names, err := d.resolveDevices(ctx, m.SystemID, devs, false)
	if err != nil {
		return netPlan{}, err
	}
	var subnets []mSubnet
	if err := d.c.cache.list(ctx, d.c, "subnets/", "", &subnets); err != nil {
		return netPlan{}, err
	}
	ifaces, err := planInterfaces(m.SystemID, n, names, m.Interfaces, subnets)
	byCIDR := map[string]*mSubnet{}
	for i := range subnets {
		byCIDR[subnets[i].CIDR] = &subnets[i]
	}
	return netPlan{ifaces: ifaces, subnets: byCIDR}, err
}

// netPlan is a node's networking plan and MAAS's subnets by CIDR.
type netPlan struct {
	ifaces  []ifacePlan
	subnets map[string]*mSubnet
}

// p2pBesideDHCP refuses a point-to-point address on an interface whose
// untagged network is DHCP of the same family: MAAS drops an interface's
// DHCP links of a family when it links a static address of that family.
func p2pBesideDHCP(ip ifacePlan) error {
	if ip.native == nil || ip.native.net.Address != "dhcp" {
		return nil
	}
	for _, net := range ip.p2p {
		if isV4(net.CIDR) == isV4(ip.native.net.CIDR) {
			return drivers.Errorf(drivers.Permanent, "maas: %s %s is on interface %s, which takes DHCP on %s: MAAS drops an interface's DHCP link when a static address of the family is linked; put the address on a NIC without DHCP",
				net.Name, net.Address, ip.in.Name, ip.native.net.Name)
		}
	}
	return nil
}

func isV4(cidr string) bool {
	p, err := netip.ParsePrefix(cidr)
	return err == nil && p.Addr().Is4()
}

// p2pSubnet is the MAAS subnet of a point-to-point address on target:
// MAAS's, which must be on target's VLAN (link_subnet takes only the
// subnets of the interface's VLAN), else one made there.
func (r *netRun) p2pSubnet(ctx context.Context, target *mInterface, net drivers.InterfaceNetwork) (*mSubnet, error) {
	if target.VLAN == nil {
		return nil, drivers.Errorf(drivers.Permanent, "maas: machine %s: interface %s (for %s %s) is on no VLAN: connect it, commission again, then retry", r.id, target.Name, net.Name, net.Address)
	}
	if sn := r.subnets[net.CIDR]; sn != nil {
		if sn.VLAN == nil || sn.VLAN.ID != target.VLAN.ID {
			return nil, drivers.Errorf(drivers.Permanent, "maas: subnet %s (for %s on %s) is on VLAN %s, not on %s's (%s): move the subnet to that VLAN in MAAS or delete it, then retry",
				sn.CIDR, net.Address, target.Name, vlanText(sn.VLAN), target.Name, vlanText(target.VLAN))
		}
		return sn, nil
	}
	var sn mSubnet
	p := url.Values{"cidr": {net.CIDR}, "vlan": {strconv.Itoa(target.VLAN.ID)}, "name": {net.Name}}
	pc := drivers.PlannedChange{Part: drivers.PartSubnet, Op: opCreate, Object: "subnet " + net.CIDR,
		Detail: fmt.Sprintf("point-to-point subnet %s on %s's VLAN %s", net.Name, target.Name, vlanText(target.VLAN))}
	wrote, err := r.write(ctx, pc, http.MethodPost, "subnets/", "", p, &sn)
	if err != nil {
		return nil, err
	}
	if !wrote {
		sn = mSubnet{ID: r.fakeID(), Name: net.Name, CIDR: net.CIDR, VLAN: target.VLAN}
	}
	r.d.c.cache.forget("subnets/", "")
	r.subnets[sn.CIDR] = &sn
	r.done.add("made subnet %s on %s's VLAN %s", sn.CIDR, target.Name, vlanText(target.VLAN))
	return &sn, nil
}

// vlanText names a VLAN: fabric and VID.
func vlanText(v *mVLAN) string {
	if v == nil {
		return "(none)"
	}
	return fmt.Sprintf("%s.%d", v.Fabric, v.VID)
}

// netWant is a design network with the MAAS subnet it maps to.
type netWant struct {
	net    drivers.InterfaceNetwork
	subnet *mSubnet
}

// ifacePlan is what one design interface asks of the machine: the
// physical interfaces it is built on (MAAS IDs), the network it carries
// untagged, and the networks it carries tagged (802.1q trunks only).
type ifacePlan struct {
	in      drivers.Interface
	parents []int
	native  *netWant
	tagged  []netWant
	// p2p are point-to-point addresses (RoCE) on the untagged VLAN,
	// their subnets found or made once the interface's VLAN is known.
	p2p []drivers.InterfaceNetwork
}

// planInterfaces ties each design interface to the machine's physical
// interfaces and each network to its MAAS subnet, and checks what can be
// checked before anything is changed. It reads nothing and writes nothing.
func planInterfaces(id string, n drivers.Node, names map[string]resolved, ifaces []mInterface, subnets []mSubnet) ([]ifacePlan, error) {
	byCIDR := map[string]*mSubnet{}
	for i := range subnets {
		byCIDR[subnets[i].CIDR] = &subnets[i]
	}
	var plan []ifacePlan
	for _, in := range n.Interfaces {
		ip := ifacePlan{in: in}
		for _, dev := range in.Devices {
			r := names[dev.Alias]
			p := findPhysical(ifaces, r)
			if p == nil {
				return nil, drivers.Errorf(drivers.Permanent, "maas: machine %s has no interface %s for device %s of %s", id, r.Name, dev.Alias, in.Name)
			}
			ip.parents = append(ip.parents, p.ID)
		}
		if len(ip.parents) == 0 {
			return nil, drivers.Errorf(drivers.Permanent, "maas: interface %s of node %s names no device", in.Name, n.Name)
		}
		if !in.Link.Bonded() && len(ip.parents) != 1 {
			return nil, drivers.Errorf(drivers.Permanent, "maas: interface %s has %d devices but link %s does not bond them", in.Name, len(ip.parents), in.Link.Name)
		}
		own := in
		own.Networks = nil
		for _, net := range in.Networks {
			if net.PointToPoint {
				ip.p2p = append(ip.p2p, net)
			} else {
				own.Networks = append(own.Networks, net)
			}
		}
		var err error
		if ip.native, ip.tagged, err = splitNetworks(own, byCIDR); err != nil {
			return nil, err
		}
		if err := p2pBesideDHCP(ip); err != nil {
			return nil, err
		}
		plan = append(plan, ip)
	}
	return plan, nil
}

// splitNetworks sorts the networks of an interface into the untagged one
// and the tagged ones, each with its MAAS subnet. Without 802.1q trunking
// an interface carries one network; on a trunk the link's native network
// is untagged and every other one must be on the VLAN its subnet is on.
func splitNetworks(in drivers.Interface, byCIDR map[string]*mSubnet) (*netWant, []netWant, error) {
	trunk := in.Link.Trunking == "802.1q"
	var native *netWant
	var tagged []netWant
	for _, net := range in.Networks {
		s := byCIDR[net.CIDR]
		if s == nil || s.VLAN == nil {
			return nil, nil, drivers.Errorf(drivers.Permanent, "maas: network %s (%s) has no MAAS subnet: prepare the site first", net.Name, net.CIDR)
		}
		w := netWant{net: net, subnet: s}
		switch {
		case !trunk && native == nil, trunk && net.Name == in.Link.NativeNetwork:
			native = &w
		case trunk:
			if net.VLAN == 0 || s.VLAN.VID != net.VLAN {
				return nil, nil, drivers.Errorf(drivers.Permanent, "maas: network %s is tagged VLAN %d but its MAAS subnet %s is on VID %d", net.Name, net.VLAN, s.CIDR, s.VLAN.VID)
			}
			tagged = append(tagged, w)
		default:
			return nil, nil, drivers.Errorf(drivers.Permanent, "maas: interface %s carries several networks without 802.1q trunking", in.Name)
		}
	}
	return native, tagged, nil
}

// netRun is one application of a networking plan: the machine's
// interfaces as they are now, what was changed, and the links wanted.
// A dry run (a plan) writes nothing: it records each write in planned
// and changes ifaces as MAAS would (planned.go).
type netRun struct {
	d      *Driver
	id     string
	base   string // nodes/{id}/interfaces/
	ifaces []mInterface
	done   cfgChanges
	wants  []linkWant
	// subnets are MAAS's, by CIDR (point-to-point ones made here added).
	subnets map[string]*mSubnet
	dry     bool
	planned []drivers.PlannedChange
	fake    int // the last made-up ID of an object a dry run creates (negative)
	// reread: a write changed what its answer does not show (a renamed
	// parent): the links are planned on the interfaces read again.
	reread bool
}

// write runs one write of the run and answers true, or in a dry run
// records pc instead and answers false: the caller then makes up what
// MAAS would have answered.
func (r *netRun) write(ctx context.Context, pc drivers.PlannedChange, method, path, op string, p url.Values, out any) (bool, error) {
	if r.dry {
		r.planned = append(r.planned, pc)
		return false, nil
	}
	return true, r.d.c.call(ctx, method, path, op, p, out)
}

// linkWant is a network to link on the MAAS interface (by name) that
// carries it.
type linkWant struct {
	iface string
	netWant
}

// applyInterface builds one design interface: its bond (if bonded), its
// name, VLAN and MTU, and the VLAN interfaces of its tagged networks.
func (r *netRun) applyInterface(ctx context.Context, ip ifacePlan) error {
	target, err := r.ensureTarget(ctx, ip)
	if err != nil {
		return err
	}
	if target, err = r.updateInterface(ctx, target, ip.in.Name, ifaceUpdate(target, ip)); err != nil {
		return err
	}
	if ip.native != nil {
		r.wants = append(r.wants, linkWant{iface: target.Name, netWant: *ip.native})
	}
	for _, net := range ip.p2p {
		sn, err := r.p2pSubnet(ctx, target, net)
		if err != nil {
			return err
		}
		r.wants = append(r.wants, linkWant{iface: target.Name, netWant: netWant{net: net, subnet: sn}})
	}
	keep := map[int]bool{}
	for _, w := range ip.tagged {
		if err := checkFabric(target, ip.in, w); err != nil {
			return err
		}
		keep[w.subnet.VLAN.ID] = true
		v, err := r.ensureVLAN(ctx, target, w)
		if err != nil {
			return err
		}
		r.wants = append(r.wants, linkWant{iface: v.Name, netWant: w})
	}
	return r.removeStaleVLANs(ctx, target.Name, keep)
}

// ensureTarget answers the interface that carries the untagged traffic
// of ip: the NIC itself, or the bond over the NICs (made if need be).
func (r *netRun) ensureTarget(ctx context.Context, ip ifacePlan) (*mInterface, error) {
	var parents []*mInterface
	for _, pid := range ip.parents {
		p := ifaceByID(r.ifaces, pid)
		if p == nil {
			return nil, drivers.Errorf(drivers.Transient, "maas: machine %s: interface %d vanished while configuring", r.id, pid)
		}
		parents = append(parents, p)
	}
	if !ip.in.Link.Bonded() {
		return parents[0], nil
	}
	return r.ensureBond(ctx, ip.in, parents)
}

// ifaceUpdate is what the target interface of ip must change: its name,
// its VLAN (the untagged network's) and its MTU. Empty: nothing.
func ifaceUpdate(target *mInterface, ip ifacePlan) url.Values {
	put := url.Values{}
	if target.Name != ip.in.Name {
		put.Set("name", ip.in.Name)
	}
	if ip.native != nil && (target.VLAN == nil || target.VLAN.ID != ip.native.subnet.VLAN.ID) {
		put.Set("vlan", strconv.Itoa(ip.native.subnet.VLAN.ID))
	}
	if ip.in.Link.MTU > 0 && target.MTU != ip.in.Link.MTU {
		put.Set("mtu", strconv.Itoa(ip.in.Link.MTU))
	}
	return put
}

// updateInterface applies put (from ifaceUpdate) to the interface that
// becomes name, in one PUT, and answers the interface as MAAS left it.
func (r *netRun) updateInterface(ctx context.Context, target *mInterface, name string, put url.Values) (*mInterface, error) {
	if len(put) == 0 {
		return target, nil
	}
	var out mInterface
	pc := drivers.PlannedChange{Part: drivers.PartInterfaces, Op: opUpdate, Object: target.Name, Detail: r.describeUpdate(target, put)}
	wrote, err := r.write(ctx, pc, http.MethodPut, r.base+strconv.Itoa(target.ID)+"/", "", put, &out)
	if err != nil {
		return nil, err
	}
	if !wrote {
		out = r.updated(target, put)
	}
	if put.Has("name") && slices.ContainsFunc(r.ifaces, func(c mInterface) bool { return slices.Contains(c.Parents, target.Name) }) {
		r.reread = true
	}
	r.done.add("interface %s (was %s): %s", name, target.Name, describePut(put))
	r.ifaces = replaceIface(r.ifaces, target.Name, out)
	return ifaceByID(r.ifaces, out.ID), nil
}

// checkFabric: a tagged network's VLAN must be on the fabric of the
// interface that carries it (MAAS puts a VLAN interface on its parent's
// fabric).
func checkFabric(target *mInterface, in drivers.Interface, w netWant) error {
	s := w.subnet
	if target.VLAN == nil || s.VLAN.FabricID != target.VLAN.FabricID {
		return drivers.Errorf(drivers.Permanent, "maas: subnet %s (VLAN %d) is on fabric %q, not on the fabric of %s: put the networks of link %s on one fabric",
			s.CIDR, w.net.VLAN, s.VLAN.Fabric, in.Name, in.Link.Name)
	}
	return nil
}

// ensureVLAN finds or creates the VLAN interface of a tagged network on
// target and sets its MTU.
func (r *netRun) ensureVLAN(ctx context.Context, target *mInterface, w netWant) (*mInterface, error) {
	v := childVLAN(r.ifaces, target.Name, w.subnet.VLAN.ID)
	mtu := w.net.MTU
	if v == nil {
		p := url.Values{"parent": {strconv.Itoa(target.ID)}, "vlan": {strconv.Itoa(w.subnet.VLAN.ID)}}
		if mtu > 0 {
			p.Set("mtu", strconv.Itoa(mtu))
		}
		var out mInterface
		pc := drivers.PlannedChange{Part: drivers.PartInterfaces, Op: opCreate, Object: fmt.Sprintf("%s.%d", target.Name, w.subnet.VLAN.VID),
			Detail: fmt.Sprintf("VLAN interface on %s for VLAN %s (network %s)", target.Name, vlanText(w.subnet.VLAN), w.net.Name)}
		wrote, err := r.write(ctx, pc, http.MethodPost, r.base, "create_vlan", p, &out)
		if err != nil {
			return nil, err
		}
		if !wrote {
			out = mInterface{ID: r.fakeID(), Name: pc.Object, Type: "vlan", Parents: []string{target.Name}, VLAN: w.subnet.VLAN, MTU: max(mtu, 0)}
		}
		r.done.add("VLAN interface %s", out.Name)
		r.ifaces = append(r.ifaces, out)
		return &r.ifaces[len(r.ifaces)-1], nil
	}
	if mtu <= 0 || v.MTU == mtu {
		return v, nil
	}
	var out mInterface
	pc := drivers.PlannedChange{Part: drivers.PartInterfaces, Op: opUpdate, Object: v.Name, Detail: fmt.Sprintf("mtu %d → %d", v.MTU, mtu)}
	wrote, err := r.write(ctx, pc, http.MethodPut, r.base+strconv.Itoa(v.ID)+"/", "", url.Values{"mtu": {strconv.Itoa(mtu)}}, &out)
	if err != nil {
		return nil, err
	}
	if !wrote {
		out = *v
		out.MTU = mtu
	}
	r.done.add("interface %s: mtu=%d", v.Name, mtu)
	r.ifaces = replaceIface(r.ifaces, v.Name, out)
	return ifaceByID(r.ifaces, out.ID), nil
}

// staleVLANs are the VLAN interfaces on parent whose VLAN is not in keep.
func staleVLANs(ifaces []mInterface, parent string, keep map[int]bool) []mInterface {
	var out []mInterface
	for _, c := range ifaces {
		if c.Type == "vlan" && slices.Contains(c.Parents, parent) && (c.VLAN == nil || !keep[c.VLAN.ID]) {
			out = append(out, c)
		}
	}
	return out
}

// removeStaleVLANs deletes the VLAN interfaces on parent that no tagged
// network of the design asks for.
func (r *netRun) removeStaleVLANs(ctx context.Context, parent string, keep map[int]bool) error {
	for _, c := range staleVLANs(r.ifaces, parent, keep) {
		pc := drivers.PlannedChange{Part: drivers.PartInterfaces, Op: opDelete, Object: c.Name,
			Detail: fmt.Sprintf("VLAN interface on %s for VLAN %s, which the design does not carry there", parent, vlanText(c.VLAN))}
		if _, err := r.write(ctx, pc, http.MethodDelete, r.base+strconv.Itoa(c.ID)+"/", "", nil, nil); err != nil {
			return err
		}
		r.done.add("removed VLAN interface %s", c.Name)
		r.ifaces = slices.DeleteFunc(r.ifaces, func(o mInterface) bool { return o.ID == c.ID })
	}
	return nil
}

// unlinkStep is a link of a MAAS interface that the design does not ask for.
type unlinkStep struct {
	ifaceID   int
	ifaceName string
	link      mLink
}

// linkPlan is the second phase: stale links to remove first (an address
// may move), links to make, and the link of the primary network when it
// exists already.
type linkPlan struct {
	unlink     []unlinkStep
	link       []linkWant
	primary    *pendingLink
	primaryNet string // the node's primary network
}

// pendingLink is the link (by ID) that carries the primary network.
type pendingLink struct {
	want linkWant
	id   int
}

// planLinks compares the wanted links with the links of the machine's
// interfaces. It reads nothing and writes nothing.
func planLinks(id string, wants []linkWant, ifaces []mInterface, primary string) (linkPlan, error) {
	plan := linkPlan{primaryNet: primary}
	byIface := map[string][]linkWant{}
	var order []string
	for _, w := range wants {
		if _, ok := byIface[w.iface]; !ok {
			order = append(order, w.iface)
		}
		byIface[w.iface] = append(byIface[w.iface], w)
	}
	for _, name := range order {
		i := ifaceByName(ifaces, name)
		if i == nil {
			return plan, drivers.Errorf(drivers.Transient, "maas: machine %s: interface %s vanished while configuring", id, name)
		}
		matched := map[int]bool{}
		for _, w := range byIface[name] {
			found := matchLink(i.Links, w, matched)
			if found == 0 {
				plan.link = append(plan.link, w)
				continue
			}
			matched[found] = true
			if mode, _ := linkMode(w.net.Address); w.net.Name == primary && mode != "link_up" {
				plan.primary = &pendingLink{want: w, id: found}
			}
		}
		for _, l := range i.Links {
			if matched[l.ID] || (l.Subnet == nil && strings.EqualFold(l.Mode, "link_up")) {
				continue // a bare LINK_UP link goes by itself when a subnet is linked
			}
			plan.unlink = append(plan.unlink, unlinkStep{ifaceID: i.ID, ifaceName: name, link: l})
		}
	}
	return plan, nil
}

// matchLink answers the ID of a link, not yet matched, that is what w
// asks for (mode, subnet and address), or 0.
func matchLink(links []mLink, w linkWant, matched map[int]bool) int {
	mode, ip := linkMode(w.net.Address)
	for _, l := range links {
		if !matched[l.ID] && strings.EqualFold(l.Mode, mode) && l.Subnet != nil && l.Subnet.ID == w.subnet.ID && (ip == "" || l.IP == ip) {
			return l.ID
		}
	}
	return 0
}

// linkParams are the link_subnet parameters of w; primary tells whether
// it carries the primary network (and so may take the default gateway).
func linkParams(w linkWant, primaryNet string) (p url.Values, primary bool) {
	mode, ip := linkMode(w.net.Address)
	p = url.Values{"mode": {mode}, "subnet": {strconv.Itoa(w.subnet.ID)}}
	if ip != "" {
		p.Set("ip_address", ip)
	}
	primary = w.net.Name == primaryNet && mode != "link_up"
	if primary && mode == "static" && hasGateway(w.subnet) {
		p.Set("default_gateway", "true")
	}
	return p, primary
}

func hasGateway(s *mSubnet) bool { return s.GatewayIP != nil && *s.GatewayIP != "" }

// gatewayLinkOf is the ID of the link that holds the machine's IPv4
// default gateway (0: none).
func gatewayLinkOf(m *mMachine) int {
	if m.Gateways.IPv4.LinkID != nil {
		return *m.Gateways.IPv4.LinkID
	}
	return 0
}

// applyLinks removes the stale links, makes the missing ones and puts
// the default gateway on the primary network's link.
func (r *netRun) applyLinks(ctx context.Context, plan linkPlan, gatewayLink int) error {
	for _, u := range plan.unlink {
		p := url.Values{"id": {strconv.Itoa(u.link.ID)}}
		pc := drivers.PlannedChange{Part: drivers.PartInterfaces, Op: opDelete, Object: linkObject(u.ifaceName, u.link.Subnet), Detail: linkString(u.link)}
		if _, err := r.write(ctx, pc, http.MethodPost, r.base+strconv.Itoa(u.ifaceID)+"/", "unlink_subnet", p, nil); err != nil {
			return err
		}
		r.done.add("unlinked %s from %s", linkString(u.link), u.ifaceName)
	}
	primary := plan.primary
	for _, w := range plan.link {
		linked, gw, err := r.link(ctx, w, plan.primaryNet)
		if err != nil {
			return err
		}
		if linked != nil {
			primary = linked
			if gw {
				gatewayLink = linked.id
			}
		}
	}
	if primary == nil || primary.id == gatewayLink || !hasGateway(primary.want.subnet) {
		return nil
	}
	i := ifaceByName(r.ifaces, primary.want.iface)
	p := url.Values{"link_id": {strconv.Itoa(primary.id)}}
	pc := drivers.PlannedChange{Part: drivers.PartInterfaces, Op: opUpdate, Object: "default gateway",
		Detail: fmt.Sprintf("%s via %s", *primary.want.subnet.GatewayIP, primary.want.iface)}
	if _, err := r.write(ctx, pc, http.MethodPost, r.base+strconv.Itoa(i.ID)+"/", "set_default_gateway", p, nil); err != nil {
		return err
	}
	r.done.add("default gateway %s via %s", *primary.want.subnet.GatewayIP, primary.want.iface)
	return nil
}

// link links w on its interface. For the primary network it answers the
// new link, and whether MAAS was asked to put the default gateway on it.
func (r *netRun) link(ctx context.Context, w linkWant, primaryNet string) (*pendingLink, bool, error) {
	i := ifaceByName(r.ifaces, w.iface)
	p, isPrimary := linkParams(w, primaryNet)
	desc := p.Get("mode")
	if ip := p.Get("ip_address"); ip != "" {
		desc += " " + ip
	}
	var out mInterface
	pc := drivers.PlannedChange{Part: drivers.PartInterfaces, Op: opCreate, Object: linkObject(w.iface, w.subnet), Detail: desc}
	if p.Get("default_gateway") == "true" {
		pc.Detail += " (default gateway)"
	}
	wrote, err := r.write(ctx, pc, http.MethodPost, r.base+strconv.Itoa(i.ID)+"/", "link_subnet", p, &out)
	if err != nil {
		return nil, false, err
	}
	if !wrote {
		out = mInterface{Links: []mLink{{ID: r.fakeID(), Mode: p.Get("mode"), Subnet: w.subnet}}}
	}
	r.done.add("linked %s to %s (%s)", w.iface, w.subnet.CIDR, desc)
	if !isPrimary {
		return nil, false, nil
	}
	var found *pendingLink
	for _, l := range out.Links {
		if l.Subnet != nil && l.Subnet.ID == w.subnet.ID && strings.EqualFold(l.Mode, p.Get("mode")) {
			found = &pendingLink{want: w, id: l.ID}
		}
	}
	return found, found != nil && p.Get("default_gateway") == "true", nil
}

// ensureBond finds or creates the bond of in over parents; a bond of that
// name that differs, and anything else built on the parents, is removed.
func (r *netRun) ensureBond(ctx context.Context, in drivers.Interface, parents []*mInterface) (*mInterface, error) {
	var pnames []string
	for _, p := range parents {
		pnames = append(pnames, p.Name)
	}
	want := bondParams(in.Link)
	if b := ifaceByName(r.ifaces, in.Name); b != nil && b.Type == "bond" && sameNames(b.Parents, pnames) && bondMatches(b, want) {
		return b, nil
	}
	if err := r.removeInTheWay(ctx, in.Name, pnames); err != nil {
		return nil, err
	}
	p := url.Values{"name": {in.Name}}
	for _, pp := range parents {
		p.Add("parents", strconv.Itoa(pp.ID))
	}
	for k, v := range want {
		p.Set(k, v)
	}
	if in.Link.MTU > 0 {
		p.Set("mtu", strconv.Itoa(in.Link.MTU))
	}
	var out mInterface
	pc := drivers.PlannedChange{Part: drivers.PartInterfaces, Op: opCreate, Object: in.Name,
		Detail: fmt.Sprintf("bond of %s mode %s", strings.Join(pnames, ","), in.Link.BondMode)}
	wrote, err := r.write(ctx, pc, http.MethodPost, r.base, "create_bond", p, &out)
	if err != nil {
		return nil, err
	}
	if !wrote {
		out = r.bonded(in, pnames, want)
	}
	r.done.add("bond %s over %s (%s)", in.Name, strings.Join(pnames, ", "), in.Link.BondMode)
	r.takeParents(out.VLAN, pnames)
	r.ifaces = append(r.ifaces, out)
	return &r.ifaces[len(r.ifaces)-1], nil
}

// removeInTheWay deletes what a new bond named name over pnames must
// replace (inTheWay), and reads the interfaces again.
func (r *netRun) removeInTheWay(ctx context.Context, name string, pnames []string) error {
	remove := inTheWay(r.ifaces, name, pnames)
	for _, o := range remove {
		pc := drivers.PlannedChange{Part: drivers.PartInterfaces, Op: opDelete, Object: o.Name,
			Detail: fmt.Sprintf("%s interface in the way of bond %s over %s", o.Type, name, strings.Join(pnames, ","))}
		if _, err := r.write(ctx, pc, http.MethodDelete, r.base+strconv.Itoa(o.ID)+"/", "", nil, nil); err != nil && !isNotFound(err) {
			return err
		}
		r.done.add("removed %s interface %s", o.Type, o.Name)
		if r.dry {
			r.ifaces = removedIface(r.ifaces, o)
		}
	}
	if len(remove) > 0 && !r.dry {
		return r.d.c.call(ctx, http.MethodGet, r.base, "", nil, &r.ifaces)
	}
	return nil
}

// inTheWay are the interfaces a new bond named name over the parents
// pnames must replace: the interface of that name and the bonds, bridges
// and VLANs on the parents.
func inTheWay(ifaces []mInterface, name string, pnames []string) []mInterface {
	var remove []mInterface
	for _, o := range ifaces {
		if o.Type == "physical" {
			continue
		}
		if o.Name == name || slices.ContainsFunc(o.Parents, func(p string) bool { return slices.Contains(pnames, p) }) {
			remove = append(remove, o)
		}
	}
	return remove
}

func bondParams(l drivers.Link) map[string]string {
	p := map[string]string{"bond_mode": l.BondMode}
	if l.BondHash != "" {
		p["bond_xmit_hash_policy"] = l.BondHash
	}
	if l.LACPRate != "" {
		p["bond_lacp_rate"] = l.LACPRate
	}
	if l.MIIMon > 0 {
		p["bond_miimon"] = strconv.Itoa(l.MIIMon)
	}
	if l.UpDelay > 0 {
		p["bond_updelay"] = strconv.Itoa(l.UpDelay)
	}
	if l.DownDelay > 0 {
		p["bond_downdelay"] = strconv.Itoa(l.DownDelay)
	}
	return p
}

func bondMatches(b *mInterface, want map[string]string) bool {
	have := b.Params.Map()
	for k, v := range want {
		if fmt.Sprint(have[k]) != v {
			return false
		}
	}
	return true
}

func sameNames(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(s string) bool { return !slices.Contains(b, s) })
}

// findPhysical finds the physical interface of a resolved NIC: by MAC,
// by ID, then by name.
func findPhysical(ifaces []mInterface, r resolved) *mInterface {
	for i := range ifaces {
		if ifaces[i].Type == "physical" && r.MAC != "" && strings.EqualFold(ifaces[i].MAC, r.MAC) {
			return &ifaces[i]
		}
	}
	for i := range ifaces {
		if ifaces[i].Type == "physical" && ((r.ID != 0 && ifaces[i].ID == r.ID) || (r.ID == 0 && ifaces[i].Name == r.Name)) {
			return &ifaces[i]
		}
	}
	return nil
}

func ifaceByName(ifaces []mInterface, name string) *mInterface {
	for i := range ifaces {
		if ifaces[i].Name == name {
			return &ifaces[i]
		}
	}
	return nil
}

func ifaceByID(ifaces []mInterface, id int) *mInterface {
	for i := range ifaces {
		if ifaces[i].ID == id {
			return &ifaces[i]
		}
	}
	return nil
}

// replaceIface puts a changed interface in place of the one named old and
// follows a rename in the others' parents.
func replaceIface(ifaces []mInterface, old string, nw mInterface) []mInterface {
	for i := range ifaces {
		if ifaces[i].ID == nw.ID {
			ifaces[i] = nw
		}
		for k, p := range ifaces[i].Parents {
			if p == old {
				ifaces[i].Parents[k] = nw.Name
			}
		}
	}
	return ifaces
}

func childVLAN(ifaces []mInterface, parent string, vlanID int) *mInterface {
	for i := range ifaces {
		c := &ifaces[i]
		if c.Type == "vlan" && slices.Contains(c.Parents, parent) && c.VLAN != nil && c.VLAN.ID == vlanID {
			return c
		}
	}
	return nil
}

// linkMode is the MAAS link mode of a design address.
func linkMode(addr string) (mode, ip string) {
	switch strings.ToLower(addr) {
	case "":
		return "link_up", ""
	case "dhcp":
		return "dhcp", ""
	}
	return "static", addr
}

func linkString(l mLink) string {
	s := l.Mode
	if l.Subnet != nil {
		s += " " + l.Subnet.CIDR
	}
	if l.IP != "" {
		s += " " + l.IP
	}
	return s
}

func describePut(v url.Values) string {
	var parts []string
	for _, k := range []string{"name", "vlan", "mtu"} {
		if v.Has(k) {
			parts = append(parts, k+"="+v.Get(k))
		}
	}
	return strings.Join(parts, " ")
}

func cfgResult(r *drivers.Result) drivers.Result {
	if r == nil {
		return drivers.Result{}
	}
	return *r
}
