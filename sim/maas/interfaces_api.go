package maas

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// Machine interfaces: /nodes/{system_id}/interfaces/ as MAAS serves them,
// and the same under /machines/{system_id}/interfaces/ for convenience.
func (s *Server) routesInterfaces() {
	for _, base := range []struct{ path, what string }{
		{"/nodes/{system_id}/interfaces/", "Node"},
		{"/machines/{system_id}/interfaces/", "Machine"},
	} {
		node := func(fn machineHandler) handler { return s.withNode(base.what, fn) }
		nic := func(fn ifaceHandler) handler { return s.withIface(base.what, fn) }
		one := base.path + "{id}/"
		s.handle("GET", base.path, "", node((*Server).interfacesRead))
		s.handle("POST", base.path, "create_physical", node((*Server).interfacesCreatePhysical))
		s.handle("POST", base.path, "create_bond", node((*Server).interfacesCreateBond))
		s.handle("POST", base.path, "create_vlan", node((*Server).interfacesCreateVLAN))
		s.handle("POST", base.path, "create_bridge", node((*Server).interfacesCreateBridge))
		s.handle("GET", one, "", nic((*Server).interfaceRead))
		s.handle("PUT", one, "", nic((*Server).interfaceUpdate))
		s.handle("DELETE", one, "", nic((*Server).interfaceDelete))
		s.handle("POST", one, "link_subnet", nic((*Server).interfaceLinkSubnet))
		s.handle("POST", one, "unlink_subnet", nic((*Server).interfaceUnlinkSubnet))
		s.handle("POST", one, "disconnect", nic((*Server).interfaceDisconnect))
		s.handle("POST", one, "set_default_gateway", nic((*Server).interfaceSetDefaultGateway))
		s.handle("POST", one, "add_tag", nic((*Server).interfaceAddTag))
		s.handle("POST", one, "remove_tag", nic((*Server).interfaceRemoveTag))
	}
}

type ifaceHandler func(s *Server, m *machine, i *iface, req *request) (any, *apiError)

// withNode looks the machine up under the lock; what names it in the 404.
func (s *Server) withNode(what string, fn machineHandler) handler {
	return func(s *Server, req *request) (any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		m := s.machines[req.params["system_id"]]
		if m == nil {
			return nil, notFound(what)
		}
		// Whatever fn changes, before (a look at the IP index in fn) and
		// after: see listing.go, ipindex.go. No disk (render_parts.go).
		s.touchParts(m, partIfaces)
		defer s.touchParts(m, partIfaces)
		return encodedHere(fn(s, m, req))
	}
}

// encodedHere encodes a handler's answer while its caller holds the lock:
// an answer holds the machine's own slices and maps (an interface's
// parents, tags and params), which the next request on the machine may
// change while ServeHTTP would encode it.
func encodedHere(out any, err *apiError) (any, *apiError) {
	switch out.(type) {
	case map[string]any, []any:
		if b, e := appendJSON(nil, out); e == nil {
			return rawJSON(b), err
		}
	}
	return out, err
}

func (s *Server) withIface(what string, fn ifaceHandler) handler {
	return s.withNode(what, func(s *Server, m *machine, req *request) (any, *apiError) {
		i := findIface(m, req.params["id"])
		if i == nil {
			return nil, notFound("Interface")
		}
		return fn(s, m, i, req)
	})
}

// findIface finds an interface of m by ID or name.
func findIface(m *machine, spec string) *iface {
	if n, ok := idOf(spec); ok {
		for _, i := range m.Interfaces {
			if i.ID == n {
				return i
			}
		}
		return nil
	}
	return ifaceNamed(m, spec)
}

func ifaceNamed(m *machine, name string) *iface {
	for _, i := range m.Interfaces {
		if i.Name == name {
			return i
		}
	}
	return nil
}

// ifaceGuard is MAAS's state check for interface changes on a machine:
// Ready, Allocated or Broken (plus extra states for some operations).
func ifaceGuard(m *machine, operation string, extra ...int) *apiError {
	switch m.Status {
	case StatusReady, StatusAllocated, StatusBroken:
		return nil
	}
	for _, st := range extra {
		if m.Status == st {
			return nil
		}
	}
	return conflict("Cannot %s interface because the machine is not Ready, Allocated, or Broken.", operation)
}

func children(m *machine, i *iface) []*iface {
	var out []*iface
	for _, o := range m.Interfaces {
		if contains(o.Parents, i.Name) {
			out = append(out, o)
		}
	}
	return out
}

func (s *Server) parentsOf(m *machine, i *iface) []*iface {
	var out []*iface
	for _, p := range i.Parents {
		if o := ifaceNamed(m, p); o != nil {
			out = append(out, o)
		}
	}
	return out
}

// ensureLinkUp gives a connected interface without links a LINK_UP link.
func (s *Server) ensureLinkUp(i *iface) {
	if len(i.Links) == 0 && s.vlans[i.VLANID] != nil {
		i.Links = append(i.Links, &link{ID: s.nextID(), Mode: "link_up"})
	}
}

