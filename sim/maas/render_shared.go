package maas

import (
	"bytes"
	"slices"
)

// The JSON of the VLANs and subnets that every interface repeats. A
// machine's interface_set renders each interface's VLAN, and each link's
// subnet with its VLAN again: some 40 of an interface's 70 keys, the same
// for every machine on the network. Each VLAN and subnet keeps the JSON
// it was last rendered to together with a copy of what it was rendered
// from, and is rendered again only when that differs: no write needs to
// say it changed one, so no write can forget to.

// vlanJSON is a VLAN's JSON and the VLAN and fabric name it shows.
type vlanJSON struct {
	v      vlan
	fabric string
	json   rawJSON
}

// subnetJSON is a subnet's JSON and the subnet and VLAN JSON it shows.
type subnetJSON struct {
	sn   subnet
	dns  []string
	vlan rawJSON
	json rawJSON
}

// vlanAnswer is renderVLAN(v) as JSON, kept while v and its fabric's name
// are unchanged. Call it under the lock.
func (s *Server) vlanAnswer(v *vlan) any {
	fname := ""
	if f := s.fabrics[v.FabricID]; f != nil {
		fname = f.Name
	}
	s.jsonMu.Lock()
	c := s.vlanJSONs[v.ID]
	s.jsonMu.Unlock()
	if c != nil && c.v == *v && c.fabric == fname {
		if verifyListingCache {
			s.verifyShared("vlan", c.json, s.renderVLAN(v))
		}
		return c.json
	}
	b, err := appendJSON(nil, s.renderVLAN(v))
	if err != nil { // not expected: encoding/json decides
		return s.renderVLAN(v)
	}
	s.jsonMu.Lock()
	if s.vlanJSONs == nil {
		s.vlanJSONs = map[int]*vlanJSON{}
	}
	s.vlanJSONs[v.ID] = &vlanJSON{v: *v, fabric: fname, json: b}
	s.jsonMu.Unlock()
	return rawJSON(b)
}

// subnetAnswer is renderSubnet(sn) as JSON, kept while sn and its VLAN's
// JSON are unchanged. Call it under the lock.
func (s *Server) subnetAnswer(sn *subnet) any {
	var vl rawJSON
	if v := s.vlans[sn.VLANID]; v != nil {
		j, ok := s.vlanAnswer(v).(rawJSON)
		if !ok {
			return s.renderSubnet(sn)
		}
		vl = j
	}
	s.jsonMu.Lock()
	c := s.subnetJSONs[sn.ID]
	s.jsonMu.Unlock()
	if c != nil && sameSubnet(&c.sn, c.dns, sn) && bytes.Equal(c.vlan, vl) {
		if verifyListingCache {
			s.verifyShared("subnet", c.json, s.renderSubnet(sn))
		}
		return c.json
	}
	b, err := appendJSON(nil, s.renderSubnet(sn))
	if err != nil { // not expected: encoding/json decides
		return s.renderSubnet(sn)
	}
	kept := *sn
	kept.DNSServers = nil
	s.jsonMu.Lock()
	if s.subnetJSONs == nil {
		s.subnetJSONs = map[int]*subnetJSON{}
	}
	s.subnetJSONs[sn.ID] = &subnetJSON{sn: kept, dns: slices.Clone(sn.DNSServers), vlan: vl, json: b}
	s.jsonMu.Unlock()
	return rawJSON(b)
}

// sameSubnet tells whether sn is what kept (with its DNS servers dns)
// was.
func sameSubnet(kept *subnet, dns []string, sn *subnet) bool {
	a := *sn
	a.DNSServers = nil
	return a.ID == kept.ID && a.Name == kept.Name && a.CIDR == kept.CIDR && a.VLANID == kept.VLANID &&
		a.GatewayIP == kept.GatewayIP && a.Space == kept.Space && a.Managed == kept.Managed && a.AllowDNS == kept.AllowDNS &&
		a.AllowProxy == kept.AllowProxy && a.RDNSMode == kept.RDNSMode && a.Description == kept.Description &&
		(sn.DNSServers == nil) == (dns == nil) && slices.Equal(sn.DNSServers, dns)
}

// verifyShared checks kept JSON against a fresh rendering (tests:
// verifyListingCache).
func (s *Server) verifyShared(what string, kept rawJSON, fresh map[string]any) {
	b, err := appendJSON(nil, fresh)
	if err == nil && !bytes.Equal(b, kept) {
		listingCacheStale.Add(1)
		s.log.Error().Str("kind", what).Msg("kept VLAN or subnet JSON is stale")
	}
}
