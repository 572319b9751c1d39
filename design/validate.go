package design

import (
	"fmt"
	"net/netip"
)

// validator runs the validation rules over a built design.
type validator struct {
	r *report
	d *Design
	// nets caches each network's parsed prefix and ranges.
	nets map[string]*netInfo
	// static records the first user of each static address (ip-duplicate).
	static map[netip.Addr]addrUse
	// bmcs records the first user of each BMC address (oob).
	bmcs map[netip.Addr]addrUse
	macs map[string]addrUse
	// carriers maps a network to the links that allow it.
	carriers map[string][]string
}

type addrUse struct {
	kind, name string
	pos        Pos
}

func (u addrUse) String() string { return fmt.Sprintf("%s/%s at %s", u.kind, u.name, u.pos) }

type netInfo struct {
	prefix netip.Prefix
	ok     bool
	ranges []parsedRange
}

type parsedRange struct {
	typ        string
	start, end netip.Addr
	pos        Pos
}

func validate(r *report, d *Design) {
	v := &validator{r: r, d: d, nets: map[string]*netInfo{},
		static: map[netip.Addr]addrUse{}, bmcs: map[netip.Addr]addrUse{},
		macs: map[string]addrUse{}, carriers: map[string][]string{}}
	v.site()
	v.sites()          // sites.go
	v.lifecycle()      // validate_lifecycle.go
	v.reconciliation() // validate_reconcile.go
	v.hardwareTags()   // validate_hardware.go
	for _, n := range sortedNames(d.Networks) {
		v.network(d.Networks[n])
	}
	for _, n := range sortedNames(d.NetworkLinks) {
		v.link(d.NetworkLinks[n])
	}
	for _, n := range sortedNames(d.HardwareProfiles) {
		v.hardware(d.HardwareProfiles[n])
		v.expect(d.HardwareProfiles[n])   // validate_hardware.go
		v.baseline(d.HardwareProfiles[n]) // validate_baseline.go
	}
	v.images() // validate_image.go
	for _, n := range sortedNames(d.HostProfiles) {
		p := d.HostProfiles[n]
		var hw *HardwareProfileSpec
		if h := d.HardwareProfiles[p.Spec.HardwareProfile]; h != nil {
			hw = &h.Spec
		}
		v.host(KindHostProfile, n, &p.Spec.HostSpec, hw)
		v.platformImage(KindHostProfile, n, &p.Spec.Platform, hw, p.Spec.HardwareProfile)
		if c := p.Spec.OOB.Credentials; c != nil {
			v.secretRef(KindHostProfile, n, c.Pos, "oob.credentials.password", c.Password)
		}
	}
	v.fabric() // validate_fabric.go
	targeted := v.bootActions()
	ports := map[string]cabled{}
	for _, n := range sortedNames(d.Nodes) {
		node := d.Nodes[n]
		v.host(KindNode, n, &node.Spec.HostSpec, node.Spec.Hardware)
		v.node(node)
		v.platformImage(KindNode, n, &node.Spec.Platform, node.Spec.Hardware, node.Spec.HardwareProfile)
		v.cabling(node, ports) // validate_hardware.go
		v.constraints(node)
		if !targeted[n] {
			v.r.warnf(RuleNoBootAction, KindNode, n, node.Metadata.Pos,
				"no BootAction targets this node, so nothing confirms its bootstrap; add one or widen a nodeFilter")
		}
	}
}

func (v *validator) site() {
	for _, name := range v.d.SiteNames() {
		v.siteDoc(v.d.SiteNamed(name))
	}
}

func (v *validator) siteDoc(s *Site) {
	name := s.Metadata.Name
	for i, a := range s.Spec.DNS.Servers {
		if _, err := netip.ParseAddr(a); err != nil {
			v.r.errorf(RuleSchema, KindSite, name, s.Spec.DNS.ServersPos, "dns.servers[%d] %q is not an IP address", i, a)
		}
	}
	if k := s.Spec.MAAS.APIKey; k != "" {
		v.secretRef(KindSite, name, s.Spec.MAAS.Pos, "maas.apiKey", k)
	}
	if hp := s.Spec.Defaults.HostProfile; hp != "" && v.d.HostProfiles[hp] == nil {
		v.r.errorf(RuleReference, KindSite, name, s.Spec.Defaults.HostProfilePos, "defaults.hostProfile names HostProfile %q, which does not exist", hp)
	}
}

// secretRef checks a field that must hold a secret reference. The value is
// never repeated in the message.
func (v *validator) secretRef(kind, name string, pos Pos, field, val string) {
	if val == "" {
		return // a missing required field, reported as such
	}
	if _, err := ParseSecretRef(val); err != nil {
		v.r.errorf(RuleSecretRef, kind, name, pos, "%s: %v", field, err)
	}
}

// useStatic records a static address and reports a second use.
func (v *validator) useStatic(a netip.Addr, u addrUse, what string) {
	if first, dup := v.static[a]; dup {
		v.r.errorf(RuleIPDuplicate, u.kind, u.name, u.pos, "%s %s is already used by %s", what, a, first)
		return
	}
	v.static[a] = u
}