// setVLAN connects an interface to a VLAN (0: disconnected) and drops the
// links on subnets of another VLAN.
func (s *Server) setVLAN(i *iface, vlanID int) {
	if i.VLANID == vlanID {
		return
	}
	i.VLANID = vlanID
	kept := i.Links[:0]
	for _, l := range i.Links {
		sn := s.subnets[l.SubnetID]
		if vlanID != 0 && (sn == nil || sn.VLANID == vlanID) {
			kept = append(kept, l)
		}
	}
	i.Links = kept
	if v := s.vlans[vlanID]; v != nil {
		if _, own := i.Params["mtu"]; !own {
			i.MTU = v.MTU
		}
	}
	s.ensureLinkUp(i)
}

// removeInterface deletes an interface; VLAN interfaces on it and children
// left without parents go with it.
func (s *Server) removeInterface(m *machine, i *iface) {
	kept := m.Interfaces[:0]
	for _, o := range m.Interfaces {
		if o != i {
			kept = append(kept, o)
		}
	}
	m.Interfaces = kept
	if m.BootIfaceID == i.ID {
		m.BootIfaceID = 0
	}
	for _, c := range children(m, i) {
		var ps []string
		for _, p := range c.Parents {
			if p != i.Name {
				ps = append(ps, p)
			}
		}
		c.Parents = ps
		if c.Type == "vlan" || len(ps) == 0 {
			s.removeInterface(m, c)
		}
	}
}

func (s *Server) renameInterface(m *machine, i *iface, name string) {
	old := i.Name
	i.Name = name
	for _, c := range m.Interfaces {
		for n, p := range c.Parents {
			if p == old {
				c.Parents[n] = name
				if c.Type == "vlan" {
					if v := s.vlans[c.VLANID]; v != nil && c.Name == fmt.Sprintf("%s.%d", old, v.VID) {
						s.renameInterface(m, c, fmt.Sprintf("%s.%d", name, v.VID))
					}
				}
			}
		}
	}
}

func (s *Server) interfacesRead(m *machine, _ *request) (any, *apiError) {
	out := []any{}
	for _, i := range m.Interfaces {
		out = append(out, s.renderInterface(m, i))
	}
	return out, nil
}

func (s *Server) interfaceRead(m *machine, i *iface, _ *request) (any, *apiError) {
	return s.renderInterface(m, i), nil
}

// ---------------------------------------------------------------------------
// Form pieces shared by the create and update forms.

func (s *Server) checkIfaceName(errs fieldErrors, m *machine, self *iface, name string) {
	if o := ifaceNamed(m, name); o != nil && o != self {
		errs.add("name", "Node %s already has an interface named '%s'.", m.Hostname, name)
	}
}

func (s *Server) macField(errs fieldErrors, m *machine, self *iface, f formValues) (string, bool) {
	if !f.has("mac_address") {
		return "", false
	}
	v := strings.TrimSpace(f.get("mac_address"))
	hw, err := net.ParseMAC(v)
	if err != nil || len(hw) != 6 {
		errs.add("mac_address", "'%s' is not a valid MAC address.", v)
		return "", false
	}
	mac := hw.String()
	for _, o := range sortedMachines(s.machines) {
		for _, i := range o.Interfaces {
			if i != self && i.Type == "physical" && i.MAC == mac && (self == nil || self.Type == "physical") {
				errs.add("mac_address", "This MAC address is already in use by %s.", o.Hostname)
				return "", false
			}
		}
	}
	return mac, true
}

// vlanField reads the "vlan" field: ok with id 0 means "disconnect".
func (s *Server) vlanField(errs fieldErrors, f formValues) (int, bool) {
	if !f.has("vlan") {
		return 0, false
	}
	v := strings.TrimSpace(f.get("vlan"))
	if v == "" {
		return 0, true
	}
	n, ok := idOf(v)
	if !ok || s.vlans[n] == nil {
		errs.add("vlan", msgInvalidModel)
		return 0, false
	}
	return n, true
}

// parentsField resolves interface IDs (or names), repeated or
// comma-separated, among the machine's interfaces.
func (s *Server) parentsField(errs fieldErrors, m *machine, f formValues, key string) ([]*iface, bool) {
	if !f.has(key) {
		return nil, false
	}
	var out []*iface
	for _, v := range splitList(f[key]) {
		p := findIface(m, v)
		if p == nil {
			errs.add(key, "%s", msgInvalidChoice(v))
			return nil, false
		}
		if !containsIface(out, p) {
			out = append(out, p)
		}
	}
	return out, true
}

// parentField reads the parent of a VLAN or bridge interface: "parent",
// or "parents" (MAAS copies parent to parents, so both work); errors are
// reported under "parent".
func (s *Server) parentField(errs fieldErrors, m *machine, f formValues) ([]*iface, bool) {
	if f.has("parent") {
		return s.parentsField(errs, m, f, "parent")
	}
	sub := fieldErrors{}
	ps, ok := s.parentsField(sub, m, f, "parents")
	for _, msg := range sub["parents"] {
		errs.add("parent", "%s", msg)
	}
	return ps, ok
}

func containsIface(list []*iface, i *iface) bool {
	for _, o := range list {
		if o == i {
			return true
		}
	}
	return false
}

// mtuField reads "mtu": set (ok, n>0) or cleared (ok, n==0).
func mtuField(errs fieldErrors, f formValues) (int, bool) {
	if !f.has("mtu") {
		return 0, false
	}
	if strings.TrimSpace(f.get("mtu")) == "" {
		return 0, true
	}
	return intField(errs, f, "mtu", 552, math.MaxInt32)
}

