package maas

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

func (s *Server) routesMachines() {
	s.handle("GET", "/machines/", "", (*Server).machinesRead)
	s.handle("POST", "/machines/", "", (*Server).machinesCreate)
	s.handle("POST", "/machines/", "allocate", (*Server).machinesAllocate)
	s.handle("POST", "/machines/", "release", (*Server).machinesRelease)
	s.handle("GET", "/machines/", "power_parameters", (*Server).machinesPowerParameters)
	s.handle("GET", "/machines/{system_id}/", "", s.readShared((*Server).machineReadShared, (*Server).machineRead))
	s.handle("PUT", "/machines/{system_id}/", "", s.withMachine((*Server).machineUpdate))
	s.handle("DELETE", "/machines/{system_id}/", "", s.withMachine((*Server).machineDelete))
	for op, fn := range map[string]machineHandler{
		"commission": (*Server).opCommission, "deploy": (*Server).opDeploy, "release": (*Server).opRelease,
		"abort": (*Server).opAbort, "mark_broken": (*Server).opMarkBroken, "mark_fixed": (*Server).opMarkFixed,
		"rescue_mode": (*Server).opRescueMode, "exit_rescue_mode": (*Server).opExitRescueMode, "test": (*Server).opTest,
		"power_on": (*Server).opPowerOn, "power_off": (*Server).opPowerOff,
		"set_owner_data": (*Server).opSetOwnerData, "set_workload_annotations": (*Server).opSetOwnerData,
		"lock": (*Server).opLock, "unlock": (*Server).opUnlock,
		"restore_networking_configuration": (*Server).opRestoreNetworking,
		"restore_storage_configuration":    (*Server).opRestoreStorage,
		"restore_default_configuration":    (*Server).opRestoreDefault,
	} {
		s.handle("POST", "/machines/{system_id}/", op, s.withMachineParts(partsOf(op), fn))
	}
	s.handle("GET", "/machines/{system_id}/", "query_power_state", s.withMachineParts(partNone, (*Server).opQueryPower))
	s.handle("GET", "/machines/{system_id}/", "power_parameters", s.withMachineParts(partNone, (*Server).opPowerParameters))
	s.handle("GET", "/machines/{system_id}/", "details", s.readShared((*Server).opDetailsShared, (*Server).opDetails))
	s.handle("GET", "/nodes/{system_id}/", "details", s.readShared((*Server).opDetailsShared, (*Server).opDetails)) // NodeHandler's, which machines inherit
}

type machineHandler func(s *Server, m *machine, req *request) (any, *apiError)

// opParts are the parts of a machine's JSON (render_parts.go) that the
// machine ops named here may change; any other op may change all.
var opParts = map[string]part{
	"set_owner_data": partNone, "set_workload_annotations": partNone, // owner data
	"lock": partNone, "unlock": partNone, // locked
	"power_on": partNone, "power_off": partNone, // the power state
	"restore_networking_configuration": partIfaces,
	// A deploy allocates, claims the AUTO links' addresses and starts:
	// its interfaces change, its disks do not (their JSON shows no status).
	"deploy":                        partIfaces,
	"restore_storage_configuration": partDisks,
}

// partsOf is opParts[op], every part for an op it does not name.
func partsOf(op string) part {
	if p, ok := opParts[op]; ok {
		return p
	}
	return partsAll
}

// withMachine looks the machine up (404 like MAAS) and runs fn under the lock.
func (s *Server) withMachine(fn machineHandler) handler { return s.withMachineParts(partsAll, fn) }

// withMachineParts is withMachine for a request that may change only
// the parts p of the machine's JSON (render_parts.go).
func (s *Server) withMachineParts(p part, fn machineHandler) handler {
	return func(s *Server, req *request) (any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		m := s.machines[req.params["system_id"]]
		if m == nil {
			return nil, notFound("Machine")
		}
		s.touchParts(m, p) // whatever fn changes, before (a look at the IP index in fn) and after: see listing.go, ipindex.go
		out, err := fn(s, m, req)
		s.touchParts(m, p)
		if a, ok := out.(machineAnswer); ok { // after the last touch
			return s.writtenJSON(a.m), err
		}
		return encodedHere(out, err) // interfaces_api.go
	}
}

