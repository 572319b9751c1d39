package maas

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// What a dry run of a configuration step (a plan) makes of the writes it
// skips: the object MAAS would have answered, so that the steps after
// are planned on the state the writes would leave.

// The ops of a drivers.PlannedChange; opError marks a node whose design
// the machine cannot take (the step would fail: Detail says why).
const (
	opCreate = "create"
	opUpdate = "update"
	opDelete = "delete"
	opError  = "error"
)

// fakeID is a made-up ID for an object a dry run creates (negative, so
// never one of MAAS's).
func (r *netRun) fakeID() int {
	r.fake--
	return r.fake
}

// cloneIfaces copies the interfaces deeply enough for a dry run to
// change them (parents and links) without touching the cached machine.
func cloneIfaces(in []mInterface) []mInterface {
	out := slices.Clone(in)
	for i := range out {
		out[i].Parents = slices.Clone(out[i].Parents)
		out[i].Children = slices.Clone(out[i].Children)
		out[i].Links = slices.Clone(out[i].Links)
	}
	return out
}

// vlanByID is the VLAN of that ID among MAAS's subnets' (nil: unknown).
func (r *netRun) vlanByID(id int) *mVLAN {
	for _, sn := range r.subnets {
		if sn.VLAN != nil && sn.VLAN.ID == id {
			return sn.VLAN
		}
	}
	return nil
}

// updated is target as MAAS leaves it after the PUT put (ifaceUpdate): a
// new VLAN drops the links on the other VLANs' subnets.
func (r *netRun) updated(target *mInterface, put url.Values) mInterface {
	out := *target
	out.Links = slices.Clone(target.Links)
	if v := put.Get("name"); v != "" {
		out.Name = v
	}
	if v := put.Get("vlan"); v != "" {
		id, _ := strconv.Atoi(v)
		out.VLAN = r.vlanByID(id)
		out.Links = slices.DeleteFunc(out.Links, func(l mLink) bool {
			return l.Subnet != nil && (l.Subnet.VLAN == nil || l.Subnet.VLAN.ID != id)
		})
	}
	if v := put.Get("mtu"); v != "" {
		out.MTU, _ = strconv.Atoi(v)
	}
	return out
}

// describeUpdate says what the PUT put changes on target, from what to what.
func (r *netRun) describeUpdate(target *mInterface, put url.Values) string {
	var parts []string
	if v := put.Get("name"); v != "" {
		parts = append(parts, fmt.Sprintf("name %s → %s", target.Name, v))
	}
	if v := put.Get("vlan"); v != "" {
		id, _ := strconv.Atoi(v)
		parts = append(parts, fmt.Sprintf("VLAN %s → %s", vlanText(target.VLAN), vlanText(r.vlanByID(id))))
	}
	if v := put.Get("mtu"); v != "" {
		parts = append(parts, fmt.Sprintf("mtu %d → %s", target.MTU, v))
	}
	return strings.Join(parts, ", ")
}

// bonded is the bond MAAS makes of the parents pnames: on the first
// parent's VLAN (takeParents then does the rest).
func (r *netRun) bonded(in drivers.Interface, pnames []string, params map[string]string) mInterface {
	b := mInterface{ID: r.fakeID(), Name: in.Name, Type: "bond", Parents: slices.Clone(pnames), MTU: in.Link.MTU}
	have := map[string]any{}
	for k, v := range params {
		have[k] = v
	}
	b.Params = paramsOf(have)
	for i := range r.ifaces {
		if !slices.Contains(pnames, r.ifaces[i].Name) {
			continue
		}
		if b.VLAN == nil {
			b.VLAN = r.ifaces[i].VLAN
		}
		if b.MTU == 0 {
			b.MTU = r.ifaces[i].MTU
		}
	}
	return b
}

// takeParents does to the interfaces pnames what MAAS does to the
// parents of a new bond (Interface._update_parents, MAAS 3.x): their
// links cleared, their VLAN the bond's.
func (r *netRun) takeParents(vlan *mVLAN, pnames []string) {
	for i := range r.ifaces {
		if slices.Contains(pnames, r.ifaces[i].Name) {
			r.ifaces[i].Links = nil
			r.ifaces[i].VLAN = vlan
		}
	}
}

// removedIface is ifaces without o and the VLAN interfaces on it (MAAS
// deletes them with it).
func removedIface(ifaces []mInterface, o mInterface) []mInterface {
	return slices.DeleteFunc(ifaces, func(x mInterface) bool {
		return x.ID == o.ID || (x.Type == "vlan" && slices.Contains(x.Parents, o.Name))
	})
}

// linkObject names a link in a plan: the interface and the subnet.
func linkObject(iface string, sn *mSubnet) string {
	if sn == nil {
		return "link " + iface
	}
	return "link " + iface + " " + sn.CIDR
}