func (s *Server) applyMTU(i *iface, mtu int) {
	if i.Params == nil {
		i.Params = map[string]any{}
	}
	if mtu > 0 {
		i.Params["mtu"] = mtu
		i.MTU = mtu
		return
	}
	delete(i.Params, "mtu")
	i.MTU = 1500
	if v := s.vlans[i.VLANID]; v != nil {
		i.MTU = v.MTU
	}
}

var (
	bondModes        = []string{"balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb"}
	bondLACPRates    = []string{"fast", "slow"}
	bondXmitPolicies = []string{"layer2", "layer2+3", "layer3+4", "encap2+3", "encap3+4"}
	bridgeTypes      = []string{"standard", "ovs"}
)

// paramFields validates the bond_* or bridge_* parameters and sets them in
// params; creating fills the defaults MAAS stores.
func paramFields(errs fieldErrors, f formValues, params map[string]any, creating bool, specs []paramSpec) {
	for _, sp := range specs {
		v := strings.TrimSpace(f.get(sp.key))
		if !f.has(sp.key) || v == "" {
			if creating {
				params[sp.key] = sp.def
			}
			continue
		}
		switch {
		case sp.choices != nil:
			if !contains(sp.choices, v) {
				errs.add(sp.key, "%s", msgInvalidChoiceOf(v, sp.key, sp.choices))
				continue
			}
			params[sp.key] = v
		case sp.isBool:
			params[sp.key] = formBool(v)
		default:
			if n, ok := intField(errs, f, sp.key, 0, sp.max); ok {
				params[sp.key] = n
			}
		}
	}
}

type paramSpec struct {
	key     string
	def     any
	choices []string
	isBool  bool
	max     int
}

var bondSpecs = []paramSpec{
	{key: "bond_mode", def: "balance-rr", choices: bondModes},
	{key: "bond_miimon", def: 100, max: math.MaxInt32},
	{key: "bond_downdelay", def: 0, max: math.MaxInt32},
	{key: "bond_updelay", def: 0, max: math.MaxInt32},
	{key: "bond_num_grat_arp", def: 1, max: 255},
	{key: "bond_lacp_rate", def: "fast", choices: bondLACPRates},
	{key: "bond_xmit_hash_policy", def: "layer2", choices: bondXmitPolicies},
}

var bridgeSpecs = []paramSpec{
	{key: "bridge_type", def: "standard", choices: bridgeTypes},
	{key: "bridge_stp", def: false, isBool: true},
	{key: "bridge_fd", def: 15, max: math.MaxInt32},
}

func tagsField(f formValues) ([]string, bool) {
	if !f.has("tags") {
		return nil, false
	}
	return splitList(f["tags"]), true
}

// ---------------------------------------------------------------------------
// Creation.

func (s *Server) newIface(typ, name, mac string, vlanID int) *iface {
	i := &iface{ID: s.nextID(), Type: typ, Name: name, MAC: mac, VLANID: vlanID, Enabled: true, MTU: 1500,
		Params: map[string]any{}}
	if v := s.vlans[vlanID]; v != nil {
		i.MTU = v.MTU
	}
	return i
}

// nextIfname is MAAS's get_next_ifname: eth<highest + 1>.
func nextIfname(m *machine) string {
	n := 0
	for _, i := range m.Interfaces {
		if k, err := strconv.Atoi(strings.TrimPrefix(i.Name, "eth")); err == nil && strings.HasPrefix(i.Name, "eth") && k >= n {
			n = k + 1
		}
	}
	return fmt.Sprintf("eth%d", n)
}

func (s *Server) interfacesCreatePhysical(m *machine, req *request) (any, *apiError) {
	if e := ifaceGuard(m, "create"); e != nil {
		return nil, e
	}
	f, errs := req.form, fieldErrors{}
	mac, hasMAC := s.macField(errs, m, nil, f)
	if !f.has("mac_address") || strings.TrimSpace(f.get("mac_address")) == "" {
		errs["mac_address"] = []string{msgRequired}
	}
	name := strings.TrimSpace(f.get("name"))
	if name != "" {
		s.checkIfaceName(errs, m, nil, name)
	}
	vlanID, _ := s.vlanField(errs, f)
	mtu, hasMTU := mtuField(errs, f)
	if e := errs.err(); e != nil || !hasMAC {
		return nil, e
	}
	if name == "" {
		name = nextIfname(m)
	}
	i := s.newIface("physical", name, mac, vlanID)
	if tags, ok := tagsField(f); ok {
		i.Tags = tags
	}
	if hasMTU {
		s.applyMTU(i, mtu)
	}
	m.Interfaces = append(m.Interfaces, i)
	s.ensureLinkUp(i)
	return s.renderInterface(m, i), nil
}

// adopt makes parents members of a new bond or bridge: their links are
// cleared and (for a bond) they follow its VLAN.
func (s *Server) adopt(parents []*iface, child *iface) {
	for _, p := range parents {
		p.Links = nil
		if child.Type == "bond" {
			p.VLANID = child.VLANID
		}
	}
}