// readMachine is withMachine for the requests that change nothing its
// JSON shows (a read, the details, its node devices): the machine is not
// touched, so that its JSON kept for the listing (listing.go) stays
// current.
func (s *Server) readMachine(fn machineHandler) handler {
	return func(s *Server, req *request) (any, *apiError) {
		s.mu.Lock()
		defer s.mu.Unlock()
		m := s.machines[req.params["system_id"]]
		if m == nil {
			return nil, notFound("Machine")
		}
		out, err := fn(s, m, req)
		if a, ok := out.(machineAnswer); ok {
			return s.machineJSON(a.m), err
		}
		return encodedHere(out, err) // interfaces_api.go
	}
}

// machineAnswer is what a handler of withMachine or readMachine returns
// to answer the machine as renderMachine renders it: the wrapper encodes
// it, under the lock, after its last touch, through the listing cache
// (machineJSON), so that a write's answer, the engine's read after it and
// the next poll's listing render the machine once.
type machineAnswer struct{ m *machine }

func (s *Server) machineRead(m *machine, _ *request) (any, *apiError) { return machineAnswer{m}, nil }

// machinesRead lists machines, filtered as MAAS filters them. With an id
// filter only the machines named are looked at (the engine's batched
// status poll names thousands); each machine's JSON comes from the
// listing cache when nothing changed it since the last listing.
func (s *Server) machinesRead(req *request) (any, *apiError) {
	if ids, ok := req.form["id"]; ok { // the engine's poll: beside other reads when it can (shared_reads.go)
		s.stats.listed(len(ids))
		s.mu.RLock()
		out, ms, ok := s.machinesReadShared(req)
		s.mu.RUnlock()
		if ok {
			s.sharedReads.Add(1)
			if verifyListingCache {
				s.verifySharedListing(ms)
			}
			return out, nil
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.beginListing()()
	f := req.form
	var ms []*machine
	if ids, ok := f["id"]; ok {
		seen := make(map[string]bool, len(ids))
		for _, id := range ids {
			if m := s.machines[id]; m != nil && !seen[id] && s.matchesBut(m, f, "id") {
				seen[id] = true
				ms = append(ms, m)
			}
		}
	} else if cands, ok := s.candidates(f); ok {
		for _, m := range cands {
			if s.matches(m, f) {
				ms = append(ms, m)
			}
		}
		if verifyListingCache {
			s.verifyCandidates(f, ms)
		}
	} else {
		for _, m := range s.machines {
			if s.matches(m, f) {
				ms = append(ms, m)
			}
		}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].SystemID < ms[j].SystemID })
	return s.listMachines(ms), nil
}

func (s *Server) matches(m *machine, f formValues) bool { return s.matchesBut(m, f, "") }

// formAllows tells whether the form's filter key lets v through: it does
// when the form does not name key, or names v among its values.
func formAllows(f formValues, key, v string) bool {
	vals, ok := f[key]
	return !ok || slices.Contains(vals, v)
}

// matchesBut is matches without the filter skip (already applied).
func (s *Server) matchesBut(m *machine, f formValues, skip string) bool {
	in := func(key, v string) bool { return key == skip || formAllows(f, key, v) }
	if !in("id", m.SystemID) || !in("hostname", m.Hostname) || !in("agent_name", m.AgentName) ||
		!in("zone", orDefault(m.Zone, "default")) || !in("pool", orDefault(m.Pool, "default")) || !in("domain", m.Domain) {
		return false
	}
	if vals, ok := f["mac_address"]; ok && !slices.ContainsFunc(vals, func(mac string) bool { return m.hasMACNeedle(mac, s.macNeedleOf(mac)) }) {
		return false
	}
	if vals, ok := f["status"]; ok && !slices.ContainsFunc(vals, func(v string) bool { st, ok := statusByName(v); return ok && st == m.Status }) {
		return false
	}
	for _, t := range splitList(f["tags"]) {
		if !contains(m.Tags, t) {
			return false
		}
	}
	return true
}

func (m *machine) hasMAC(mac string) bool {
	for _, i := range m.Interfaces {
		if mayFoldEqual(i.MAC, mac) && strings.EqualFold(i.MAC, mac) {
			return true
		}
	}
	return false
}

// hasMACNeedle is hasMAC with macNeedle(mac) made once for a scan of
// every machine: a look in the machine's MACs joined in one string
// (machineMACs) instead of a walk through its interfaces.
func (m *machine) hasMACNeedle(mac, needle string) bool {
	c := m.machineMACs()
	if needle == "" || c.slow {
		return m.hasMAC(mac)
	}
	got := strings.Contains(c.joined, needle)
	if verifyListingCache && got != m.hasMAC(mac) {
		listingCacheStale.Add(1)
	}
	return got
}

