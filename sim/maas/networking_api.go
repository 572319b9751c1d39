package maas

import (
	"fmt"
	"math"
	"math/big"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// routesNetworking registers fabrics, VLANs, subnets, IP ranges, spaces,
// static routes and machine interfaces.
func (s *Server) routesNetworking() {
	// Fabrics.
	s.handle("GET", "/fabrics/", "", (*Server).fabricsRead)
	s.handle("POST", "/fabrics/", "", (*Server).fabricsCreate)
	s.handle("GET", "/fabrics/{id}/", "", s.withFabric((*Server).fabricRead))
	s.handle("PUT", "/fabrics/{id}/", "", s.withFabric((*Server).fabricUpdate))
	s.handle("DELETE", "/fabrics/{id}/", "", s.withFabric((*Server).fabricDelete))
	// VLANs, by (fabric, vid) and by ID (the resource_uri MAAS renders).
	s.handle("GET", "/fabrics/{fabric_id}/vlans/", "", s.withFabric((*Server).vlansRead))
	s.handle("POST", "/fabrics/{fabric_id}/vlans/", "", s.withFabric((*Server).vlansCreate))
	for _, p := range []string{"/fabrics/{fabric_id}/vlans/{vid}/", "/vlans/{vlan_id}/"} {
		s.handle("GET", p, "", s.withVLAN((*Server).vlanRead))
		s.handle("PUT", p, "", s.withVLAN((*Server).vlanUpdate))
		s.handle("DELETE", p, "", s.withVLAN((*Server).vlanDelete))
	}
	// Subnets. "{id}/{prefixlen}" catches an unescaped cidr: specifier.
	s.handle("GET", "/subnets/", "", (*Server).subnetsRead)
	s.handle("POST", "/subnets/", "", (*Server).subnetsCreate)
	for _, p := range []string{"/subnets/{id}/", "/subnets/{id}/{prefixlen}/"} {
		s.handle("GET", p, "", s.withSubnet((*Server).subnetRead))
		s.handle("PUT", p, "", s.withSubnet((*Server).subnetUpdate))
		s.handle("DELETE", p, "", s.withSubnet((*Server).subnetDelete))
		s.handle("GET", p, "statistics", s.withSubnet((*Server).subnetStatistics))
		s.handle("GET", p, "ip_addresses", s.withSubnet((*Server).subnetIPAddresses))
		s.handle("GET", p, "reserved_ip_ranges", s.withSubnet((*Server).subnetReservedRanges))
		s.handle("GET", p, "unreserved_ip_ranges", s.withSubnet((*Server).subnetUnreservedRanges))
	}
	// IP ranges.
	s.handle("GET", "/ipranges/", "", (*Server).ipRangesRead)
	s.handle("POST", "/ipranges/", "", (*Server).ipRangesCreate)
	s.handle("GET", "/ipranges/{id}/", "", s.withIPRange((*Server).ipRangeRead))
	s.handle("PUT", "/ipranges/{id}/", "", s.withIPRange((*Server).ipRangeUpdate))
	s.handle("DELETE", "/ipranges/{id}/", "", s.withIPRange((*Server).ipRangeDelete))
	// Spaces.
	s.handle("GET", "/spaces/", "", (*Server).spacesRead)
	s.handle("POST", "/spaces/", "", (*Server).spacesCreate)
	s.handle("GET", "/spaces/{id}/", "", (*Server).spaceRead)
	s.handle("PUT", "/spaces/{id}/", "", s.withSpace((*Server).spaceUpdate))
	s.handle("DELETE", "/spaces/{id}/", "", s.withSpace((*Server).spaceDelete))
	// Static routes.
	s.handle("GET", "/static-routes/", "", (*Server).staticRoutesRead)
	s.handle("POST", "/static-routes/", "", (*Server).staticRoutesCreate)
	s.handle("GET", "/static-routes/{id}/", "", s.withStaticRoute((*Server).staticRouteRead))
	s.handle("PUT", "/static-routes/{id}/", "", s.withStaticRoute((*Server).staticRouteUpdate))
	s.handle("DELETE", "/static-routes/{id}/", "", s.withStaticRoute((*Server).staticRouteDelete))

	s.routesInterfaces()
}

// ---------------------------------------------------------------------------
// Form helpers: MAAS validates with Django forms and answers 400 with a JSON
// object of field errors ("__all__" for errors of the whole form).

type fieldErrors map[string][]string

func (e fieldErrors) add(field, format string, args ...any) {
	e[field] = append(e[field], fmt.Sprintf(format, args...))
}

func (e fieldErrors) err() *apiError {
	if len(e) == 0 {
		return nil
	}
	return &apiError{status: http.StatusBadRequest, fields: e}
}

const (
	msgRequired      = "This field is required."
	msgInvalidModel  = "Select a valid choice. That choice is not one of the available choices."
	msgInvalidIP     = "Enter a valid IPv4 or IPv6 address."
	msgInvalidNumber = "Enter a whole number."
)

func msgInvalidChoice(v string) string {
	return fmt.Sprintf("Select a valid choice. %s is not one of the available choices.", v)
}

// msgInvalidChoiceOf is MAAS's compose_invalid_choice_text.
func msgInvalidChoiceOf(v, what string, choices []string) string {
	q := make([]string, len(choices))
	for i, c := range choices {
		q[i] = "'" + c + "'"
	}
	return fmt.Sprintf("'%s' is not a valid %s.  It should be one of: %s.", v, what, strings.Join(q, ", "))
}

// intField parses an optional integer field; ok is false when the field is
// absent, blank or invalid (invalid values record an error).
func intField(errs fieldErrors, f formValues, key string, min, max int) (int, bool) {
	if !f.has(key) {
		return 0, false
	}
	v := strings.TrimSpace(f.get(key))
	if v == "" {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		errs.add(key, msgInvalidNumber)
		return 0, false
	}
	if n < min {
		errs.add(key, "Ensure this value is greater than or equal to %d.", min)
		return 0, false
	}
	if n > max {
		errs.add(key, "Ensure this value is less than or equal to %d.", max)
		return 0, false
	}
	return n, true
}

// formBool is Django's BooleanField: "false", "0" and "" are false.
func formBool(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "false", "0", "":
		return false
	}
	return true
}