func (s *Server) interfacesCreateBond(m *machine, req *request) (any, *apiError) {
	if e := ifaceGuard(m, "create bond"); e != nil {
		return nil, e
	}
	f, errs := req.form, fieldErrors{}
	name := strings.TrimSpace(f.get("name"))
	if name == "" {
		errs.add("name", msgRequired)
	} else {
		s.checkIfaceName(errs, m, nil, name)
	}
	mac, hasMAC := s.macField(errs, m, &iface{Type: "bond"}, f)
	vlanID, hasVLAN := s.vlanField(errs, f)
	mtu, hasMTU := mtuField(errs, f)
	parents, _ := s.parentsField(errs, m, f, "parents")
	if len(errs["parents"]) == 0 && len(parents) == 0 {
		errs.add("parents", "A bond interface must have one or more parents.")
	}
	params := map[string]any{}
	paramFields(errs, f, params, true, bondSpecs)
	if len(errs["parents"]) == 0 && len(parents) > 0 {
		var busy []string
		for _, p := range parents {
			if len(children(m, p)) > 0 {
				busy = append(busy, p.Name)
			}
		}
		if len(busy) > 0 {
			sort.Strings(busy)
			errs.add("parents", "Interfaces already in-use: %s.", strings.Join(busy, ", "))
		}
		if !hasVLAN {
			vlanID = parents[0].VLANID
		}
		for _, p := range parents {
			if p.VLANID != vlanID {
				errs.add("parents", "All parents must belong to the same VLAN.")
				break
			}
		}
	}
	if e := errs.err(); e != nil {
		return nil, e
	}
	if !hasMAC {
		mac = parents[0].MAC
	}
	i := s.newIface("bond", name, mac, vlanID)
	i.Params = params
	for _, p := range parents {
		i.Parents = append(i.Parents, p.Name)
	}
	if tags, ok := tagsField(f); ok {
		i.Tags = tags
	}
	if hasMTU {
		s.applyMTU(i, mtu)
	}
	m.Interfaces = append(m.Interfaces, i)
	s.adopt(parents, i)
	s.ensureLinkUp(i)
	return s.renderInterface(m, i), nil
}

// vlanIfaceErrors validates a VLAN interface's parent and VLAN.
func (s *Server) vlanIfaceErrors(errs fieldErrors, m *machine, parents []*iface, vlanID int) {
	if len(parents) != 1 {
		errs.add("parent", "A VLAN interface must have exactly one parent.")
	} else if parents[0].Type == "vlan" {
		errs.add("parent", "A VLAN interface can't have another VLAN interface as parent.")
	} else {
		for _, c := range children(m, parents[0]) {
			if c.Type == "bond" {
				errs.add("parent", "A VLAN interface can't have a parent that is already in a bond.")
				break
			}
		}
	}
	v := s.vlans[vlanID]
	switch {
	case v == nil:
		errs.add("vlan", "A VLAN interface must be connected to a tagged VLAN.")
	case v.VID == 0:
		errs.add("vlan", "A VLAN interface can only belong to a tagged VLAN.")
	case len(errs["parent"]) == 0:
		pv := s.vlans[parents[0].VLANID]
		if pv == nil || pv.FabricID != v.FabricID {
			errs.add("vlan", "A VLAN interface can only belong to a tagged VLAN on the same fabric as its parent interface.")
		}
	}
}

func (s *Server) interfacesCreateVLAN(m *machine, req *request) (any, *apiError) {
	if e := ifaceGuard(m, "create VLAN"); e != nil {
		return nil, e
	}
	f, errs := req.form, fieldErrors{}
	parents, _ := s.parentField(errs, m, f)
	vlanID, _ := s.vlanField(errs, f)
	mtu, hasMTU := mtuField(errs, f)
	if len(errs["parent"])+len(errs["vlan"]) == 0 {
		s.vlanIfaceErrors(errs, m, parents, vlanID)
	}
	name := strings.TrimSpace(f.get("name"))
	if len(errs) == 0 {
		if name == "" {
			name = fmt.Sprintf("%s.%d", parents[0].Name, s.vlans[vlanID].VID)
		}
		s.checkIfaceName(errs, m, nil, name)
	}
	if e := errs.err(); e != nil {
		return nil, e
	}
	i := s.newIface("vlan", name, parents[0].MAC, vlanID)
	i.Parents = []string{parents[0].Name}
	if tags, ok := tagsField(f); ok {
		i.Tags = tags
	}
	if hasMTU {
		s.applyMTU(i, mtu)
	}
	m.Interfaces = append(m.Interfaces, i)
	s.ensureLinkUp(i)
	return s.renderInterface(m, i), nil
}

