package maas

import (
	"context"
	"fmt"
	"net/http"
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
// cfgChanges only what differs.
func (d *Driver) ApplyNetworking(ctx context.Context, n drivers.Node) (drivers.Result, error) {
	m, wait, err := d.configurable(ctx, n, "networking", partInterfaces)
	if err != nil || wait != nil {
		return cfgResult(wait), err
	}
	id := m.SystemID
	var devs []drivers.Device
	for _, in := range n.Interfaces {
		devs = append(devs, in.Devices...)
	}
	names, err := d.resolveDevices(ctx, id, devs, false)
	if err != nil {
		return drivers.Result{}, err
	}
	var subnets []mSubnet
	if err := d.c.cache.list(ctx, d.c, "subnets/", "", &subnets); err != nil {
		return drivers.Result{}, err
	}
	byCIDR := map[string]*mSubnet{}
	for i := range subnets {
		byCIDR[subnets[i].CIDR] = &subnets[i]
	}
	subnetOf := func(net drivers.InterfaceNetwork) (*mSubnet, error) {
		s := byCIDR[net.CIDR]
		if s == nil || s.VLAN == nil {
			return nil, drivers.Errorf(drivers.Permanent, "maas: network %s (%s) has no MAAS subnet: prepare the site first", net.Name, net.CIDR)
		}
		return s, nil
	}
	var done cfgChanges
	ifaces := m.Interfaces
	base := "nodes/" + id + "/interfaces/"

	// Phase 1: the interfaces themselves.
	type linkWant struct {
		iface  string // MAAS name of the interface carrying it
		net    drivers.InterfaceNetwork
		subnet *mSubnet
	}
	var wants []linkWant
	for _, in := range n.Interfaces {
		var parents []*mInterface
		for _, dev := range in.Devices {
			r := names[dev.Alias]
			p := findPhysical(ifaces, r)
			if p == nil {
				return drivers.Result{}, drivers.Errorf(drivers.Permanent, "maas: machine %s has no interface %s for device %s of %s", id, r.Name, dev.Alias, in.Name)
			}
			parents = append(parents, p)
		}
		if len(parents) == 0 {
			return drivers.Result{}, drivers.Errorf(drivers.Permanent, "maas: interface %s of node %s names no device", in.Name, n.Name)
		}
		bonded := in.Link.Bonded()
		trunk := in.Link.Trunking == "802.1q"
		var native *drivers.InterfaceNetwork
		var tagged []drivers.InterfaceNetwork
		for i := range in.Networks {
			switch {
			case !trunk && native == nil:
				native = &in.Networks[i]
			case trunk && in.Networks[i].Name == in.Link.NativeNetwork:
				native = &in.Networks[i]
			case trunk:
				tagged = append(tagged, in.Networks[i])
			default:
				return drivers.Result{}, drivers.Errorf(drivers.Permanent, "maas: interface %s carries several networks without 802.1q trunking", in.Name)
			}
		}
		var nativeSubnet *mSubnet
		if native != nil {
			if nativeSubnet, err = subnetOf(*native); err != nil {
				return drivers.Result{}, err
			}
		}
		// The interface that carries the untagged traffic: the NIC or the bond.
		var target *mInterface
		if !bonded {
			if len(parents) != 1 {
				return drivers.Result{}, drivers.Errorf(drivers.Permanent, "maas: interface %s has %d devices but link %s does not bond them", in.Name, len(parents), in.Link.Name)
			}
			target = parents[0]
		} else {
			target, ifaces, err = d.ensureBond(ctx, id, in, parents, ifaces, &done)
			if err != nil {
				return drivers.Result{}, err
			}
		}
		// Name, VLAN and MTU of the target, in one PUT.
		put := url.Values{}
		if target.Name != in.Name {
			put.Set("name", in.Name)
		}
		if nativeSubnet != nil && (target.VLAN == nil || target.VLAN.ID != nativeSubnet.VLAN.ID) {
			put.Set("vlan", strconv.Itoa(nativeSubnet.VLAN.ID))
		}
		if in.Link.MTU > 0 && target.MTU != in.Link.MTU {
			put.Set("mtu", strconv.Itoa(in.Link.MTU))
		}
		if len(put) > 0 {
			var out mInterface
			if err := d.c.call(ctx, http.MethodPut, base+strconv.Itoa(target.ID)+"/", "", put, &out); err != nil {
				return drivers.Result{}, err
			}
			done.add("interface %s (was %s): %s", in.Name, target.Name, describePut(put))
			ifaces = replaceIface(ifaces, target.Name, out)
			target = ifaceByID(ifaces, out.ID)
		}
		if native != nil {
			wants = append(wants, linkWant{iface: target.Name, net: *native, subnet: nativeSubnet})
		}
		// VLAN interfaces for the tagged networks; stale ones go.
		keep := map[int]bool{}
		for _, net := range tagged {
			s, err := subnetOf(net)
			if err != nil {
				return drivers.Result{}, err
			}
			if net.VLAN == 0 || s.VLAN.VID != net.VLAN {
				return drivers.Result{}, drivers.Errorf(drivers.Permanent, "maas: network %s is tagged VLAN %d but its MAAS subnet %s is on VID %d", net.Name, net.VLAN, s.CIDR, s.VLAN.VID)
			}
			if target.VLAN == nil || s.VLAN.FabricID != target.VLAN.FabricID {
				return drivers.Result{}, drivers.Errorf(drivers.Permanent, "maas: subnet %s (VLAN %d) is on fabric %q, not on the fabric of %s: put the networks of link %s on one fabric",
					s.CIDR, net.VLAN, s.VLAN.Fabric, in.Name, in.Link.Name)
			}
			keep[s.VLAN.ID] = true
			v := childVLAN(ifaces, target.Name, s.VLAN.ID)
			mtu := net.MTU
			if v == nil {
				p := url.Values{"parent": {strconv.Itoa(target.ID)}, "vlan": {strconv.Itoa(s.VLAN.ID)}}
				if mtu > 0 {
					p.Set("mtu", strconv.Itoa(mtu))
				}
				var out mInterface
				if err := d.c.call(ctx, http.MethodPost, base, "create_vlan", p, &out); err != nil {
					return drivers.Result{}, err
				}
				done.add("VLAN interface %s", out.Name)
				ifaces = append(ifaces, out)
				v = &ifaces[len(ifaces)-1]
			} else if mtu > 0 && v.MTU != mtu {
				var out mInterface
				if err := d.c.call(ctx, http.MethodPut, base+strconv.Itoa(v.ID)+"/", "", url.Values{"mtu": {strconv.Itoa(mtu)}}, &out); err != nil {
					return drivers.Result{}, err
				}
				done.add("interface %s: mtu=%d", v.Name, mtu)
				ifaces = replaceIface(ifaces, v.Name, out)
				v = ifaceByID(ifaces, out.ID)
			}
			wants = append(wants, linkWant{iface: v.Name, net: net, subnet: s})
		}
		for _, c := range slices.Clone(ifaces) {
			if c.Type == "vlan" && slices.Contains(c.Parents, target.Name) && (c.VLAN == nil || !keep[c.VLAN.ID]) {
				if err := d.c.call(ctx, http.MethodDelete, base+strconv.Itoa(c.ID)+"/", "", nil, nil); err != nil {
					return drivers.Result{}, err
				}
				done.add("removed VLAN interface %s", c.Name)
				ifaces = slices.DeleteFunc(ifaces, func(o mInterface) bool { return o.ID == c.ID })
			}
		}
	}
	// Structural cfgChanges move links around (a bond takes its parents'
	// links): read the interfaces again before linking.
	if len(done) > 0 {
		if err := d.c.call(ctx, http.MethodGet, base, "", nil, &ifaces); err != nil {
			return drivers.Result{}, err
		}
	}

	// Phase 2: the links, stale ones first (an address may move).
	gatewayLink := 0
	if m.Gateways.IPv4.LinkID != nil {
		gatewayLink = *m.Gateways.IPv4.LinkID
	}
	type pendingLink struct {
		want linkWant
		id   int
	}
	var toLink []linkWant
	var primary *pendingLink
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
			return drivers.Result{}, drivers.Errorf(drivers.Transient, "maas: machine %s: interface %s vanished while configuring", id, name)
		}
		matched := map[int]bool{}
		for _, w := range byIface[name] {
			mode, ip := linkMode(w.net.Address)
			found := 0
			for _, l := range i.Links {
				if !matched[l.ID] && strings.EqualFold(l.Mode, mode) && l.Subnet != nil && l.Subnet.ID == w.subnet.ID && (ip == "" || l.IP == ip) {
					found = l.ID
					break
				}
			}
			if found != 0 {
				matched[found] = true
				if w.net.Name == n.Primary && mode != "link_up" {
					primary = &pendingLink{want: w, id: found}
				}
				continue
			}
			toLink = append(toLink, w)
		}
		for _, l := range i.Links {
			if matched[l.ID] || (l.Subnet == nil && strings.EqualFold(l.Mode, "link_up")) {
				continue // a bare LINK_UP link goes by itself when a subnet is linked
			}
			p := url.Values{"id": {strconv.Itoa(l.ID)}}
			if err := d.c.call(ctx, http.MethodPost, base+strconv.Itoa(i.ID)+"/", "unlink_subnet", p, nil); err != nil {
				return drivers.Result{}, err
			}
			done.add("unlinked %s from %s", linkString(l), name)
		}
	}
	for _, w := range toLink {
		i := ifaceByName(ifaces, w.iface)
		mode, ip := linkMode(w.net.Address)
		p := url.Values{"mode": {mode}, "subnet": {strconv.Itoa(w.subnet.ID)}}
		if ip != "" {
			p.Set("ip_address", ip)
		}
		isPrimary := w.net.Name == n.Primary && mode != "link_up"
		if isPrimary && mode == "static" && w.subnet.GatewayIP != nil && *w.subnet.GatewayIP != "" {
			p.Set("default_gateway", "true")
		}
		var out mInterface
		if err := d.c.call(ctx, http.MethodPost, base+strconv.Itoa(i.ID)+"/", "link_subnet", p, &out); err != nil {
			return drivers.Result{}, err
		}
		desc := mode
		if ip != "" {
			desc += " " + ip
		}
		done.add("linked %s to %s (%s)", w.iface, w.subnet.CIDR, desc)
		if isPrimary {
			for _, l := range out.Links {
				if l.Subnet != nil && l.Subnet.ID == w.subnet.ID && strings.EqualFold(l.Mode, mode) {
					primary = &pendingLink{want: w, id: l.ID}
					if p.Get("default_gateway") == "true" {
						gatewayLink = l.ID
					}
				}
			}
		}
	}
	if primary != nil && primary.id != gatewayLink && primary.want.subnet.GatewayIP != nil && *primary.want.subnet.GatewayIP != "" {
		i := ifaceByName(ifaces, primary.want.iface)
		p := url.Values{"link_id": {strconv.Itoa(primary.id)}}
		if err := d.c.call(ctx, http.MethodPost, base+strconv.Itoa(i.ID)+"/", "set_default_gateway", p, nil); err != nil {
			return drivers.Result{}, err
		}
		done.add("default gateway %s via %s", *primary.want.subnet.GatewayIP, primary.want.iface)
	}
	return done.result("networking", id), nil
}