func parseAddr(v string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.TrimSpace(v))
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// parseCIDR parses and normalises a network as MAAS stores it; msg is the
// validation error.
func parseCIDR(v string) (netip.Prefix, string) {
	v = strings.TrimSpace(v)
	var p netip.Prefix
	var err error
	if strings.Contains(v, "/") {
		p, err = netip.ParsePrefix(v)
	} else {
		var a netip.Addr
		a, err = netip.ParseAddr(v)
		if err == nil {
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
	}
	if err != nil {
		return netip.Prefix{}, "Required format: <network>/<prefixlen>."
	}
	if p.Bits() == 0 {
		return netip.Prefix{}, "Prefix length must be greater than 0."
	}
	return p.Masked(), ""
}

func mustPrefix(cidr string) netip.Prefix {
	p, _ := parseCIDR(cidr)
	return p
}

// idOf parses a numeric path or form ID.
func idOf(v string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return n, err == nil
}

// ---------------------------------------------------------------------------
// Fabrics.

type fabricHandler func(s *Server, f *fabric, req *request) (any, *apiError)

// withFound runs fn on the object find picks out of the request, under
// the server's lock; when there is none, the answer is MAAS's 404 naming
// what.
func withFound[T any](what string, find func(s *Server, req *request) *T, fn func(*Server, *T, *request) (any, *apiError)) handler {
	return func(s *Server, req *request) (any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		o := find(s, req)
		if o == nil {
			return nil, notFound(what)
		}
		return fn(s, o, req)
	}
}

// renderedByID renders every object of objs, in the order of their IDs.
func renderedByID[T any](objs map[int]*T, render func(*T) map[string]any) []any {
	out := []any{}
	for _, id := range sortedIntKeys(objs) {
		out = append(out, render(objs[id]))
	}
	return out
}

// byID is the object of objs the request's {id} names.
func byID[T any](objs map[int]*T, req *request) *T {
	n, ok := idOf(req.params["id"])
	if !ok {
		return nil
	}
	return objs[n]
}

func (s *Server) withFabric(fn fabricHandler) handler {
	return withFound("Fabric", func(s *Server, req *request) *fabric {
		spec := req.params["id"]
		if spec == "" {
			spec = req.params["fabric_id"]
		}
		return s.findFabric(spec)
	}, fn)
}

// findBySpec resolves a MAAS object specifier among objects kept by ID
// that have a name: an ID, a name, "id:N" or "name:X" (a bare number that
// is no object's ID may still be a name).
func findBySpec[T any](objs map[int]*T, name func(*T) string, spec string) *T {
	key, val, ok := strings.Cut(spec, ":")
	if !ok {
		key, val = "", spec
	}
	if key == "" || key == "id" {
		if n, ok := idOf(val); ok {
			if o := objs[n]; o != nil {
				return o
			}
			if key == "id" {
				return nil
			}
		}
	}
	if key == "" || key == "name" {
		for _, o := range objs {
			if name(o) == val {
				return o
			}
		}
	}
	return nil
}

// findFabric resolves a fabric specifier: an ID, a name, "id:" or "name:".
func (s *Server) findFabric(spec string) *fabric {
	return findBySpec(s.fabrics, func(o *fabric) string { return o.Name }, spec)
}

func (s *Server) fabricVLANs(fabricID int) []*vlan {
	var out []*vlan
	for _, v := range s.vlans {
		if v.FabricID == fabricID {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (s *Server) defaultVLAN(fabricID int) *vlan {
	for _, v := range s.fabricVLANs(fabricID) {
		if v.VID == 0 {
			return v
		}
	}
	return nil
}

func (s *Server) renderFabric(f *fabric) map[string]any {
	vlans := []any{}
	for _, v := range s.fabricVLANs(f.ID) {
		vlans = append(vlans, s.renderVLAN(v))
	}
	return map[string]any{"id": f.ID, "name": f.Name, "class_type": nilIfEmpty(f.ClassType), "vlans": vlans,
		"resource_uri": uri("/fabrics/%d/", f.ID)}
}

func (s *Server) fabricsRead(_ *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return renderedByID(s.fabrics, s.renderFabric), nil
}

// newObjectID hands out an ID not yet taken in one of the maps keyed by ID.
func (s *Server) newObjectID(taken func(int) bool) int {
	for {
		id := s.nextID()
		if !taken(id) {
			return id
		}
	}
}

func (s *Server) fabricNameTaken(name string, except int) bool {
	for _, f := range s.fabrics {
		if f.Name == name && f.ID != except {
			return true
		}
	}
	return false
}

func (s *Server) fabricsCreate(req *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := fieldErrors{}
	name := strings.TrimSpace(req.form.get("name"))
	if name != "" && s.fabricNameTaken(name, -1) {
		errs.add("name", "Fabric with this Name already exists.")
	}
	if e := errs.err(); e != nil {
		return nil, e
	}
	f := &fabric{ID: s.newObjectID(func(id int) bool { return s.fabrics[id] != nil }), Name: name, ClassType: req.form.get("class_type")}
	if f.Name == "" {
		f.Name = fmt.Sprintf("fabric-%d", f.ID)
	}
	s.fabrics[f.ID] = f
	v := &vlan{ID: s.newObjectID(func(id int) bool { return s.vlans[id] != nil }), FabricID: f.ID, VID: 0, Name: "untagged", MTU: 1500}
	s.vlans[v.ID] = v
	return s.renderFabric(f), nil
}

func (s *Server) fabricRead(f *fabric, _ *request) (any, *apiError) { return s.renderFabric(f), nil }

func (s *Server) fabricUpdate(f *fabric, req *request) (any, *apiError) {
	errs := fieldErrors{}
	name, setName := strings.TrimSpace(req.form.get("name")), req.form.has("name")
	if setName && name != "" && s.fabricNameTaken(name, f.ID) {
		errs.add("name", "Fabric with this Name already exists.")
	}
	if e := errs.err(); e != nil {
		return nil, e
	}
	if setName {
		if name == "" {
			name = fmt.Sprintf("fabric-%d", f.ID)
		}
		f.Name = name
	}
	if req.form.has("class_type") {
		f.ClassType = req.form.get("class_type")
	}
	return s.renderFabric(f), nil
}

func (s *Server) fabricDelete(f *fabric, _ *request) (any, *apiError) {
	if f.ID == 0 {
		return nil, errorf(http.StatusBadRequest, "This fabric is the default fabric, it cannot be deleted.")
	}
	var cidrs []string
	for _, id := range sortedIntKeys(s.subnets) {
		if v := s.vlans[s.subnets[id].VLANID]; v != nil && v.FabricID == f.ID {
			cidrs = append(cidrs, s.subnets[id].CIDR)
		}
	}
	if len(cidrs) > 0 {
		return nil, errorf(http.StatusBadRequest, "Can't delete fabric; the following subnets are still present: %s", strings.Join(cidrs, ", "))
	}
	var connected []string
	for _, m := range sortedMachines(s.machines) {
		for _, i := range m.Interfaces {
			if v := s.vlans[i.VLANID]; v != nil && v.FabricID == f.ID {
				connected = append(connected, fmt.Sprintf("%s (%s) on %s", i.Name, i.Type, m.Hostname))
			}
		}
	}
	if len(connected) > 0 {
		sort.Strings(connected)
		return nil, errorf(http.StatusBadRequest, "Can't delete fabric; the following interfaces are still connected: %s", strings.Join(connected, ", "))
	}
	for _, v := range s.fabricVLANs(f.ID) {
		delete(s.vlans, v.ID)
	}
	delete(s.fabrics, f.ID)
	return nil, nil
}

// ---------------------------------------------------------------------------
// VLANs.

type vlanHandler func(s *Server, v *vlan, req *request) (any, *apiError)

func (s *Server) withVLAN(fn vlanHandler) handler {
	return func(s *Server, req *request) (any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if id, ok := req.params["vlan_id"]; ok {
			n, _ := idOf(id)
			v := s.vlans[n]
			if v == nil {
				return nil, errorf(http.StatusNotFound, "VLAN with specified ID does not exist.")
			}
			return fn(s, v, req)
		}
		f := s.findFabric(req.params["fabric_id"])
		if f == nil {
			return nil, notFound("Fabric")
		}
		v := s.findVLAN(f.ID, req.params["vid"])
		if v == nil {
			return nil, notFound("VLAN")
		}
		return fn(s, v, req)
	}
}

// findVLAN resolves a VLAN specifier within a fabric: a VID, "untagged", a
// name, or "vid:", "name:", "id:".
func (s *Server) findVLAN(fabricID int, spec string) *vlan {
	key, val, ok := strings.Cut(spec, ":")
	if !ok {
		key, val = "", spec
	}
	for _, v := range s.fabricVLANs(fabricID) {
		switch key {
		case "", "vid":
			if val == "untagged" && v.VID == 0 {
				return v
			}
			if n, ok := idOf(val); ok {
				if n == v.VID {
					return v
				}
				continue
			}
			if key == "" && v.Name == val {
				return v
			}
		case "name":
			if v.Name == val {
				return v
			}
		case "id":
			if n, ok := idOf(val); ok && n == v.ID {
				return v
			}
		}
	}
	return nil
}

func (s *Server) vlansRead(f *fabric, _ *request) (any, *apiError) {
	out := []any{}
	for _, v := range s.fabricVLANs(f.ID) {
		out = append(out, s.renderVLAN(v))
	}
	return out, nil
}

func (s *Server) vlansCreate(f *fabric, req *request) (any, *apiError) {
	v := &vlan{FabricID: f.ID, VID: -1, MTU: 1500}
	if !req.form.has("vid") || strings.TrimSpace(req.form.get("vid")) == "" {
		errs := fieldErrors{}
		errs.add("vid", msgRequired)
		return nil, errs.err()
	}
	if e := s.applyVLANForm(v, req.form, true); e != nil {
		return nil, e
	}
	v.ID = s.newObjectID(func(id int) bool { return s.vlans[id] != nil })
	s.vlans[v.ID] = v
	return s.renderVLAN(v), nil
}

// vlanForm is a VLAN form read and checked; each has* tells whether the
// form set that field validly.
type vlanForm struct {
	vid, mtu             int
	name, space, primary string
	dhcpOn               bool
	hasVID, hasMTU       bool
	hasName, hasSpace    bool
	hasPrimary, hasDHCP  bool
}

// applyVLANForm validates the VLAN form and applies it to v (not yet
// registered when creating).
func (s *Server) applyVLANForm(v *vlan, f formValues, creating bool) *apiError {
	errs := fieldErrors{}
	var vf vlanForm
	vf.vid, vf.hasVID = s.vlanVIDField(errs, v, f, creating)
	vf.mtu, vf.hasMTU = intField(errs, f, "mtu", 552, 65535)
	vf.name, vf.hasName = strings.TrimSpace(f.get("name")), f.has("name")
	if vf.hasName && vf.name != "" && strings.Trim(vf.name, " _-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
		errs.add("name", "Enter a valid value.")
		vf.hasName = false
	}
	vf.space, vf.hasSpace = s.vlanSpaceField(errs, f)
	vf.primary, vf.hasPrimary = strings.TrimSpace(f.get("primary_rack")), f.has("primary_rack")
	if vf.hasPrimary && vf.primary != "" && vf.primary != s.rackID {
		errs.add("primary_rack", msgInvalidModel)
		vf.hasPrimary = false
	}
	if r := strings.TrimSpace(f.get("relay_vlan")); f.has("relay_vlan") && r != "" {
		if n, ok := idOf(r); !ok || s.vlans[n] == nil || s.vlans[n] == v {
			errs.add("relay_vlan", msgInvalidModel)
		}
	}
	vf.dhcpOn, vf.hasDHCP = formBool(f.get("dhcp_on")), f.has("dhcp_on")
	if vf.hasDHCP && vf.dhcpOn {
		s.checkVLANDHCP(errs, v, vf)
	}
	if e := errs.err(); e != nil {
		return e
	}
	s.applyVLANValues(v, vf)
	return nil
}

// vlanVIDField reads the VLAN's new vid: 0 to 4094, not the default VLAN's
// changed, not another's on the fabric.
func (s *Server) vlanVIDField(errs fieldErrors, v *vlan, f formValues, creating bool) (int, bool) {
	vid, hasVID := intField(errs, f, "vid", math.MinInt, math.MaxInt)
	if !hasVID {
		return 0, false
	}
	if vid < 0 || vid > 4094 {
		errs.add("vid", "VID must be between 0 and 4094.")
		return 0, false
	}
	if !creating && v.VID == 0 && vid != 0 {
		errs.add("vid", "Cannot change the VID of the default VLAN of a fabric.")
		return 0, false
	}
	for _, o := range s.fabricVLANs(v.FabricID) {
		if o != v && o.VID == vid {
			errs.add("__all__", "VLAN with this Vid and Fabric already exists.")
			return 0, false
		}
	}
	return vid, true
}

// vlanSpaceField reads the VLAN's space: a space's name, or "" for none
// ("" and "undefined" in the form).
func (s *Server) vlanSpaceField(errs fieldErrors, f formValues) (string, bool) {
	if !f.has("space") {
		return "", false
	}
	sp := strings.TrimSpace(f.get("space"))
	if sp == "" || sp == "undefined" {
		return "", true
	}
	if o := s.findSpace(sp); o != nil {
		return o.Name, true
	}
	errs.add("space", msgInvalidModel)
	return "", false
}

// checkVLANDHCP: DHCP turns on only with a primary rack and a dynamic range.
func (s *Server) checkVLANDHCP(errs fieldErrors, v *vlan, vf vlanForm) {
	rack := v.Primary
	if vf.hasPrimary {
		rack = vf.primary
	}
	if rack == "" {
		errs.add("__all__", "dhcp can only be turned on when a primary rack controller is set.")
	} else if !s.vlanHasDynamicRange(v) {
		errs.add("dhcp_on", "dhcp can only be turned on when a dynamic IP range is defined.")
	}
}

// applyVLANValues applies a checked VLAN form to v. A VLAN named after its vid
// (or not named) follows a new vid.
func (s *Server) applyVLANValues(v *vlan, vf vlanForm) {
	if vf.hasVID {
		autoName := v.Name == "" || v.Name == strconv.Itoa(v.VID)
		v.VID = vf.vid
		if autoName && !vf.hasName && vf.vid != 0 {
			v.Name = strconv.Itoa(vf.vid)
		}
	}
	if vf.hasName {
		v.Name = vf.name
	}
	if v.Name == "" {
		if v.VID == 0 {
			v.Name = "untagged"
		} else {
			v.Name = strconv.Itoa(v.VID)
		}
	}
	if vf.hasMTU {
		v.MTU = vf.mtu
		s.vlanMTUChanged(v)
	}
	if vf.hasSpace {
		v.Space = vf.space
		s.syncSubnetSpaces()
	}
	if vf.hasPrimary {
		v.Primary = vf.primary
	}
	if vf.hasDHCP {
		v.DHCPOn = vf.dhcpOn
	}
}

func (s *Server) vlanHasDynamicRange(v *vlan) bool {
	for _, r := range s.ipRanges {
		if sn := s.subnets[r.SubnetID]; sn != nil && sn.VLANID == v.ID && r.Type == "dynamic" {
			return true
		}
	}
	return false
}

// vlanMTUChanged carries a VLAN's MTU to the interfaces on it that have no
// MTU of their own (their effective MTU is the VLAN's).
func (s *Server) vlanMTUChanged(v *vlan) {
	for _, m := range s.machines {
		for _, i := range m.Interfaces {
			if i.VLANID == v.ID {
				if _, own := i.Params["mtu"]; !own {
					i.MTU = v.MTU
				}
			}
		}
	}
}

func (s *Server) vlanRead(v *vlan, _ *request) (any, *apiError) { return s.renderVLAN(v), nil }

func (s *Server) vlanUpdate(v *vlan, req *request) (any, *apiError) {
	if e := s.applyVLANForm(v, req.form, false); e != nil {
		return nil, e
	}
	return s.renderVLAN(v), nil
}

func (s *Server) vlanDelete(v *vlan, _ *request) (any, *apiError) {
	def := s.defaultVLAN(v.FabricID)
	if v.VID == 0 || def == nil || def == v {
		return nil, errorf(http.StatusBadRequest, "This VLAN is the default VLAN in the fabric, it cannot be deleted.")
	}
	// VLAN interfaces on it go; other interfaces and subnets move to the
	// fabric's default VLAN.
	for _, m := range s.machines {
		var gone []*iface
		for _, i := range m.Interfaces {
			if i.VLANID != v.ID {
				continue
			}
			if i.Type == "vlan" {
				gone = append(gone, i)
			} else {
				i.VLANID = def.ID
			}
		}
		for _, i := range gone {
			s.removeInterface(m, i)
		}
	}
	for _, sn := range s.subnets {
		if sn.VLANID == v.ID {
			sn.VLANID = def.ID
		}
	}
	delete(s.vlans, v.ID)
	s.syncSubnetSpaces()
	return nil, nil
}

// ---------------------------------------------------------------------------
// Spaces. A VLAN is in a space (by name); a subnet is in its VLAN's space.

type spaceHandler func(s *Server, sp *space, req *request) (any, *apiError)

func (s *Server) withSpace(fn spaceHandler) handler {
	return withFound("Space", func(s *Server, req *request) *space { return s.findSpace(req.params["id"]) }, fn)
}

func (s *Server) findSpace(spec string) *space {
	return findBySpec(s.spaces, func(o *space) string { return o.Name }, spec)
}

// syncSubnetSpaces puts every subnet in its VLAN's space.
func (s *Server) syncSubnetSpaces() {
	for _, sn := range s.subnets {
		sn.Space = ""
		if v := s.vlans[sn.VLANID]; v != nil {
			sn.Space = v.Space
		}
	}
}

// renderSpace renders a space; name "" is the undefined pseudo-space (id -1).
func (s *Server) renderSpace(id int, name string) map[string]any {
	vlans, subnets := []any{}, []any{}
	for _, vid := range sortedIntKeys(s.vlans) {
		if s.vlans[vid].Space == name {
			vlans = append(vlans, s.renderVLAN(s.vlans[vid]))
		}
	}
	for _, sid := range sortedIntKeys(s.subnets) {
		if v := s.vlans[s.subnets[sid].VLANID]; v != nil && v.Space == name {
			subnets = append(subnets, s.renderSubnet(s.subnets[sid]))
		}
	}
	if name == "" {
		name = "undefined"
	}
	return map[string]any{"id": id, "name": name, "vlans": vlans, "subnets": subnets, "resource_uri": uri("/spaces/%d/", id)}
}

func (s *Server) spacesRead(_ *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []any{}
	for _, id := range sortedIntKeys(s.spaces) {
		out = append(out, s.renderSpace(id, s.spaces[id].Name))
	}
	return append(out, s.renderSpace(-1, "")), nil
}

func (s *Server) spaceNameError(errs fieldErrors, name string, except int) {
	if name == "undefined" {
		errs.add("name", "Space name 'undefined' is reserved.")
		return
	}
	if strings.Trim(name, "_-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != "" {
		errs.add("name", "Enter a valid value.")
		return
	}
	for _, o := range s.spaces {
		if o.Name == name && o.ID != except {
			errs.add("name", "Space with this Name already exists.")
			return
		}
	}
}

func (s *Server) spacesCreate(req *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := fieldErrors{}
	name := strings.TrimSpace(req.form.get("name"))
	if name != "" {
		s.spaceNameError(errs, name, -1)
	}
	if e := errs.err(); e != nil {
		return nil, e
	}
	sp := &space{ID: s.newObjectID(func(id int) bool { return s.spaces[id] != nil }), Name: name}
	if sp.Name == "" {
		sp.Name = fmt.Sprintf("space-%d", sp.ID)
	}
	s.spaces[sp.ID] = sp
	return s.renderSpace(sp.ID, sp.Name), nil
}

func (s *Server) spaceRead(req *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id := req.params["id"]; id == "-1" || id == "undefined" {
		return s.renderSpace(-1, ""), nil
	}
	sp := s.findSpace(req.params["id"])
	if sp == nil {
		return nil, notFound("Space")
	}
	return s.renderSpace(sp.ID, sp.Name), nil
}

func (s *Server) spaceUpdate(sp *space, req *request) (any, *apiError) {
	if req.form.has("name") {
		errs := fieldErrors{}
		name := strings.TrimSpace(req.form.get("name"))
		if name == "" {
			name = fmt.Sprintf("space-%d", sp.ID)
		}
		s.spaceNameError(errs, name, sp.ID)
		if e := errs.err(); e != nil {
			return nil, e
		}
		for _, v := range s.vlans {
			if v.Space == sp.Name {
				v.Space = name
			}
		}
		sp.Name = name
		s.syncSubnetSpaces()
	}
	return s.renderSpace(sp.ID, sp.Name), nil
}

func (s *Server) spaceDelete(sp *space, _ *request) (any, *apiError) {
	for _, v := range s.vlans {
		if v.Space == sp.Name {
			v.Space = ""
		}
	}
	delete(s.spaces, sp.ID)
	s.syncSubnetSpaces()
	return nil, nil
}

// ---------------------------------------------------------------------------
// Subnets.

type subnetHandler func(s *Server, sn *subnet, req *request) (any, *apiError)

func (s *Server) withSubnet(fn subnetHandler) handler {
	return withFound("Subnet", func(s *Server, req *request) *subnet {
		spec := req.params["id"]
		if pl, ok := req.params["prefixlen"]; ok {
			spec += "/" + pl
		}
		return s.findSubnet(spec)
	}, fn)
}

// findSubnet resolves a subnet specifier: an ID, a CIDR, a name, or
// "id:", "cidr:", "name:", "ip:" (the subnet that holds the address).
func (s *Server) findSubnet(spec string) *subnet {
	spec = strings.TrimSpace(spec)
	key, val, ok := strings.Cut(spec, ":")
	if !ok || !subnetSpecKeys[key] {
		key, val = "", spec
	}
	if key == "" || key == "id" {
		if n, ok := idOf(val); ok {
			if sn := s.subnets[n]; sn != nil || key == "id" {
				return sn
			}
		}
		if key == "id" {
			return nil
		}
	}
	if key == "" || key == "cidr" {
		if sn := s.subnetWithCIDR(val); sn != nil || key == "cidr" {
			return sn
		}
	}
	if key == "ip" {
		if a, ok := parseAddr(val); ok {
			return s.bestSubnetFor(a)
		}
		return nil
	}
	for _, id := range sortedIntKeys(s.subnets) {
		if s.subnets[id].Name == val {
			return s.subnets[id]
		}
	}
	return nil
}

// subnetSpecKeys are the prefixes of MAAS's subnet specifiers; the
// simulator takes "vlan:" but looks its value up among the names.
var subnetSpecKeys = map[string]bool{"id": true, "cidr": true, "name": true, "ip": true, "vlan": true}

// subnetWithCIDR is the subnet whose CIDR is v (an address/length), or nil.
func (s *Server) subnetWithCIDR(v string) *subnet {
	p, msg := parseCIDR(v)
	if msg != "" || !strings.Contains(v, "/") {
		return nil
	}
	for _, id := range sortedIntKeys(s.subnets) {
		if s.subnets[id].CIDR == p.String() {
			return s.subnets[id]
		}
	}
	return nil
}

// bestSubnetFor is the most specific subnet holding a.
func (s *Server) bestSubnetFor(a netip.Addr) *subnet {
	var best *subnet
	bits := -1
	for _, id := range sortedIntKeys(s.subnets) {
		sn := s.subnets[id]
		p := mustPrefix(sn.CIDR)
		if p.Contains(a) && p.Bits() > bits {
			best, bits = sn, p.Bits()
		}
	}
	return best
}

// subnetString is how MAAS names a subnet in messages.
func (s *Server) subnetString(sn *subnet) string {
	vid := 0
	if v := s.vlans[sn.VLANID]; v != nil {
		vid = v.VID
	}
	return fmt.Sprintf("%s:%s(vid=%d)", sn.Name, sn.CIDR, vid)
}

func (s *Server) vlanString(v *vlan) string {
	fname := ""
	if f := s.fabrics[v.FabricID]; f != nil {
		fname = f.Name
	}
	return fname + "." + v.Name
}

func (s *Server) subnetsRead(_ *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return renderedByID(s.subnets, s.renderSubnet), nil
}

func (s *Server) subnetsCreate(req *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := &subnet{RDNSMode: 2, Managed: true, AllowDNS: true, AllowProxy: true}
	if e := s.applySubnetForm(sn, req.form, true); e != nil {
		return nil, e
	}
	sn.ID = s.newObjectID(func(id int) bool { return s.subnets[id] != nil })
	s.subnets[sn.ID] = sn
	s.syncSubnetSpaces()
	return s.renderSubnet(sn), nil
}

func (s *Server) applySubnetForm(sn *subnet, f formValues, creating bool) *apiError {
	errs := fieldErrors{}
	if f.has("space") {
		errs.add("space", "Spaces may no longer be set on subnets. Set the space on the underlying VLAN.")
	}
	cidr := s.subnetCIDRField(errs, sn, f, creating)
	vlanID := s.subnetVLANField(errs, sn, f, creating)
	gw := subnetGatewayField(errs, sn.GatewayIP, cidr, f)
	dns, hasDNS := subnetDNSField(errs, sn.DNSServers, f)
	rdns, hasRDNS := sn.RDNSMode, false
	if v := strings.TrimSpace(f.get("rdns_mode")); f.has("rdns_mode") && v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 0 || n > 2 {
			errs.add("rdns_mode", "%s", msgInvalidChoice(v))
		} else {
			rdns, hasRDNS = n, true
		}
	}
	if e := errs.err(); e != nil {
		return e
	}
	oldCIDR := sn.CIDR
	sn.CIDR, sn.VLANID, sn.GatewayIP = cidr, vlanID, gw
	if hasDNS {
		sn.DNSServers = dns
	}
	if hasRDNS {
		sn.RDNSMode = rdns
	}
	if name := strings.TrimSpace(f.get("name")); name != "" {
		sn.Name = name
	} else if creating || sn.Name == "" || sn.Name == oldCIDR {
		sn.Name = cidr
	}
	applySubnetFlags(sn, f)
	return nil
}

// applySubnetFlags sets the subnet's description and flags the form names.
func applySubnetFlags(sn *subnet, f formValues) {
	if f.has("description") {
		sn.Description = f.get("description")
	}
	// MAAS reads allow_dns and allow_proxy as true unless told otherwise.
	if f.has("allow_dns") {
		sn.AllowDNS = subnetTruthy(f.get("allow_dns"))
	}
	if f.has("allow_proxy") {
		sn.AllowProxy = subnetTruthy(f.get("allow_proxy"))
	}
	if f.has("managed") {
		sn.Managed = formBool(f.get("managed"))
	}
}

// subnetCIDRField is the subnet's CIDR after the form ("" when the form's
// is missing or wrong, with the error added).
func (s *Server) subnetCIDRField(errs fieldErrors, sn *subnet, f formValues, creating bool) string {
	if !f.has("cidr") && !creating {
		return sn.CIDR
	}
	v := strings.TrimSpace(f.get("cidr"))
	if v == "" {
		errs.add("cidr", msgRequired)
		return ""
	}
	p, msg := parseCIDR(v)
	if msg != "" {
		errs.add("cidr", "%s", msg)
		return ""
	}
	cidr := p.String()
	for _, o := range s.subnets {
		if o != sn && o.CIDR == cidr {
			errs.add("cidr", "Subnet with this Cidr already exists.")
			break
		}
	}
	return cidr
}

// subnetVLANField is the subnet's VLAN after the form: "vlan" names it;
// when creating, "fabric" and "vid" are helpers that find it.
func (s *Server) subnetVLANField(errs fieldErrors, sn *subnet, f formValues, creating bool) int {
	var fab *fabric
	if f.has("fabric") && creating {
		if v := strings.TrimSpace(f.get("fabric")); v != "" {
			if fab = s.findFabric(v); fab == nil {
				errs.add("fabric", msgInvalidModel)
			}
		}
	}
	var vl *vlan
	if f.has("vlan") {
		if v := strings.TrimSpace(f.get("vlan")); v != "" {
			n, ok := idOf(v)
			if vl = s.vlans[n]; !ok || vl == nil {
				errs.add("vlan", msgInvalidModel)
				vl = nil
			}
		} else if !creating {
			errs.add("vlan", msgRequired)
		}
	}
	if !creating {
		if vl != nil {
			return vl.ID
		}
		return sn.VLANID
	}
	vid, hasVID := intField(errs, f, "vid", 0, 4094)
	if len(errs["fabric"])+len(errs["vlan"])+len(errs["vid"]) > 0 {
		if vl != nil {
			return vl.ID
		}
		return sn.VLANID
	}
	return s.newSubnetVLAN(errs, sn.VLANID, fab, vl, vid, hasVID)
}

// newSubnetVLAN resolves a new subnet's VLAN from the form's vlan, fabric
// and vid (all valid on their own): the VLAN if named, else the vid's VLAN
// on the fabric (the default fabric when none is named), else the fabric's
// default VLAN.
func (s *Server) newSubnetVLAN(errs fieldErrors, vlanID int, fab *fabric, vl *vlan, vid int, hasVID bool) int {
	switch {
	case vl != nil && fab != nil && vl.FabricID != fab.ID:
		errs.add("vlan", "VLAN %s is not in fabric %s.", s.vlanString(vl), fab.Name)
		return vlanID
	case vl != nil:
		return vl.ID
	}
	fid := 0
	if fab != nil {
		fid = fab.ID
	}
	if !hasVID || vid == 0 {
		if d := s.defaultVLAN(fid); d != nil {
			return d.ID
		}
		return vlanID
	}
	if v := s.findVLAN(fid, strconv.Itoa(vid)); v != nil {
		return v.ID
	}
	if fab == nil {
		errs.add("vid", "No VLAN with vid %d in default fabric.", vid)
	} else {
		errs.add("vid", "No VLAN with vid %d in fabric %s.", vid, fab.Name)
	}
	return vlanID
}

// subnetGatewayField is the subnet's gateway after the form: an address in
// the CIDR (or an IPv6 link-local one), or "" for none.
func subnetGatewayField(errs fieldErrors, gw, cidr string, f formValues) string {
	if f.has("gateway_ip") {
		v := strings.TrimSpace(f.get("gateway_ip"))
		if v == "" {
			gw = ""
		} else if a, ok := parseAddr(v); !ok {
			errs.add("gateway_ip", msgInvalidIP)
		} else {
			gw = a.String()
		}
	}
	if gw != "" && cidr != "" && len(errs["gateway_ip"]) == 0 {
		a, _ := parseAddr(gw)
		p := mustPrefix(cidr)
		if !p.Contains(a) && !(p.Addr().Is6() && a.IsLinkLocalUnicast()) {
			errs.add("gateway_ip", "Gateway IP must be within CIDR range.")
		}
	}
	return gw
}

// subnetDNSField reads dns_servers (repeated, comma- or space-separated);
// the bool tells whether the form named them.
func subnetDNSField(errs fieldErrors, dns []string, f formValues) ([]string, bool) {
	if !f.has("dns_servers") {
		return dns, false
	}
	dns = []string{}
	for _, v := range f["dns_servers"] {
		for _, x := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
			if a, ok := parseAddr(x); ok {
				dns = append(dns, a.String())
			} else {
				errs.add("dns_servers", "Invalid IP address: %s.", x)
			}
		}
	}
	return dns, true
}

// subnetTruthy is how MAAS reads allow_dns and allow_proxy.
func subnetTruthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "t", "1":
		return true
	}
	return false
}