func (s *Server) interfacesCreateBridge(m *machine, req *request) (any, *apiError) {
	if e := ifaceGuard(m, "create bridge"); e != nil {
		return nil, e
	}
	f, errs := req.form, fieldErrors{}
	parents, _ := s.parentField(errs, m, f)
	mac, hasMAC := s.macField(errs, m, &iface{Type: "bridge"}, f)
	vlanID, hasVLAN := s.vlanField(errs, f)
	mtu, hasMTU := mtuField(errs, f)
	params := map[string]any{}
	paramFields(errs, f, params, true, bridgeSpecs)
	if len(errs["parent"]) == 0 {
		switch {
		case len(parents) != 1:
			errs.add("parent", "A bridge interface must have exactly one parent.")
		case parents[0].Type == "bridge":
			errs.add("parent", "A bridge interface can't have another bridge interface as parent.")
		default:
			for _, c := range children(m, parents[0]) {
				if c.Type == "bond" || c.Type == "bridge" {
					errs.add("parent", "A bridge interface can't have a parent that is already in a bond or a bridge.")
					break
				}
			}
		}
	}
	name := strings.TrimSpace(f.get("name"))
	if len(errs["parent"]) == 0 && name == "" {
		name = "br-" + parents[0].Name
	}
	if name != "" {
		s.checkIfaceName(errs, m, nil, name)
	}
	if e := errs.err(); e != nil {
		return nil, e
	}
	parent := parents[0]
	acquired := m.Status == StatusAllocated
	if !hasVLAN || acquired {
		vlanID = parent.VLANID
	}
	if !hasMAC {
		mac = parent.MAC
	}
	i := s.newIface("bridge", name, mac, vlanID)
	i.Params = params
	i.Parents = []string{parent.Name}
	if tags, ok := tagsField(f); ok {
		i.Tags = tags
	}
	if hasMTU {
		s.applyMTU(i, mtu)
	}
	if acquired {
		// On an allocated machine the parent's links move to the bridge.
		i.Links, parent.Links = parent.Links, nil
	} else {
		s.adopt(parents, i)
	}
	m.Interfaces = append(m.Interfaces, i)
	s.ensureLinkUp(i)
	return s.renderInterface(m, i), nil
}

// ---------------------------------------------------------------------------
// Update and delete.

func (s *Server) interfaceUpdate(m *machine, i *iface, req *request) (any, *apiError) {
	if e := ifaceGuard(m, "update interface", StatusDeployed); e != nil {
		return nil, e
	}
	f, errs := req.form, fieldErrors{}
	name, hasName := strings.TrimSpace(f.get("name")), f.has("name") && strings.TrimSpace(f.get("name")) != ""
	if hasName {
		s.checkIfaceName(errs, m, i, name)
	}
	mac, hasMAC := "", false
	if i.Type != "vlan" {
		mac, hasMAC = s.macField(errs, m, i, f)
	}
	// A deployed machine's interface may only be renamed or get another
	// MAC (to replace a broken NIC).
	deployed := m.Status == StatusDeployed
	var vlanID, mtu int
	var hasVLAN, hasMTU, hasParents bool
	var parents []*iface
	if !deployed {
		vlanID, hasVLAN = s.vlanField(errs, f)
		mtu, hasMTU = mtuField(errs, f)
		parents, hasParents = s.updateParentsField(errs, m, i, f, vlanID, hasVLAN)
	}
	if e := errs.err(); e != nil {
		return nil, e
	}
	if hasName {
		s.renameInterface(m, i, name)
	}
	if hasMAC {
		i.MAC = mac
	}
	if deployed {
		return s.renderInterface(m, i), nil
	}
	if hasParents {
		s.setParents(i, parents)
	}
	if hasVLAN {
		s.setVLAN(i, vlanID)
		if i.Type == "bond" {
			for _, p := range s.parentsOf(m, i) {
				p.VLANID = vlanID
			}
		}
	}
	if hasMTU {
		s.applyMTU(i, mtu)
	}
	applyIfaceFlags(i, f)
	return s.renderInterface(m, i), nil
}

// applyIfaceFlags sets what an update may change on any interface: a
// physical one's enabled flag, and the tags.
func applyIfaceFlags(i *iface, f formValues) {
	if i.Type == "physical" && f.has("enabled") {
		i.Enabled = formBool(f.get("enabled"))
	}
	if tags, ok := tagsField(f); ok {
		i.Tags = tags
	}
}

// setParents gives an updated interface its new parents.
func (s *Server) setParents(i *iface, parents []*iface) {
	i.Parents = nil
	for _, p := range parents {
		i.Parents = append(i.Parents, p.Name)
	}
	if i.Type != "vlan" {
		s.adopt(parents, i)
	}
}

// updateParentsField reads and checks the parents (and the params) of an
// updated bond, bridge or VLAN interface; vlanID is the form's VLAN.
func (s *Server) updateParentsField(errs fieldErrors, m *machine, i *iface, f formValues, vlanID int, hasVLAN bool) ([]*iface, bool) {
	switch i.Type {
	case "bond":
		parents, ok := s.parentsField(errs, m, f, "parents")
		if ok && len(errs["parents"]) == 0 {
			checkBondParents(errs, m, i, parents)
		}
		paramFields(errs, f, i.Params, false, bondSpecs)
		return parents, ok
	case "bridge":
		parents, ok := s.parentField(errs, m, f)
		if ok && len(errs["parent"]) == 0 && len(parents) != 1 {
			errs.add("parent", "A bridge interface must have exactly one parent.")
		}
		paramFields(errs, f, i.Params, false, bridgeSpecs)
		return parents, ok
	case "vlan":
		parents, ok := s.parentField(errs, m, f)
		if len(errs["parent"])+len(errs["vlan"]) == 0 && (ok || hasVLAN) {
			ps, vid := s.parentsOf(m, i), i.VLANID
			if ok {
				ps = parents
			}
			if hasVLAN {
				vid = vlanID
			}
			s.vlanIfaceErrors(errs, m, ps, vid)
		}
		return parents, ok
	}
	return nil, false
}