// macNeedleOf is macNeedle(mac), made once for the machines a listing
// scans (the last one is kept; call it under the lock).
func (s *Server) macNeedleOf(mac string) string {
	if s.needleOf != mac || s.needle == "" {
		s.needleOf, s.needle = mac, macNeedle(mac)
	}
	return s.needle
}

// macNeedle is ",mac," in lower case, or "" when mac is not plain ASCII
// without commas (then only strings.EqualFold decides).
func macNeedle(mac string) string {
	for i := 0; i < len(mac); i++ {
		if mac[i] >= 0x80 || mac[i] == ',' {
			return ""
		}
	}
	return "," + strings.ToLower(mac) + ","
}

// machineMACs is the machine's MACs as ",mac1,mac2,", in lower case,
// kept while its rev stays (every change of its interfaces is a request
// on it, a phase's end or discoverInterfaces, which bump it); slow when
// a MAC is not plain ASCII without commas.
func (m *machine) machineMACs() *macSet {
	c := &m.macSet
	if c.valid && c.rev == m.rev {
		return c
	}
	var b strings.Builder
	b.WriteByte(',')
	slow := false
	for _, i := range m.Interfaces {
		if i.MAC == "" {
			continue
		}
		if macNeedle(i.MAC) == "" {
			slow = true
		}
		b.WriteString(strings.ToLower(i.MAC))
		b.WriteByte(',')
	}
	*c = macSet{joined: b.String(), rev: m.rev, valid: true, slow: slow}
	return c
}

// macSet is what machineMACs keeps.
type macSet struct {
	joined      string
	rev         uint64
	valid, slow bool
}

// mayFoldEqual is false when a and b can't be equal under case folding
// because their last bytes differ, as ASCII, by more than case: MACs
// differ at the end, and a scan of 10,000 machines' MACs mostly stops
// there. (A last byte of 0x80 or above ends a longer rune that may fold
// to ASCII: no verdict.)
func mayFoldEqual(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	x, y := a[len(a)-1], b[len(b)-1]
	return x >= 0x80 || y >= 0x80 || x|0x20 == y|0x20
}