func (s *Server) subnetRead(sn *subnet, _ *request) (any, *apiError) { return s.renderSubnet(sn), nil }

func (s *Server) subnetUpdate(sn *subnet, req *request) (any, *apiError) {
	if e := s.applySubnetForm(sn, req.form, false); e != nil {
		return nil, e
	}
	s.syncSubnetSpaces()
	return s.renderSubnet(sn), nil
}

// subnetDelete deletes the subnet with its IP ranges, static routes and the
// interface links on it (MAAS cascades them).
func (s *Server) subnetDelete(sn *subnet, _ *request) (any, *apiError) {
	for id, r := range s.ipRanges {
		if r.SubnetID == sn.ID {
			delete(s.ipRanges, id)
		}
	}
	for id, r := range s.staticRoutes {
		if r.SourceID == sn.ID || r.Destination == sn.ID {
			delete(s.staticRoutes, id)
		}
	}
	for _, m := range s.machines {
		for _, i := range m.Interfaces {
			kept := i.Links[:0]
			for _, l := range i.Links {
				if l.SubnetID != sn.ID {
					kept = append(kept, l)
				}
			}
			i.Links = kept
		}
	}
	delete(s.subnets, sn.ID)
	return nil, nil
}

// ---------------------------------------------------------------------------
// Address arithmetic for ranges, statistics and allocation.