// checkBondParents: a bond has parents, none of them in use by another
// interface than the bond.
func checkBondParents(errs fieldErrors, m *machine, bond *iface, parents []*iface) {
	if len(parents) == 0 {
		errs.add("parents", "A bond interface must have one or more parents.")
	}
	var busy []string
	for _, p := range parents {
		for _, c := range children(m, p) {
			if c != bond {
				busy = append(busy, p.Name)
				break
			}
		}
	}
	if len(busy) > 0 {
		sort.Strings(busy)
		errs.add("parents", "Interfaces already in-use: %s.", strings.Join(busy, ", "))
	}
}

func (s *Server) interfaceDelete(m *machine, i *iface, _ *request) (any, *apiError) {
	if e := ifaceGuard(m, "delete interface"); e != nil {
		return nil, e
	}
	s.removeInterface(m, i)
	return nil, nil
}

// ---------------------------------------------------------------------------
// Links.

var linkModes = []string{"auto", "dhcp", "static", "link_up"}

// linkForm is a link_subnet form as read.
type linkForm struct {
	mode           string
	sn             *subnet
	ip             netip.Addr
	force, gateway bool
}

func (s *Server) interfaceLinkSubnet(m *machine, i *iface, req *request) (any, *apiError) {
	if e := ifaceGuard(m, "link subnet"); e != nil {
		return nil, e
	}
	errs := fieldErrors{}
	lf := s.readLinkForm(errs, m, i, req.form)
	s.checkLinkMode(errs, i, lf)
	s.checkLinkGateway(errs, lf)
	if e := errs.err(); e != nil {
		return nil, e
	}
	if e := s.staticIPUnavailable(lf); e != nil {
		return nil, e
	}
	if lf.mode == "link_up" || lf.force {
		i.Links = nil
	}
	if lf.force && lf.sn != nil {
		i.VLANID = 0
	}
	l, e := s.newLink(lf)
	if e != nil {
		return nil, e
	}
	i.Links = append(s.linksKeptBeside(i, lf.sn), l)
	if lf.sn != nil && s.vlans[i.VLANID] == nil {
		i.VLANID = lf.sn.VLANID
		if v := s.vlans[lf.sn.VLANID]; v != nil {
			if _, own := i.Params["mtu"]; !own {
				i.MTU = v.MTU
			}
		}
	}
	if lf.gateway {
		s.setGatewayLink(m, l)
	}
	return s.renderInterface(m, i), nil
}

// readLinkForm reads the mode, subnet and address of a link_subnet form;
// an interface in a bond is not linked.
func (s *Server) readLinkForm(errs fieldErrors, m *machine, i *iface, f formValues) linkForm {
	lf := linkForm{force: formBool(f.get("force")), gateway: formBool(f.get("default_gateway"))}
	for _, c := range children(m, i) {
		if c.Type == "bond" {
			errs.add("bond", "Cannot link interface(%s) when interface is in a bond(%s).", i.Name, c.Name)
		}
	}
	lf.mode = strings.ToLower(strings.TrimSpace(f.get("mode")))
	if lf.mode == "" {
		errs.add("mode", msgRequired)
	} else if !contains(linkModes, lf.mode) {
		errs.add("mode", "%s", msgInvalidChoiceOf(f.get("mode"), "mode", linkModes))
		lf.mode = ""
	}
	if v := strings.TrimSpace(f.get("subnet")); v != "" {
		lf.sn = s.findSubnet(v)
		// Without force, only the subnets of the interface's VLAN.
		if lf.sn == nil || (i.VLANID != 0 && s.vlans[i.VLANID] != nil && !lf.force && lf.sn.VLANID != i.VLANID) {
			errs.add("subnet", msgInvalidModel)
			lf.sn = nil
		}
	}
	if v := strings.TrimSpace(f.get("ip_address")); v != "" {
		a, ok := parseAddr(v)
		if !ok {
			errs.add("ip_address", msgInvalidIP)
		}
		lf.ip = a
	}
	return lf
}

// checkLinkMode checks what each mode needs: auto and static a subnet (a
// static address in it, outside dynamic ranges), dhcp no DHCP link yet,
// link_up no other link unless forced.
func (s *Server) checkLinkMode(errs fieldErrors, i *iface, lf linkForm) {
	needSubnet := lf.sn == nil && len(errs["subnet"]) == 0
	switch lf.mode {
	case "auto":
		if needSubnet {
			errs.add("subnet", msgRequired)
		}
	case "dhcp":
		s.checkNoDHCPLink(errs, i)
	case "static":
		if needSubnet {
			errs.add("subnet", msgRequired)
		} else if lf.sn != nil && lf.ip.IsValid() {
			if !mustPrefix(lf.sn.CIDR).Contains(lf.ip) {
				errs.add("ip_address", "IP address is not in the given subnet '%s'.", s.subnetString(lf.sn))
			}
			if r := s.rangeHolding(lf.sn, lf.ip, "dynamic"); r != nil {
				errs.add("ip_address", "IP address is inside a dynamic range %s to %s.", r.StartIP, r.EndIP)
			}
		}
	case "link_up":
		if lf.force {
			return
		}
		for _, l := range i.Links {
			if l.Mode != "link_up" {
				errs.add("mode", "Cannot configure interface to link up (with no IP address) while other links are already configured. Specify force=True to override this behavior and delete all links.")
				return
			}
		}
	}
}