// splitList accepts repeated keys and comma-separated values.
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, x := range strings.Split(v, ",") {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, x)
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// machinesCreate enlists a machine (POST /machines/).
func (s *Server) machinesCreate(req *request) (any, *apiError) {
	f := req.form
	macs := f["mac_addresses"]
	if len(macs) == 0 {
		return nil, badRequest("mac_addresses", "This field is required.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, mac := range macs {
		if o := s.machineWithMAC(mac, 1); o != nil {
			return nil, badRequest("mac_addresses", "One or more MAC addresses is invalid. ('MAC address %s already in use on %s.')", mac, o.Hostname)
		}
	}
	d := f.get("domain")
	if d != "" && s.domains[d] == nil {
		return nil, badRequest("domain", "Select a valid choice. That choice is not one of the available choices.")
	}
	z, p := f.get("zone"), f.get("pool")
	if z != "" && s.zones[z] == nil {
		return nil, badRequest("zone", "Select a valid choice. That choice is not one of the available choices.")
	}
	if p != "" && s.pools[p] == nil {
		return nil, badRequest("pool", "Select a valid choice. That choice is not one of the available choices.")
	}
	m := s.newMachine(f.get("hostname"), f.get("architecture"), macs)
	if d != "" {
		s.domainMoved(m.Domain, d)
		m.Domain = d
	}
	m.Zone, m.Pool = orDefault(z, m.Zone), orDefault(p, m.Pool)
	m.Description = f.get("description")
	m.PowerType = f.get("power_type")
	m.PowerParams = powerParamsFrom(f)
	s.addEvent(m, "Enlisting", "INFO", "Machine created by "+req.user)
	if paramTrue(f.get("commission")) {
		s.commissionOnCreate(m, f)
	}
	return s.machineJSON(m), nil // encoded under the lock (listing.go)
}

// commissionOnCreate is MachinesHandler.create's CommissionForm on the
// request's data: the machine commissions with its scripts and
// skip_bmc_config; a form that does not validate is silently ignored
// (MAAS's LP:1600328), the machine left New.
func (s *Server) commissionOnCreate(m *machine, f formValues) {
	comm, e1 := s.scriptChoice(f, "commissioning_scripts", scriptCommissioning, false)
	test, e2 := s.scriptChoice(f, "testing_scripts", scriptTesting, true)
	if mergeFieldErrors(e1, e2) != nil {
		return
	}
	skip := f.get("skip_bmc_config") == "1" || f.get("skip_bmc_config") == "true"
	m.Commission = CommissionRequest{Commissioning: comm, Testing: test, SkipBMCConfig: skip}
	s.startCommission(m, skip)
}

// newMachine registers a New machine with one physical interface per MAC.
func (s *Server) newMachine(hostname, arch string, macs []string) *machine {
	id := s.newSystemID()
	if hostname == "" {
		hostname = "node-" + id
	}
	if arch == "" {
		arch = "amd64/generic"
	}
	now := time.Now()
	m := &machine{SystemID: id, Hostname: hostname, Domain: s.opts.Domain, Status: StatusNew, Arch: arch,
		PowerState: "unknown", Zone: "default", Pool: "default", OwnerData: map[string]string{}, Netboot: true,
		Created: now, Updated: now}
	for n, mac := range macs {
		i := &iface{ID: s.nextID(), Name: "eth" + strconv.Itoa(n), Type: "physical", MAC: strings.ToLower(mac),
			VLANID: 5001, Enabled: true, MTU: 1500}
		m.Interfaces = append(m.Interfaces, i)
		if n == 0 {
			m.BootIfaceID = i.ID
		}
	}
	s.machines[id] = m
	s.domainMoved("", m.Domain)
	s.touch(m)
	s.indexMACs(m)
	return m
}

// machineWithMAC finds the machine with an interface of that MAC; call it
// with s.mu held. An index makes it O(1) (enlisting 10,000 machines one by
// one was quadratic with a scan of every interface). Handlers change
// interfaces without telling the index, so it is trusted only while no
// other write request is in flight and none has completed since it was
// built; else it is rebuilt, or bypassed while writes are in flight. self
// is 1 when the caller is itself a write request (whose own changes to
// interfaces go through indexMACs), else 0.
func (s *Server) machineWithMAC(mac string, self int64) *machine {
	mac = strings.ToLower(mac)
	needle := macNeedle(mac)
	if needle != "" && s.indexCurrent() {
		return s.byIndexedMAC(mac, needle)
	}
	if s.writesInFlight.Load() > self {
		return s.scanMAC(mac, needle)
	}
	m := s.macIndex(self)[mac]
	if m != nil && (s.machines[m.SystemID] != m || !m.hasMAC(mac)) {
		return s.scanMAC(mac, needle) // a stale entry: the index missed a change after all
	}
	return m
}

// scanMAC finds the machine with the MAC by looking at every machine.
func (s *Server) scanMAC(mac, needle string) *machine {
	for _, m := range s.machines {
		if m.hasMACNeedle(mac, needle) {
			return m
		}
	}
	return nil
}

// byIndexedMAC finds the machine with the MAC in the listing's index
// (checked against a scan when verifyListingCache is on).
func (s *Server) byIndexedMAC(mac, needle string) *machine {
	for _, m := range s.macMachines[mac] {
		if s.machines[m.SystemID] == m && m.hasMAC(mac) {
			if verifyListingCache && s.scanMAC(mac, needle) == nil {
				listingCacheStale.Add(1)
			}
			return m
		}
	}
	if verifyListingCache && s.scanMAC(mac, needle) != nil {
		listingCacheStale.Add(1)
		s.log.Error().Str("mac", mac).Msg("MAC index: missed a machine")
	}
	return nil
}

// macIndex is the MAC index, rebuilt when a write completed since it was
// built (self: see machineWithMAC).
func (s *Server) macIndex(self int64) map[string]*machine {
	done := s.writes.Load()
	gen := done + uint64(self) // the caller's own completion will not outdate the index
	if s.macIdx != nil && s.macIdxGen == done {
		s.macIdxGen = gen
	}
	if s.macIdx == nil || s.macIdxGen != gen {
		s.macIdx = make(map[string]*machine, 4*len(s.machines))
		for _, m := range s.machines {
			s.indexMACs(m)
		}
		s.macIdxGen = gen
	}
	return s.macIdx
}

// indexMACs adds m's interfaces to the MAC index.
func (s *Server) indexMACs(m *machine) {
	if s.macIdx == nil {
		return
	}
	for _, i := range m.Interfaces {
		if i.MAC != "" {
			s.macIdx[strings.ToLower(i.MAC)] = m
		}
	}
}

// unindexMACs takes m's interfaces out of the MAC index.
func (s *Server) unindexMACs(m *machine) {
	for _, i := range m.Interfaces {
		if k := strings.ToLower(i.MAC); s.macIdx[k] == m {
			delete(s.macIdx, k)
		}
	}
}

func powerParamsFrom(f formValues) PowerParams {
	p := PowerParams{}
	for k := range f {
		if name, ok := strings.CutPrefix(k, "power_parameters_"); ok {
			p[name] = f.get(k)
		}
	}
	return p
}

// renderAllocated is the machine as allocate answers it: with the
// constraints_by_type MAAS adds (which interfaces and storage matched the
// interfaces and storage constraints; gomaasapi requires the key).
func (s *Server) renderAllocated(m *machine) map[string]any {
	out := s.renderMachine(m)
	out["constraints_by_type"] = map[string]any{}
	return out
}

// paramTrue reads a MAAS boolean parameter.
func paramTrue(v string) bool {
	switch strings.ToLower(v) {
	case "true", "1", "on", "yes":
		return true
	}
	return false
}

// machinesRelease releases several machines (POST /machines/?op=release).
func (s *Server) machinesRelease(req *request) (any, *apiError) {
	ids := req.form["machines"]
	s.mu.Lock()
	defer s.mu.Unlock()
	var missing []string
	for _, id := range ids {
		if s.machines[id] == nil {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, badRequest("machines", "Unknown machine(s): %s.", strings.Join(missing, ", "))
	}
	// As MAAS: a Ready machine needs nothing; any other that cannot be
	// released fails the whole request (its transaction changes nothing).
	// The bulk op takes no erase parameters: MAAS's settings decide.
	var failed, released []string
	for _, id := range ids {
		m := s.machines[id]
		if m.Status != StatusReady && !releasable(m.Status) {
			failed = append(failed, fmt.Sprintf("%s ('%s')", id, StatusName(m.Status)))
		}
	}
	if len(failed) > 0 {
		return nil, conflict("Machine(s) cannot be released in their current state: %s.", strings.Join(failed, ", "))
	}
	for _, id := range ids {
		if s.machines[id].Status == StatusReady {
			continue
		}
		s.touch(s.machines[id]) // a write of these machines' (listing.go)
		s.startRelease(s.machines[id], s.eraseOf(formValues{}), req.form.get("comment"))
		released = append(released, id)
	}
	if released == nil {
		released = []string{}
	}
	return released, nil
}

func (s *Server) machinesPowerParameters(req *request) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := req.form["id"]
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	var ms []*machine
	for _, m := range s.machines {
		if len(ids) == 0 || want[m.SystemID] {
			ms = append(ms, m)
		}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].SystemID < ms[j].SystemID })
	// An object keyed by system ID, in order, as appendJSON writes a map;
	// each entry from the machine's cache (listing.go).
	parts := make([]rawJSON, len(ms))
	size := 2
	for i, m := range ms {
		parts[i] = s.cachedPowerParams(m)
		size += len(parts[i]) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p...)
	}
	return rawJSON(append(b, '}')), nil
}