type ipSpan struct {
	start, end netip.Addr
	purposes   []string
}

func addrInt(a netip.Addr) *big.Int {
	b := a.AsSlice()
	return new(big.Int).SetBytes(b)
}

func spanSize(a, b netip.Addr) *big.Int {
	n := new(big.Int).Sub(addrInt(b), addrInt(a))
	return n.Add(n, big.NewInt(1))
}

func jsonNum(n *big.Int) any {
	if n.IsInt64() {
		return n.Int64()
	}
	return n
}

// lastAddr is the last address of a network.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// usableBounds are the first and last addresses MAAS counts in a subnet: not
// the network address, nor an IPv4 broadcast address.
func usableBounds(p netip.Prefix) (netip.Addr, netip.Addr) {
	first, last := p.Masked().Addr(), lastAddr(p)
	if p.Bits() >= first.BitLen()-1 {
		return first, last
	}
	first = first.Next()
	if first.Is4() {
		last = last.Prev()
	}
	return first, last
}

// reservedSpans are the addresses of a subnet in use or set aside: IP
// ranges, the gateway, DNS servers, assigned addresses; merged and sorted.
func (s *Server) reservedSpans(sn *subnet) []ipSpan {
	p := mustPrefix(sn.CIDR)
	first, last := usableBounds(p)
	var spans []ipSpan
	addSpan := func(a, b netip.Addr, purpose string) {
		if b.Less(first) || last.Less(a) {
			return
		}
		if a.Less(first) {
			a = first
		}
		if last.Less(b) {
			b = last
		}
		spans = append(spans, ipSpan{a, b, []string{purpose}})
	}
	for _, r := range s.ipRanges {
		if r.SubnetID == sn.ID {
			a, _ := parseAddr(r.StartIP)
			b, _ := parseAddr(r.EndIP)
			addSpan(a, b, r.Type)
		}
	}
	if a, ok := parseAddr(sn.GatewayIP); ok {
		addSpan(a, a, "gateway-ip")
	}
	for _, d := range sn.DNSServers {
		if a, ok := parseAddr(d); ok && p.Contains(a) {
			addSpan(a, a, "dns-server")
		}
	}
	for _, a := range s.assignedIPs(sn) {
		addSpan(a, a, "assigned-ip")
	}
	return mergeSpans(spans)
}

