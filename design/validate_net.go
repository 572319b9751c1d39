package design

import (
	"fmt"
	"net/netip"
	"strings"
)

func (v *validator) network(n *Network) {
	name, s := n.Metadata.Name, &n.Spec
	ni := &netInfo{}
	v.nets[name] = ni
	if s.CIDR != "" {
		ni.prefix, ni.ok = v.networkCIDR(name, s)
	}
	if s.VLANPos.Usable() && (s.VLAN < 1 || s.VLAN > 4094) {
		v.r.errorf(RuleVLAN, KindNetwork, name, s.VLANPos, "vlan %d is outside 1..4094; remove it for an untagged network", s.VLAN)
	}
	if !s.MTUPos.Invalid {
		checkMTU(v.r, KindNetwork, name, s.MTUPos, s.MTU)
	}
	if s.Gateway != "" {
		if a, ok := v.inNetwork(KindNetwork, name, name, s.GatewayPos, "gateway", s.Gateway); ok {
			v.useStatic(a, addrUse{KindNetwork, name, s.GatewayPos}, "gateway")
		}
	}
	for i, a := range s.DNS.Servers {
		if _, err := netip.ParseAddr(a); err != nil {
			v.r.errorf(RuleSchema, KindNetwork, name, s.DNS.ServersPos, "dns.servers[%d] %q is not an IP address", i, a)
		}
	}
	for i := range s.Ranges {
		v.networkRange(name, ni, i, &s.Ranges[i])
	}
	for i, rt := range s.Routes {
		if _, err := netip.ParsePrefix(rt.To); err != nil {
			v.r.errorf(RuleCIDR, KindNetwork, name, rt.Pos, "routes[%d].to %q is not a CIDR like 10.30.0.0/16", i, rt.To)
		} else if p, _ := netip.ParsePrefix(rt.To); p.Masked() != p {
			v.r.errorf(RuleCIDR, KindNetwork, name, rt.Pos, "routes[%d].to %q has host bits set; did you mean %s?", i, rt.To, p.Masked())
		}
		v.inNetwork(KindNetwork, name, name, rt.Pos, fmt.Sprintf("routes[%d].via", i), rt.Via)
	}
}

// networkCIDR parses network name's cidr, which must have no host bits.
func (v *validator) networkCIDR(name string, s *NetworkSpec) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(s.CIDR)
	switch {
	case err != nil:
		v.r.errorf(RuleCIDR, KindNetwork, name, s.CIDRPos, "cidr %q does not parse: write an address and prefix length, like 10.20.0.0/24", s.CIDR)
		return netip.Prefix{}, false
	case p.Masked() != p:
		v.r.errorf(RuleCIDR, KindNetwork, name, s.CIDRPos, "cidr %q has host bits set; did you mean %s?", s.CIDR, p.Masked())
		return netip.Prefix{}, false
	}
	return p, true
}

// networkRange checks range i of network name (its ends in the network, in
// order, overlapping none before it) and records it in ni.
func (v *validator) networkRange(name string, ni *netInfo, i int, rg *AddressRange) {
	what := fmt.Sprintf("ranges[%d]", i)
	start, ok1 := v.inNetwork(KindNetwork, name, name, rg.Pos, what+".start", rg.Start)
	end, ok2 := v.inNetwork(KindNetwork, name, name, rg.Pos, what+".end", rg.End)
	if !ok1 || !ok2 {
		return
	}
	if end.Less(start) {
		v.r.errorf(RuleIPRange, KindNetwork, name, rg.Pos, "%s starts at %s after its end %s; swap them", what, start, end)
		return
	}
	for _, o := range ni.ranges {
		if !end.Less(o.start) && !o.end.Less(start) {
			v.r.errorf(RuleIPRange, KindNetwork, name, rg.Pos, "%s %s-%s overlaps the %s range %s-%s at %s", what, start, end, o.typ, o.start, o.end, o.pos)
		}
	}
	ni.ranges = append(ni.ranges, parsedRange{typ: rg.Type, start: start, end: end, pos: rg.Pos})
}