func (s *Server) machineUpdate(m *machine, req *request) (any, *apiError) {
	f := req.form
	if h := f.get("hostname"); h != "" {
		m.Hostname = h
	}
	if f.has("description") {
		m.Description = f.get("description")
	}
	if pt := f.get("power_type"); pt != "" {
		m.PowerType = pt
	}
	if p := powerParamsFrom(f); len(p) > 0 {
		if m.PowerParams == nil {
			m.PowerParams = PowerParams{}
		}
		for k, v := range p {
			m.PowerParams[k] = v
		}
	}
	if z := f.get("zone"); z != "" {
		if s.zones[z] == nil {
			return nil, badRequest("zone", "Select a valid choice. That choice is not one of the available choices.")
		}
		m.Zone = z
	}
	if p := f.get("pool"); p != "" {
		if s.pools[p] == nil {
			return nil, badRequest("pool", "Select a valid choice. That choice is not one of the available choices.")
		}
		m.Pool = p
	}
	if d := f.get("domain"); d != "" {
		if s.domains[d] == nil {
			return nil, badRequest("domain", "Select a valid choice. That choice is not one of the available choices.")
		}
		s.domainMoved(m.Domain, d)
		m.Domain = d
	}
	if a := f.get("architecture"); a != "" {
		m.Arch = a
	}
	m.Updated = time.Now()
	return machineAnswer{m}, nil
}