// mergeSpans sorts spans and merges those that overlap, or touch with the
// same purposes; a merged span has the purposes of all it holds.
func mergeSpans(spans []ipSpan) []ipSpan {
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].start.Less(spans[j].start) })
	var out []ipSpan
	for _, sp := range spans {
		if n := len(out); n > 0 {
			cur := &out[n-1]
			overlap := !cur.end.Less(sp.start)
			adjacent := cur.end.Next() == sp.start && strings.Join(cur.purposes, ",") == strings.Join(sp.purposes, ",")
			if overlap || adjacent {
				if cur.end.Less(sp.end) {
					cur.end = sp.end
				}
				for _, pu := range sp.purposes {
					if !contains(cur.purposes, pu) {
						cur.purposes = append(cur.purposes, pu)
					}
				}
				continue
			}
		}
		out = append(out, ipSpan{sp.start, sp.end, append([]string(nil), sp.purposes...)})
	}
	return out
}

// unreservedSpans are the gaps between the reserved spans.
func unreservedSpans(p netip.Prefix, reserved []ipSpan) []ipSpan {
	first, last := usableBounds(p)
	var out []ipSpan
	next, done := first, false
	for _, r := range reserved {
		if next.Less(r.start) {
			out = append(out, ipSpan{next, r.start.Prev(), []string{"unused"}})
		}
		if r.end == last {
			done = true
			break
		}
		next = r.end.Next()
	}
	if !done && !last.Less(next) {
		out = append(out, ipSpan{next, last, []string{"unused"}})
	}
	return out
}