func (s *Server) checkNoDHCPLink(errs fieldErrors, i *iface) {
	for _, l := range i.Links {
		if l.Mode != "dhcp" {
			continue
		}
		if o := s.subnets[l.SubnetID]; o != nil {
			errs.add("mode", "Interface is already set to DHCP from '%s'.", s.subnetString(o))
		} else {
			errs.add("mode", "Interface is already set to DHCP.")
		}
		return
	}
}

// checkLinkGateway: a default gateway needs mode auto or static and a
// subnet with a gateway.
func (s *Server) checkLinkGateway(errs fieldErrors, lf linkForm) {
	if !lf.gateway || lf.mode == "" {
		return
	}
	switch {
	case lf.mode != "auto" && lf.mode != "static":
		errs.add("default_gateway", "Cannot use in mode '%s'.", lf.mode)
	case lf.sn == nil:
		errs.add("default_gateway", "Subnet is required when default_gateway is True.")
	case lf.sn.GatewayIP == "":
		errs.add("default_gateway", "Cannot set as default gateway because subnet %s doesn't provide a gateway IP address.", s.subnetString(lf.sn))
	}
}

// staticIPUnavailable is the model-level check of a requested static
// address (MAAS answers 404 StaticIPAddressUnavailable for these).
func (s *Server) staticIPUnavailable(lf linkForm) *apiError {
	if lf.mode != "static" || !lf.ip.IsValid() {
		return nil
	}
	if s.ipInUse(lf.ip) {
		return errorf(http.StatusNotFound, "IP address is already in use.")
	}
	if r := s.rangeHolding(lf.sn, lf.ip, "reserved"); r != nil {
		return errorf(http.StatusNotFound, "%s is within the reserved range from %s to %s", lf.ip, r.StartIP, r.EndIP)
	}
	return nil
}

// newLink makes the link: a static one gets the asked address or the
// subnet's next free one.
func (s *Server) newLink(lf linkForm) (*link, *apiError) {
	l := &link{ID: s.nextID(), Mode: lf.mode}
	if lf.sn != nil {
		l.SubnetID = lf.sn.ID
	}
	if lf.mode != "static" {
		return l, nil
	}
	if lf.ip.IsValid() {
		l.IP = lf.ip.String()
		return l, nil
	}
	a, ok := s.allocateIP(lf.sn)
	if !ok {
		return nil, errorf(http.StatusServiceUnavailable, "No more IPs available in subnet: %s.", lf.sn.CIDR)
	}
	l.IP = a
	return l, nil
}

// linksKeptBeside is what stays of the interface's links beside a new link
// on sn: not the LINK_UP link, nor the DHCP link of sn's family.
func (s *Server) linksKeptBeside(i *iface, sn *subnet) []*link {
	kept := i.Links[:0]
	for _, o := range i.Links {
		if o.Mode == "link_up" {
			continue
		}
		if o.Mode == "dhcp" {
			v4, ok := linkIs4(s, o)
			if !ok || sn == nil || v4 == mustPrefix(sn.CIDR).Addr().Is4() {
				continue
			}
		}
		kept = append(kept, o)
	}
	return kept
}

func (s *Server) interfaceUnlinkSubnet(m *machine, i *iface, req *request) (any, *apiError) {
	if e := ifaceGuard(m, "unlink subnet"); e != nil {
		return nil, e
	}
	errs := fieldErrors{}
	v := strings.TrimSpace(req.form.get("id"))
	var ids []string
	for _, l := range i.Links {
		ids = append(ids, strconv.Itoa(l.ID))
	}
	n, ok := idOf(v)
	idx := -1
	for k, l := range i.Links {
		if ok && l.ID == n {
			idx = k
		}
	}
	switch {
	case v == "":
		errs.add("id", msgRequired)
	case idx < 0:
		errs.add("id", "%s", msgInvalidChoiceOf(v, "id", ids))
	}
	if e := errs.err(); e != nil {
		return nil, e
	}
	i.Links = append(i.Links[:idx], i.Links[idx+1:]...)
	if i.Enabled {
		s.ensureLinkUp(i)
	}
	return s.renderInterface(m, i), nil
}

func (s *Server) interfaceDisconnect(m *machine, i *iface, _ *request) (any, *apiError) {
	if e := ifaceGuard(m, "disconnect"); e != nil {
		return nil, e
	}
	i.Links = nil
	i.VLANID = 0
	return s.renderInterface(m, i), nil
}

func linkIs4(s *Server, l *link) (bool, bool) {
	sn := s.subnets[l.SubnetID]
	if sn == nil {
		return false, false
	}
	return mustPrefix(sn.CIDR).Addr().Is4(), true
}

// setGatewayLink makes l the machine's default gateway link of its family.
func (s *Server) setGatewayLink(m *machine, l *link) {
	v4, ok := linkIs4(s, l)
	if !ok {
		return
	}
	for _, i := range m.Interfaces {
		for _, o := range i.Links {
			if f, ok := linkIs4(s, o); ok && f == v4 {
				o.Gateway = false
			}
		}
	}
	l.Gateway = true
}