func (s *Server) machineDelete(m *machine, _ *request) (any, *apiError) {
	if m.timer != nil {
		m.timer.Stop()
	}
	delete(s.machines, m.SystemID)
	s.domainMoved(m.Domain, "")
	return nil, nil
}

// move changes a machine's status, if MAAS allows it.
func (s *Server) move(m *machine, to int) bool {
	if !canMove(m.Status, to) {
		return false
	}
	if m.Status != to && !rescueOrTesting(m.Status) {
		m.PrevStatus = m.Status // as MAAS's pre_save_update_status
	}
	if m.Status != to && (to == StatusNew || to == StatusReady) {
		m.Owner = "" // as MAAS's clear_owner_when_status_changes_to_new_or_ready
	}
	s.setStatus(m, to)
	m.Updated = time.Now()
	return true
}

func stateError(m *machine, action string) *apiError {
	return conflict("%s: Cannot %s node because of its current state: '%s'.", m.Hostname, action, StatusName(m.Status))
}

func (s *Server) opCommission(m *machine, req *request) (any, *apiError) {
	if !canMove(m.Status, StatusCommissioning) || m.Status == StatusCommissioning {
		return nil, stateError(m, "commission")
	}
	if m.Locked {
		return nil, conflict("Cannot commission a locked machine.")
	}
	comm, e1 := s.scriptChoice(req.form, "commissioning_scripts", scriptCommissioning, false)
	test, e2 := s.scriptChoice(req.form, "testing_scripts", scriptTesting, true)
	if e := mergeFieldErrors(e1, e2); e != nil {
		return nil, e
	}
	skip := req.form.get("skip_bmc_config") == "1" || req.form.get("skip_bmc_config") == "true"
	m.Commission = CommissionRequest{Commissioning: comm, Testing: test, SkipBMCConfig: skip}
	s.startCommission(m, skip)
	return machineAnswer{m}, nil
}

func (s *Server) opDeploy(m *machine, req *request) (any, *apiError) {
	f := req.form
	switch m.Status {
	case StatusReady, StatusAllocated, StatusFailedDeployment:
	default:
		s.lifecycleOf(m).DeployRefused++
		return nil, stateError(m, "deploy")
	}
	if m.Status != StatusReady && m.Owner != "" && m.Owner != req.user {
		s.lifecycleOf(m).DeployRefused++
		return nil, errorf(http.StatusForbidden, "Machine is allocated to a different user.")
	}
	img, ierr := s.deployImage(orDefault(f.get("distro_series"), "jammy")) // bootres_deploy.go
	if ierr != nil {
		return nil, ierr
	}
	series := img.Series
	if k := f.get("hwe_kernel"); img.OSystem == "ubuntu" && (strings.HasPrefix(k, "ga-") || strings.HasPrefix(k, "hwe-")) && !s.haveKernel(series, k) {
		return nil, badRequest("hwe_kernel", "%s is not available for ubuntu/%s on %s.", k, series, orDefault(m.Arch, "amd64/generic"))
	}
	// Validated: a Ready machine is allocated to the caller on the way.
	if m.Status == StatusReady {
		if s.move(m, StatusAllocated) {
			s.lifecycleOf(m).Allocations++
		}
		m.Owner = req.user
	}
	m.OSystem, m.DistroSeries, m.HWEKernel, m.ImageSHA256 = img.OSystem, series, f.get("hwe_kernel"), ""
	if ud := f.get("user_data"); ud != "" {
		if b, err := base64.StdEncoding.DecodeString(ud); err == nil {
			m.UserData = b
		} else {
			m.UserData = []byte(ud)
		}
	}
	if a := f.get("agent_name"); a != "" {
		m.AgentName = a
	}
	if err := s.claimAutoIPs(m); err != nil {
		return nil, err
	}
	s.startDeploy(m)
	return machineAnswer{m}, nil
}

func releasable(st int) bool {
	switch st {
	case StatusAllocated, StatusDeployed, StatusDeploying, StatusFailedDeployment, StatusBroken, StatusFailedReleasing, StatusFailedDiskErasing:
		return true
	}
	return false
}

func (s *Server) opRelease(m *machine, req *request) (any, *apiError) {
	if m.Status == StatusReady || m.Status == StatusReleasing {
		// MAAS: nothing to do, a redundant retry whose postcondition holds.
		return machineAnswer{m}, nil
	}
	if !releasable(m.Status) {
		return nil, conflict("Machine cannot be released in its current state ('%s').", StatusName(m.Status))
	}
	s.startRelease(m, s.eraseOf(req.form), req.form.get("comment"))
	return machineAnswer{m}, nil
}