func checkMTU(r *report, kind, name string, pos Pos, mtu int) {
	if mtu < 1280 || mtu > 9216 {
		r.errorf(RuleMTU, kind, name, pos, "mtu %d is outside 1280..9216", mtu)
	}
}

// inNetwork parses an address that must lie inside network netName.
func (v *validator) inNetwork(kind, name, netName string, pos Pos, what, s string) (netip.Addr, bool) {
	if s == "" {
		return netip.Addr{}, false // a missing required field, reported as such
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		v.r.errorf(RuleSchema, kind, name, pos, "%s %q is not an IP address", what, s)
		return netip.Addr{}, false
	}
	ni := v.nets[netName]
	if ni != nil && ni.ok && !ni.prefix.Contains(a) {
		v.r.errorf(RuleIPInNetwork, kind, name, pos, "%s %s is outside network %s (%s)", what, a, netName, ni.prefix)
	}
	return a, true
}

func (v *validator) link(l *NetworkLink) {
	name, s := l.Metadata.Name, &l.Spec
	if !s.MTUPos.Invalid {
		checkMTU(v.r, KindNetworkLink, name, s.MTUPos, s.MTU)
	}
	v.linkNetworks(name, s)
	v.linkTrunking(name, s)
	v.linkBonding(name, s.Bonding)
}

// linkNetworks checks the networks a link carries: they exist, have VLANs
// of their own (only an 802.1q trunk's native network is untagged), and
// MTUs the link can carry.
func (v *validator) linkNetworks(name string, s *NetworkLinkSpec) {
	vlans := map[int]string{}
	for _, nn := range s.AllowedNetworks {
		n := v.d.Networks[nn]
		if n == nil {
			v.r.errorf(RuleReference, KindNetworkLink, name, s.AllowedNetworksPos, "allowedNetworks names Network %q, which does not exist", nn)
			continue
		}
		v.carriers[nn] = append(v.carriers[nn], name)
		switch {
		case n.Spec.VLANPos.Invalid:
			// already a schema error; nothing to compare
		case n.Spec.VLAN == 0 && !n.Spec.VLANPos.IsSet():
			if s.Trunking.Mode == "802.1q" && nn != s.Trunking.NativeNetwork {
				v.r.errorf(RuleTrunking, KindNetworkLink, name, s.AllowedNetworksPos, "network %q has no vlan; on an 802.1q trunk only the nativeNetwork may be untagged", nn)
			}
		case vlans[n.Spec.VLAN] != "":
			v.r.errorf(RuleVLAN, KindNetworkLink, name, s.AllowedNetworksPos, "networks %q and %q share VLAN %d on this link; give each its own VLAN", vlans[n.Spec.VLAN], nn, n.Spec.VLAN)
		default:
			vlans[n.Spec.VLAN] = nn
		}
		if n.Spec.MTU > s.MTU && !n.Spec.MTUPos.Invalid && !s.MTUPos.Invalid {
			v.r.errorf(RuleMTU, KindNetwork, nn, n.Spec.MTUPos, "mtu %d is larger than the mtu %d of NetworkLink %q that carries it", n.Spec.MTU, s.MTU, name)
		}
	}
}

// linkTrunking: several networks, or a native network, need an 802.1q
// trunk, whose native network is one of those carried.
func (v *validator) linkTrunking(name string, s *NetworkLinkSpec) {
	t := s.Trunking
	switch {
	case t.Mode != "802.1q" && len(s.AllowedNetworks) > 1:
		v.r.errorf(RuleTrunking, KindNetworkLink, name, s.AllowedNetworksPos, "the link carries %d networks (%s) without trunking; set trunking.mode: 802.1q or carry one network", len(s.AllowedNetworks), strings.Join(s.AllowedNetworks, ", "))
	case t.Mode != "802.1q" && t.NativeNetwork != "":
		v.r.errorf(RuleTrunking, KindNetworkLink, name, t.Pos, "trunking.nativeNetwork is set but trunking.mode is %s; set mode: 802.1q or remove it", t.Mode)
	case t.NativeNetwork != "" && !contains(s.AllowedNetworks, t.NativeNetwork):
		v.r.errorf(RuleTrunking, KindNetworkLink, name, t.Pos, "trunking.nativeNetwork %q is not in allowedNetworks; add it there", t.NativeNetwork)
	}
}