func (s *Server) interfaceSetDefaultGateway(m *machine, i *iface, req *request) (any, *apiError) {
	if e := ifaceGuard(m, "set default gateway"); e != nil {
		return nil, e
	}
	errs := fieldErrors{}
	var usable []*link
	var ids []string
	for _, l := range i.Links {
		if sn := s.subnets[l.SubnetID]; sn != nil && sn.GatewayIP != "" && (l.Mode == "auto" || l.Mode == "static" || l.Mode == "dhcp") {
			usable = append(usable, l)
			ids = append(ids, strconv.Itoa(l.ID))
		}
	}
	if len(usable) == 0 {
		errs.add("__all__", "This interface has no usable gateways.")
		return nil, errs.err()
	}
	if v := strings.TrimSpace(req.form.get("link_id")); v != "" {
		n, _ := idOf(v)
		for _, l := range usable {
			if l.ID == n {
				s.setGatewayLink(m, l)
				return s.renderInterface(m, i), nil
			}
		}
		errs.add("link_id", "%s", msgInvalidChoiceOf(v, "link_id", ids))
		return nil, errs.err()
	}
	gws := map[bool]map[string]bool{true: {}, false: {}}
	for _, l := range usable {
		v4, _ := linkIs4(s, l)
		gws[v4][s.subnets[l.SubnetID].GatewayIP] = true
	}
	var many []string
	if len(gws[true]) > 1 {
		many = append(many, "IPv4")
	}
	if len(gws[false]) > 1 {
		many = append(many, "IPv6")
	}
	if len(many) > 0 {
		plural := ""
		if len(many) > 1 {
			plural = "s"
		}
		errs.add("link_id", "This field is required; Interface has more than one usable %s gateway%s.", strings.Join(many, " and "), plural)
		return nil, errs.err()
	}
	done := map[bool]bool{}
	for _, l := range usable {
		if v4, _ := linkIs4(s, l); !done[v4] {
			s.setGatewayLink(m, l)
			done[v4] = true
		}
	}
	return s.renderInterface(m, i), nil
}

func (s *Server) interfaceAddTag(m *machine, i *iface, req *request) (any, *apiError) {
	t := strings.TrimSpace(req.form.get("tag"))
	if t == "" {
		return nil, badRequest("tag", msgRequired)
	}
	if !contains(i.Tags, t) {
		i.Tags = append(i.Tags, t)
	}
	return s.renderInterface(m, i), nil
}

func (s *Server) interfaceRemoveTag(m *machine, i *iface, req *request) (any, *apiError) {
	t := strings.TrimSpace(req.form.get("tag"))
	if t == "" {
		return nil, badRequest("tag", msgRequired)
	}
	var kept []string
	for _, o := range i.Tags {
		if o != t {
			kept = append(kept, o)
		}
	}
	i.Tags = kept
	return s.renderInterface(m, i), nil
}

// ---------------------------------------------------------------------------
// Gateways and AUTO addresses, for the machine's rendering and lifecycle.

// defaultGateways is the machine's "default_gateways" as MAAS renders it:
// the gateway of the chosen (or first usable) link per family, and the link
// only when chosen explicitly (set_default_gateway, default_gateway=True).
func (s *Server) defaultGateways(m *machine) map[string]any {
	pick := func(v4 bool) map[string]any {
		var explicit, first *link
		for _, i := range m.Interfaces {
			for _, l := range i.Links {
				sn := s.subnets[l.SubnetID]
				if sn == nil || sn.GatewayIP == "" || l.Mode == "link_up" {
					continue
				}
				if f, _ := linkIs4(s, l); f != v4 {
					continue
				}
				if l.Gateway && explicit == nil {
					explicit = l
				}
				if first == nil {
					first = l
				}
			}
		}
		out := map[string]any{"gateway_ip": nil, "link_id": nil}
		if explicit != nil {
			out["gateway_ip"], out["link_id"] = s.subnets[explicit.SubnetID].GatewayIP, explicit.ID
		} else if first != nil {
			out["gateway_ip"] = s.subnets[first.SubnetID].GatewayIP
		}
		return out
	}
	return map[string]any{"ipv4": pick(true), "ipv6": pick(false)}
}

// claimAutoIPs gives every AUTO link of the machine an address, as MAAS does
// when a deployment starts. Call with s.mu held.
func (s *Server) claimAutoIPs(m *machine) *apiError {
	for _, i := range m.Interfaces {
		for _, l := range i.Links {
			if l.Mode != "auto" || l.IP != "" {
				continue
			}
			sn := s.subnets[l.SubnetID]
			if sn == nil {
				continue
			}
			a, ok := s.allocateIP(sn)
			if !ok {
				return errorf(http.StatusServiceUnavailable, "No more IPs available in subnet: %s.", sn.CIDR)
			}
			l.IP = a
		}
	}
	return nil
}

// releaseAutoIPs frees the addresses of AUTO links, as MAAS does when a
// machine is released. Call with s.mu held.
func (s *Server) releaseAutoIPs(m *machine) {
	for _, i := range m.Interfaces {
		for _, l := range i.Links {
			if l.Mode == "auto" {
				l.IP = ""
			}
		}
	}
}