// opAbort stops a running operation as Node.abort_operation does:
// commissioning goes back to New, even a machine commissioned before
// (MAAS's _abort_commissioning_async sets NEW whatever came before), deploying to
// Allocated, disk erasing to Failed disk erasing, testing to the status
// before it (Ready when testing followed commissioning), the machine
// powered off. Any other state is MAAS's NodeStateViolation (409).
func (s *Server) opAbort(m *machine, _ *request) (any, *apiError) {
	aborted := map[int]string{StatusCommissioning: "commissioning", StatusDeploying: "deployment",
		StatusDiskErasing: "disk erasing", StatusTesting: "testing"}[m.Status]
	switch m.Status {
	case StatusCommissioning:
		s.cancelPhase(m)
		s.setStatus(m, StatusNew)
		m.Owner = "" // clear_owner_when_status_changes_to_new_or_ready
		_ = s.power(m, "off")
	case StatusDeploying:
		s.cancelPhase(m)
		s.setStatus(m, StatusAllocated)
	case StatusDiskErasing:
		s.cancelPhase(m)
		s.setStatus(m, StatusFailedDiskErasing)
		_ = s.power(m, "off")
	case StatusTesting:
		s.cancelPhase(m)
		to := m.PrevStatus
		if to == StatusCommissioning {
			to = StatusReady
		}
		if to == StatusNew || to == StatusReady {
			m.Owner = "" // the owner testing gave it (clear_owner_when_status_changes_to_new_or_ready)
		}
		s.setStatus(m, to)
		m.StatusMessage = ""
		_ = s.power(m, "off")
	default:
		return nil, conflict("Cannot abort in current state: node %s is in state %s.", m.SystemID, StatusName(m.Status))
	}
	m.Updated = time.Now()
	s.addEvent(m, "Aborted "+aborted, "INFO", "operation aborted")
	return machineAnswer{m}, nil
}

// opMarkBroken marks the machine Broken as MAAS does: only its owner may
// (the API answers 403 to anyone else, admins included, and so for an
// unowned machine); a machine in a releasable state is released on the
// way (agent name and OS cleared, powered off; one already off is
// released at once, losing its owner and owner data) and keeps its
// earlier status for mark_fixed.
func (s *Server) opMarkBroken(m *machine, req *request) (any, *apiError) {
	if m.Owner != req.user {
		return nil, errorf(http.StatusForbidden, "")
	}
	if m.Status == StatusBroken {
		return machineAnswer{m}, nil
	}
	if !canMove(m.Status, StatusBroken) {
		return nil, transitionError(m.Status, StatusBroken)
	}
	s.cancelPhase(m)
	if releasable(m.Status) {
		wasOff := m.PowerState == "off"
		m.AgentName, m.OSystem, m.DistroSeries, m.HWEKernel, m.UserData, m.ImageSHA256 = "", "", "", "", nil, ""
		if wasOff {
			s.releaseAutoIPs(m)
			m.Owner, m.OwnerData = "", map[string]string{}
		} else {
			_ = s.power(m, "off")
		}
	}
	s.move(m, StatusBroken)
	m.StatusMessage = req.form.get("comment")
	s.addEvent(m, "User marking node broken", "DEBUG", orDefault(m.StatusMessage, "mark broken"))
	return machineAnswer{m}, nil
}

func (s *Server) opMarkFixed(m *machine, _ *request) (any, *apiError) {
	if m.Status != StatusBroken {
		return nil, conflict("Can't mark a non-broken node as 'Ready'.")
	}
	if m.PrevStatus == StatusDeployed {
		s.move(m, StatusDeployed)
	} else {
		s.move(m, StatusReady)
	}
	m.StatusMessage = ""
	m.OSystem, m.DistroSeries, m.HWEKernel, m.ImageSHA256 = "", "", "", "" // as MAAS's mark_fixed, even back to Deployed
	s.addEvent(m, "User marking node fixed", "DEBUG", "mark fixed")
	return machineAnswer{m}, nil
}

func (s *Server) opPowerOn(m *machine, _ *request) (any, *apiError) {
	if m.PowerType == "" {
		return nil, errorf(http.StatusServiceUnavailable, "Unavailable power type: no power type set for %s", m.Hostname)
	}
	if err := s.power(m, "on"); err != nil {
		return nil, err
	}
	return machineAnswer{m}, nil
}