// linkBonding: bonding options need a bonding mode that uses them; an
// 802.3ad bond's delays are at least its miimon.
func (v *validator) linkBonding(name string, b Bonding) {
	if b.Mode == "disabled" {
		var set []string
		for _, o := range []struct {
			n  string
			on bool
		}{{"hash", b.Hash != ""}, {"lacpRate", b.LACPRate != ""}, {"miimon", b.MIIMon != 0}, {"updelay", b.UpDelay != 0}, {"downdelay", b.DownDelay != 0}} {
			if o.on {
				set = append(set, o.n)
			}
		}
		if len(set) > 0 {
			v.r.errorf(RuleBonding, KindNetworkLink, name, b.Pos, "bonding options %s need a bonding.mode (802.3ad, active-backup or balance-rr)", strings.Join(set, ", "))
		}
		return
	}
	if b.LACPRate != "" && b.Mode != "802.3ad" {
		v.r.errorf(RuleBonding, KindNetworkLink, name, b.Pos, "lacpRate applies only to mode 802.3ad, not %s", b.Mode)
	}
	if b.Mode != "802.3ad" {
		return
	}
	if b.UpDelay != 0 && b.UpDelay < b.MIIMon {
		v.r.errorf(RuleBonding, KindNetworkLink, name, b.Pos, "updelay %d ms is shorter than miimon %d ms; make it at least miimon", b.UpDelay, b.MIIMon)
	}
	if b.DownDelay != 0 && b.DownDelay < b.MIIMon {
		v.r.errorf(RuleBonding, KindNetworkLink, name, b.Pos, "downdelay %d ms is shorter than miimon %d ms; make it at least miimon", b.DownDelay, b.MIIMon)
	}
}

func (v *validator) hardware(h *HardwareProfile) {
	name, s := h.Metadata.Name, &h.Spec
	if s.PXE.Interface != "" {
		if _, ok := s.DeviceAliases[s.PXE.Interface]; !ok {
			v.r.errorf(RuleReference, KindHardwareProfile, name, s.PXE.Pos, "pxe.interface %q is not one of this profile's deviceAliases", s.PXE.Interface)
		}
	}
	if (s.OOB.PortPos != Pos{} || s.OOB.Port != 0) && (s.OOB.Port < 1 || s.OOB.Port > 65535) {
		v.r.errorf(RuleOOB, KindHardwareProfile, name, s.OOB.PortPos, "oob.port %d is not a TCP/UDP port (1..65535)", s.OOB.Port)
	}
	if s.OOB.CipherSuite <= 0 || s.OOB.CipherSuite > 17 {
		v.r.errorf(RuleOOB, KindHardwareProfile, name, s.OOB.CipherSuitePos, "oob.cipherSuite %d is not usable: 0 authenticates nothing and IPMI defines 1..17; use 3 or 17", s.OOB.CipherSuite)
	}
	v.oobFallback(name, &s.OOB)
	v.bios(name, s.BIOS)
	for _, alias := range sortedNames(s.DeviceAliases) {
		da := s.DeviceAliases[alias]
		if da.Bus == "pci" && da.Address != "" && !pciAddrRE.MatchString(da.Address) {
			v.r.errorf(RuleSchema, KindHardwareProfile, name, da.Pos, "deviceAliases.%s: pci address %q must look like 0000:3b:00.0", alias, da.Address)
		}
	}
}