// ensureBond finds or creates the bond of in over parents; a bond of that
// name that differs, and anything else built on the parents, is removed.
func (d *Driver) ensureBond(ctx context.Context, id string, in drivers.Interface, parents []*mInterface, ifaces []mInterface, done *cfgChanges) (*mInterface, []mInterface, error) {
	base := "nodes/" + id + "/interfaces/"
	var pnames []string
	for _, p := range parents {
		pnames = append(pnames, p.Name)
	}
	want := bondParams(in.Link)
	if b := ifaceByName(ifaces, in.Name); b != nil {
		if b.Type == "bond" && sameNames(b.Parents, pnames) && bondMatches(b, want) {
			return b, ifaces, nil
		}
	}
	// Remove what stands in the way: the interface of that name and the
	// bonds, bridges and VLANs on the parents.
	var remove []mInterface
	for _, o := range ifaces {
		if o.Type == "physical" {
			continue
		}
		if o.Name == in.Name || slices.ContainsFunc(o.Parents, func(p string) bool { return slices.Contains(pnames, p) }) {
			remove = append(remove, o)
		}
	}
	for _, o := range remove {
		if err := d.c.call(ctx, http.MethodDelete, base+strconv.Itoa(o.ID)+"/", "", nil, nil); err != nil && !isNotFound(err) {
			return nil, nil, err
		}
		done.add("removed %s interface %s", o.Type, o.Name)
	}
	if len(remove) > 0 {
		if err := d.c.call(ctx, http.MethodGet, base, "", nil, &ifaces); err != nil {
			return nil, nil, err
		}
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
	if err := d.c.call(ctx, http.MethodPost, base, "create_bond", p, &out); err != nil {
		return nil, nil, err
	}
	done.add("bond %s over %s (%s)", in.Name, strings.Join(pnames, ", "), in.Link.BondMode)
	// The parents lost their links: take the bond's answer and keep the rest.
	ifaces = append(ifaces, out)
	return &ifaces[len(ifaces)-1], ifaces, nil
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
	have, _ := b.Params.(map[string]any)
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