func renderSpans(spans []ipSpan, withPurpose bool) []any {
	out := []any{}
	for _, sp := range spans {
		r := map[string]any{"start": sp.start.String(), "end": sp.end.String(), "num_addresses": jsonNum(spanSize(sp.start, sp.end))}
		if withPurpose {
			r["purpose"] = sp.purposes
		}
		out = append(out, r)
	}
	return out
}

// assignedIPs are the addresses interface links hold on a subnet.
func (s *Server) assignedIPs(sn *subnet) []netip.Addr {
	var out []netip.Addr
	for _, m := range s.machines {
		for _, i := range m.Interfaces {
			for _, l := range i.Links {
				if l.SubnetID == sn.ID && l.IP != "" {
					if a, ok := l.parsedIP(); ok {
						out = append(out, a)
					}
				}
			}
		}
	}
	return out
}

// ipInUseScan reports whether an interface link holds the address, by
// looking at every link of every machine (ipInUse asks the index).
func (s *Server) ipInUseScan(a netip.Addr) bool {
	for _, m := range s.machines {
		for _, i := range m.Interfaces {
			for _, l := range i.Links {
				if b, ok := l.parsedIP(); ok && b == a {
					return true
				}
			}
		}
	}
	return false
}

// rangeHolding returns the IP range of a subnet of the given type ("" any)
// that holds the address.
func (s *Server) rangeHolding(sn *subnet, a netip.Addr, typ string) *ipRange {
	for _, id := range sortedIntKeys(s.ipRanges) {
		r := s.ipRanges[id]
		if r.SubnetID != sn.ID || (typ != "" && r.Type != typ) {
			continue
		}
		st, _ := parseAddr(r.StartIP)
		en, _ := parseAddr(r.EndIP)
		if !a.Less(st) && !en.Less(a) {
			return r
		}
	}
	return nil
}

// allocateIP picks a free address for a static or auto link: not in a
// range, not the gateway or a DNS server, not held by a link.
func (s *Server) allocateIP(sn *subnet) (string, bool) {
	p := mustPrefix(sn.CIDR)
	first, last := usableBounds(p)
	used := map[netip.Addr]bool{}
	for _, a := range s.assignedIPs(sn) {
		used[a] = true
	}
	if a, ok := parseAddr(sn.GatewayIP); ok {
		used[a] = true
	}
	for _, d := range sn.DNSServers {
		if a, ok := parseAddr(d); ok {
			used[a] = true
		}
	}
	a := first
	for n := 0; n < 1<<20 && !last.Less(a) && a.IsValid(); n++ {
		if r := s.rangeHolding(sn, a, ""); r != nil {
			end, _ := parseAddr(r.EndIP)
			a = end.Next()
			continue
		}
		if !used[a] && !s.ipInUse(a) {
			return a.String(), true
		}
		a = a.Next()
	}
	return "", false
}