func (s *Server) opPowerOff(m *machine, _ *request) (any, *apiError) {
	if m.PowerType == "" {
		return nil, errorf(http.StatusServiceUnavailable, "Unavailable power type: no power type set for %s", m.Hostname)
	}
	if err := s.power(m, "off"); err != nil {
		return nil, err
	}
	return machineAnswer{m}, nil
}

func (s *Server) opQueryPower(m *machine, _ *request) (any, *apiError) {
	if err := s.power(m, "query"); err != nil {
		return nil, err
	}
	return map[string]any{"state": m.PowerState}, nil
}

func (s *Server) opPowerParameters(m *machine, _ *request) (any, *apiError) {
	return powerParamsJSON(m.PowerParams), nil
}

func (s *Server) opSetOwnerData(m *machine, req *request) (any, *apiError) {
	if m.OwnerData == nil {
		m.OwnerData = map[string]string{}
	}
	for k := range req.form {
		if k == "op" {
			continue
		}
		if v := req.form.get(k); v == "" {
			delete(m.OwnerData, k)
		} else {
			m.OwnerData[k] = v
		}
	}
	return machineAnswer{m}, nil
}

func (s *Server) opLock(m *machine, _ *request) (any, *apiError) {
	if m.Status != StatusDeployed && m.Status != StatusDeploying {
		return nil, conflict("Cannot lock machine in state %s.", StatusName(m.Status))
	}
	m.Locked = true
	return machineAnswer{m}, nil
}

func (s *Server) opUnlock(m *machine, _ *request) (any, *apiError) {
	m.Locked = false
	return machineAnswer{m}, nil
}

// configurable reports whether a machine's networking and storage may be
// changed: MAAS allows it in Ready, Allocated, Broken (and a few more).
func configurable(st int) bool {
	switch st {
	case StatusReady, StatusAllocated, StatusBroken, StatusFailedDeployment, StatusNew, StatusFailedCommissioning:
		return true
	}
	return false
}

func (s *Server) opRestoreNetworking(m *machine, _ *request) (any, *apiError) {
	if !configurable(m.Status) {
		return nil, stateError(m, "restore networking configuration of")
	}
	s.discoverInterfaces(m)
	return machineAnswer{m}, nil
}

func (s *Server) opRestoreStorage(m *machine, _ *request) (any, *apiError) {
	if !configurable(m.Status) {
		return nil, stateError(m, "restore storage configuration of")
	}
	s.discoverDisks(m)
	return machineAnswer{m}, nil
}

func (s *Server) opRestoreDefault(m *machine, req *request) (any, *apiError) {
	if !configurable(m.Status) {
		return nil, stateError(m, "restore default configuration of")
	}
	s.discoverInterfaces(m)
	s.discoverDisks(m)
	return machineAnswer{m}, nil
}

// power acts through the power driver (the lab's BMCs) and records the state.
func (s *Server) power(m *machine, action string) *apiError {
	if m.PowerType == "manual" {
		// MAAS's manual power driver cannot be queried (the state is
		// recorded as unknown) and its actions only log that a person
		// must act.
		if action == "query" {
			m.PowerState = "unknown"
		}
		return nil
	}
	if s.faults.machine(m.Hostname).BMCUnreachable {
		m.PowerState = "error"
		return errorf(http.StatusServiceUnavailable, "Failed to query node's BMC - Power state could not be queried: connection timed out")
	}
	if s.opts.Power == nil || m.PowerType == "" {
		switch action {
		case "on", "cycle":
			m.PowerState = "on"
		case "off":
			m.PowerState = "off"
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := s.opts.Power.Power(ctx, m.PowerParams, action)
	if err != nil {
		m.PowerState = "error"
		return errorf(http.StatusServiceUnavailable, "Failed to %s %s: %v", action, m.Hostname, err)
	}
	m.PowerState = st
	return nil
}

// haveKernel: like MAAS (validate_hwe_kernel), a ga-/hwe- kernel is
// available for a series when a boot resource of the image has it as
// its subarchitecture.
func (s *Server) haveKernel(series, kernel string) bool {
	for _, b := range s.bootRes {
		if _, k, _ := strings.Cut(b.Architecture, "/"); b.Name == "ubuntu/"+series && k == kernel {
			return true
		}
	}
	return false
}