func (s *Server) subnetStatistics(sn *subnet, req *request) (any, *apiError) {
	p := mustPrefix(sn.CIDR)
	first, last := usableBounds(p)
	reserved := s.reservedSpans(sn)
	free := unreservedSpans(p, reserved)
	total := spanSize(first, last)
	unavailable := new(big.Int)
	for _, r := range reserved {
		unavailable.Add(unavailable, spanSize(r.start, r.end))
	}
	available := new(big.Int).Sub(total, unavailable)
	largest := new(big.Int)
	for _, r := range free {
		if n := spanSize(r.start, r.end); n.Cmp(largest) > 0 {
			largest = n
		}
	}
	usage, _ := new(big.Float).Quo(new(big.Float).SetInt(unavailable), new(big.Float).SetInt(total)).Float64()
	out := map[string]any{
		"num_available": jsonNum(available), "largest_available": jsonNum(largest),
		"num_unavailable": jsonNum(unavailable), "total_addresses": jsonNum(total), "usage": usage,
		"usage_string": fmt.Sprintf("%.0f%%", usage*100), "available_string": fmt.Sprintf("%.0f%%", (1-usage)*100),
		"first_address": first.String(), "last_address": last.String(), "ip_version": 4,
	}
	if p.Addr().Is6() {
		out["ip_version"] = 6
	}
	if formBool(req.form.get("include_ranges")) {
		all := append(append([]ipSpan(nil), reserved...), free...)
		sort.Slice(all, func(i, j int) bool { return all[i].start.Less(all[j].start) })
		out["ranges"] = renderSpans(all, true)
	}
	return out, nil
}

func (s *Server) subnetReservedRanges(sn *subnet, _ *request) (any, *apiError) {
	return renderSpans(s.reservedSpans(sn), true), nil
}

func (s *Server) subnetUnreservedRanges(sn *subnet, _ *request) (any, *apiError) {
	return renderSpans(unreservedSpans(mustPrefix(sn.CIDR), s.reservedSpans(sn)), false), nil
}

// subnetIPAddresses lists the addresses assigned on a subnet (IPADDRESS_TYPE:
// AUTO 0, STICKY 1, DHCP 5).
func (s *Server) subnetIPAddresses(sn *subnet, req *request) (any, *apiError) {
	withUser := !req.form.has("with_username") || formBool(req.form.get("with_username"))
	withNode := !req.form.has("with_node_summary") || formBool(req.form.get("with_node_summary"))
	type row struct {
		a netip.Addr
		v map[string]any
	}
	var rows []row
	for _, m := range sortedMachines(s.machines) {
		for _, i := range m.Interfaces {
			for _, l := range i.Links {
				a, ok := parseAddr(l.IP)
				if l.SubnetID != sn.ID || !ok {
					continue
				}
				alloc := 1
				switch l.Mode {
				case "auto":
					alloc = 0
				case "dhcp":
					alloc = 5
				}
				ts := m.Updated.UTC().Format("Mon, 02 Jan. 2006 15:04:05")
				r := map[string]any{"ip": a.String(), "alloc_type": alloc, "created": ts, "updated": ts}
				if withNode {
					r["node_summary"] = map[string]any{"system_id": m.SystemID, "node_type": 0, "fqdn": m.fqdn(),
						"hostname": m.Hostname, "is_container": false, "via": i.Name}
				}
				if withUser && m.Owner != "" {
					r["user"] = m.Owner
				}
				rows = append(rows, row{a, r})
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].a.Less(rows[j].a) })
	out := []any{}
	for _, r := range rows {
		out = append(out, r.v)
	}
	return out, nil
}

// ---------------------------------------------------------------------------
// IP ranges.

type ipRangeHandler func(s *Server, r *ipRange, req *request) (any, *apiError)

func (s *Server) withIPRange(fn ipRangeHandler) handler {
	return withFound("IPRange", func(s *Server, req *request) *ipRange { return byID(s.ipRanges, req) }, fn)
}

func (s *Server) renderUser(name string) any {
	if name == "" {
		return nil
	}
	return map[string]any{"is_superuser": name == s.opts.User, "username": name, "email": name + "@lab.invalid",
		"is_local": true, "resource_uri": uri("/users/%s/", name)}
}

func (s *Server) renderIPRange(r *ipRange) map[string]any {
	var sn any
	if o := s.subnets[r.SubnetID]; o != nil {
		sn = s.renderSubnet(o)
	}
	return map[string]any{"id": r.ID, "type": r.Type, "start_ip": r.StartIP, "end_ip": r.EndIP, "subnet": sn,
		"user": s.renderUser(r.User), "comment": r.Comment, "resource_uri": uri("/ipranges/%d/", r.ID)}
}

func (s *Server) ipRangesRead(_ *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return renderedByID(s.ipRanges, s.renderIPRange), nil
}

func (s *Server) ipRangesCreate(req *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &ipRange{User: req.user}
	if e := s.applyIPRangeForm(r, req.form, true); e != nil {
		return nil, e
	}
	r.ID = s.newObjectID(func(id int) bool { return s.ipRanges[id] != nil })
	s.ipRanges[r.ID] = r
	return s.renderIPRange(r), nil
}

func (s *Server) applyIPRangeForm(r *ipRange, f formValues, creating bool) *apiError {
	errs := fieldErrors{}
	typ := ipRangeTypeField(errs, r.Type, f, creating)
	start, okStart := ipRangeAddrField(errs, f, "start_ip", r.StartIP, creating)
	end, okEnd := ipRangeAddrField(errs, f, "end_ip", r.EndIP, creating)
	sn := s.ipRangeSubnetField(errs, r, f, creating && okStart, start)
	if e := errs.err(); e != nil {
		return e
	}
	// The model's clean(): the first failure is the answer.
	msg, fields := ipRangeBoundsError(typ, start, end, okStart && okEnd, mustPrefix(sn.CIDR))
	if msg == "" && s.ipRangeConflicts(r, sn, typ, start, end) {
		msg = "Requested dynamic range conflicts with an existing IP address or range."
		if typ == "reserved" {
			msg = "Requested reserved range conflicts with an existing range."
		}
	}
	if msg != "" {
		if len(fields) == 0 {
			fields = []string{"start_ip", "end_ip"}
		}
		for _, fl := range fields {
			errs.add(fl, "%s", msg)
		}
		return errs.err()
	}
	r.Type, r.StartIP, r.EndIP, r.SubnetID = typ, start.String(), end.String(), sn.ID
	if f.has("comment") {
		r.Comment = f.get("comment")
	}
	return nil
}

// ipRangeSubnetField is the range's subnet: the form's, else (guess) the
// most specific one holding start.
func (s *Server) ipRangeSubnetField(errs fieldErrors, r *ipRange, f formValues, guess bool, start netip.Addr) *subnet {
	sn := s.subnets[r.SubnetID]
	if v := strings.TrimSpace(f.get("subnet")); f.has("subnet") && v != "" {
		if sn = s.findSubnet(v); sn == nil {
			errs.add("subnet", msgInvalidModel)
		}
	} else if guess {
		sn = s.bestSubnetFor(start)
	}
	if sn == nil && len(errs["subnet"]) == 0 {
		errs.add("subnet", msgRequired)
	}
	return sn
}

// ipRangeTypeField reads the range's type: dynamic or reserved.
func ipRangeTypeField(errs fieldErrors, typ string, f formValues, creating bool) string {
	if !f.has("type") && !creating {
		return typ
	}
	typ = strings.TrimSpace(f.get("type"))
	switch typ {
	case "dynamic", "reserved":
	case "":
		errs.add("type", msgRequired)
	default:
		errs.add("type", "%s", msgInvalidChoice(typ))
	}
	return typ
}

// ipRangeAddrField reads one end of the range (key), cur when the form
// leaves it.
func ipRangeAddrField(errs fieldErrors, f formValues, key, cur string, creating bool) (netip.Addr, bool) {
	v := cur
	if f.has(key) || creating {
		v = strings.TrimSpace(f.get(key))
	}
	if v == "" {
		errs.add(key, msgRequired)
		return netip.Addr{}, false
	}
	a, ok := parseAddr(v)
	if !ok {
		errs.add(key, msgInvalidIP)
	}
	return a, ok
}

// ipRangeBoundsError is the first of MAAS's checks of a range's ends that
// fails, as its message and the fields it names (none: both ends), or "".
func ipRangeBoundsError(typ string, start, end netip.Addr, both bool, p netip.Prefix) (string, []string) {
	switch {
	case !both:
		return "Start IP address and end IP address are both required.", nil
	case start.Is4() != end.Is4():
		return "Start IP address and end IP address must be in the same address family.", nil
	case end.Less(start):
		return "End IP address must not be less than Start IP address.", []string{"end_ip"}
	case !p.Contains(start) && !p.Contains(end):
		return fmt.Sprintf("IP addresses must be within subnet: %s.", p), nil
	case !p.Contains(start):
		return fmt.Sprintf("Start IP address must be within subnet: %s.", p), []string{"start_ip"}
	case !p.Contains(end):
		return fmt.Sprintf("End IP address must be within subnet: %s.", p), []string{"end_ip"}
	case start == p.Masked().Addr():
		return "Reserved network address cannot be included in IP range.", []string{"start_ip"}
	case p.Addr().Is4() && end == lastAddr(p) && p.Bits() < 31:
		return "Broadcast address cannot be included in IP range.", []string{"end_ip"}
	case start.Is6() && typ == "dynamic" && spanSize(start, end).Cmp(big.NewInt(256)) < 0:
		return "IPv6 dynamic range must be at least 256 addresses in size.", nil
	}
	return "", nil
}

// ipRangeConflicts tells whether start-end overlaps another range of the
// subnet or, for a dynamic range, an address in use (the gateway's too).
func (s *Server) ipRangeConflicts(r *ipRange, sn *subnet, typ string, start, end netip.Addr) bool {
	overlaps := func(a, b netip.Addr) bool { return !(b.Less(start) || end.Less(a)) }
	for _, o := range s.ipRanges {
		if o == r || o.SubnetID != sn.ID {
			continue
		}
		a, _ := parseAddr(o.StartIP)
		b, _ := parseAddr(o.EndIP)
		if overlaps(a, b) {
			return true
		}
	}
	if typ != "dynamic" {
		return false
	}
	used := s.assignedIPs(sn)
	if a, ok := parseAddr(sn.GatewayIP); ok {
		used = append(used, a)
	}
	for _, a := range used {
		if overlaps(a, a) {
			return true
		}
	}
	return false
}

func (s *Server) ipRangeRead(r *ipRange, _ *request) (any, *apiError) { return s.renderIPRange(r), nil }

func (s *Server) ipRangeUpdate(r *ipRange, req *request) (any, *apiError) {
	if e := s.applyIPRangeForm(r, req.form, false); e != nil {
		return nil, e
	}
	return s.renderIPRange(r), nil
}

func (s *Server) ipRangeDelete(r *ipRange, _ *request) (any, *apiError) {
	delete(s.ipRanges, r.ID)
	return nil, nil
}

// ---------------------------------------------------------------------------
// Static routes.

type staticRouteHandler func(s *Server, r *staticRoute, req *request) (any, *apiError)

func (s *Server) withStaticRoute(fn staticRouteHandler) handler {
	return withFound("StaticRoute", func(s *Server, req *request) *staticRoute { return byID(s.staticRoutes, req) }, fn)
}

func (s *Server) renderStaticRoute(r *staticRoute) map[string]any {
	var src, dst any
	if sn := s.subnets[r.SourceID]; sn != nil {
		src = s.renderSubnet(sn)
	}
	if sn := s.subnets[r.Destination]; sn != nil {
		dst = s.renderSubnet(sn)
	}
	return map[string]any{"id": r.ID, "source": src, "destination": dst, "gateway_ip": r.GatewayIP, "metric": r.Metric,
		"resource_uri": uri("/static-routes/%d/", r.ID)}
}

func (s *Server) staticRoutesRead(_ *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return renderedByID(s.staticRoutes, s.renderStaticRoute), nil
}

func (s *Server) staticRoutesCreate(req *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &staticRoute{}
	if e := s.applyStaticRouteForm(r, req.form, true); e != nil {
		return nil, e
	}
	r.ID = s.newObjectID(func(id int) bool { return s.staticRoutes[id] != nil })
	s.staticRoutes[r.ID] = r
	return s.renderStaticRoute(r), nil
}

func (s *Server) applyStaticRouteForm(r *staticRoute, f formValues, creating bool) *apiError {
	errs := fieldErrors{}
	src := s.routeSubnetField(errs, f, "source", r.SourceID, creating)
	dst := s.routeSubnetField(errs, f, "destination", r.Destination, creating)
	gw := routeGatewayField(errs, f, r.GatewayIP, creating)
	metric, hasMetric := intField(errs, f, "metric", 0, math.MaxInt32)
	if src != nil && len(errs["gateway_ip"]) == 0 && gw != "" {
		if a, _ := parseAddr(gw); !mustPrefix(src.CIDR).Contains(a) {
			errs.add("gateway_ip", "Enter an IP address in %s.", src.CIDR)
		}
	}
	if e := errs.err(); e != nil {
		return e
	}
	switch {
	case src == dst:
		errs.add("__all__", "source and destination cannot be the same subnet.")
	case mustPrefix(src.CIDR).Addr().Is4() != mustPrefix(dst.CIDR).Addr().Is4():
		errs.add("__all__", "source and destination must be the same IP version.")
	}
	for _, o := range s.staticRoutes {
		if o != r && o.SourceID == src.ID && o.Destination == dst.ID && o.GatewayIP == gw {
			errs.add("__all__", "Static route with this Source, Destination and Gateway IP already exists.")
			break
		}
	}
	if e := errs.err(); e != nil {
		return e
	}
	r.SourceID, r.Destination, r.GatewayIP = src.ID, dst.ID, gw
	if hasMetric {
		r.Metric = metric
	}
	return nil
}

// routeSubnetField reads a static route's source or destination (key):
// the subnet cur when the form leaves it.
func (s *Server) routeSubnetField(errs fieldErrors, f formValues, key string, cur int, creating bool) *subnet {
	if !f.has(key) && !creating {
		return s.subnets[cur]
	}
	v := strings.TrimSpace(f.get(key))
	if v == "" {
		errs.add(key, msgRequired)
		return nil
	}
	sn := s.findSubnet(v)
	if sn == nil {
		errs.add(key, msgInvalidModel)
	}
	return sn
}

// routeGatewayField reads a static route's gateway_ip, gw when the form
// leaves it.
func routeGatewayField(errs fieldErrors, f formValues, gw string, creating bool) string {
	if !f.has("gateway_ip") && !creating {
		return gw
	}
	v := strings.TrimSpace(f.get("gateway_ip"))
	if v == "" {
		errs.add("gateway_ip", msgRequired)
	} else if a, ok := parseAddr(v); !ok {
		errs.add("gateway_ip", msgInvalidIP)
	} else {
		gw = a.String()
	}
	return gw
}

func (s *Server) staticRouteRead(r *staticRoute, _ *request) (any, *apiError) {
	return s.renderStaticRoute(r), nil
}

func (s *Server) staticRouteUpdate(r *staticRoute, req *request) (any, *apiError) {
	if e := s.applyStaticRouteForm(r, req.form, false); e != nil {
		return nil, e
	}
	return s.renderStaticRoute(r), nil
}

func (s *Server) staticRouteDelete(r *staticRoute, _ *request) (any, *apiError) {
	delete(s.staticRoutes, r.ID)
	return nil, nil
}
