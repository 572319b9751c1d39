package maas

import (
	"bytes"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// POST /machines/?op=allocate, as MAAS's AcquireNodeForm matches: the
// constraints system_id, name (hostname or FQDN), zone and pool (any of
// the values), tags (every one; not_tags none), cpu_count and mem
// (at least, MiB). A zone, pool or tag MAAS does not have, and a number
// that does not parse, are the form's 400 errors; when no Ready machine
// matches, 409 with MAAS's message. The cheapest match is taken
// (cpu_count + memory/1024, as MAAS orders them), ties by system ID.

// allocConstraints are the parsed constraints.
type allocConstraints struct {
	systemIDs, names, zones, pools, tags, notTags []string
	cpu, mem                                      float64
	hasCPU, hasMem                                bool
}

func (s *Server) parseAllocate(f formValues) (allocConstraints, *apiError) {
	var c allocConstraints
	c.systemIDs, c.names = nonEmpty(f["system_id"]), nonEmpty(f["name"])
	c.zones, c.pools = nonEmpty(f["zone"]), nonEmpty(f["pool"])
	c.tags, c.notTags = legacyTags(f["tags"]), legacyTags(f["not_tags"])
	num := func(key, msg string) (float64, bool, *apiError) {
		best, has := 0.0, false
		for _, v := range nonEmpty(f[key]) {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
				return 0, false, badRequest(key, "%s", msg)
			}
			best, has = max(best, n), true
		}
		return best, has, nil
	}
	var err *apiError
	if c.cpu, c.hasCPU, err = num("cpu_count", "Invalid CPU count: number required."); err != nil {
		return c, err
	}
	if c.mem, c.hasMem, err = num("mem", "Invalid memory: number of MiB required."); err != nil {
		return c, err
	}
	if missing := missingNames(c.zones, func(n string) bool { return s.zones[n] != nil }); len(missing) > 0 {
		if len(c.zones) > 1 {
			return c, badRequest("zone", "No such zone(s): %s.", strings.Join(missing, ", "))
		}
		return c, badRequest("zone", "No such zone: '%s'.", missing[0])
	}
	if missing := missingNames(c.pools, func(n string) bool { return s.pools[n] != nil }); len(missing) > 0 {
		if len(c.pools) > 1 {
			return c, badRequest("pool", "No such pool(s): %s.", strings.Join(missing, ", "))
		}
		return c, badRequest("pool", "No such pool: '%s'.", missing[0])
	}
	if missing := missingNames(c.tags, func(n string) bool { return s.tags[n] != nil }); len(missing) > 0 {
		quoted := make([]string, len(missing))
		for i, t := range missing {
			quoted[i] = "'" + t + "'"
		}
		return c, badRequest("tags", "No such tag(s): %s.", strings.Join(quoted, ", "))
	}
	return c, nil
}

func (c *allocConstraints) match(m *machine) bool {
	if len(c.systemIDs) > 0 && !contains(c.systemIDs, m.SystemID) {
		return false
	}
	if len(c.names) > 0 && !contains(c.names, m.Hostname) && !contains(c.names, m.fqdn()) {
		return false
	}
	if len(c.zones) > 0 && !contains(c.zones, orDefault(m.Zone, "default")) {
		return false
	}
	if len(c.pools) > 0 && !contains(c.pools, orDefault(m.Pool, "default")) {
		return false
	}
	for _, t := range c.tags {
		if !contains(m.Tags, t) {
			return false
		}
	}
	for _, t := range c.notTags {
		if contains(m.Tags, t) {
			return false
		}
	}
	if c.hasCPU && float64(m.CPUCount) < c.cpu {
		return false
	}
	if c.hasMem && float64(m.MemoryMiB) < c.mem {
		return false
	}
	return true
}

// describe is MAAS's describe_constraints: name=value for each set
// constraint, by name.
func (c *allocConstraints) describe() string {
	var parts []string
	add := func(name string, vals []string) {
		if len(vals) > 0 {
			parts = append(parts, name+"="+strings.Join(vals, ","))
		}
	}
	if c.hasCPU {
		parts = append(parts, "cpu_count="+pyFloat(c.cpu))
	}
	if c.hasMem {
		parts = append(parts, "mem="+pyFloat(c.mem))
	}
	add("name", c.names)
	add("not_tags", c.notTags)
	add("pool", c.pools)
	add("system_id", c.systemIDs)
	add("tags", c.tags)
	add("zone", c.zones)
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// machinesAllocate takes the cheapest Ready machine that matches.
func (s *Server) machinesAllocate(req *request) (any, *apiError) {
	f := req.form
	s.mu.Lock()
	defer s.mu.Unlock()
	c, aerr := s.parseAllocate(f)
	if aerr != nil {
		return nil, aerr
	}
	pool := sortedMachines
	if len(c.systemIDs) == 1 { // only that one can match: don't sort 10,000
		id := c.systemIDs[0]
		pool = func(ms map[string]*machine) []*machine {
			if m := ms[id]; m != nil {
				return []*machine{m}
			}
			return nil
		}
	}
	var best *machine
	bestCost := 0.0
	for _, m := range pool(s.machines) {
		if m.Status != StatusReady || m.Locked || !c.match(m) {
			continue
		}
		cost := float64(m.CPUCount) + float64(m.MemoryMiB)/1024
		if best == nil || cost < bestCost {
			best, bestCost = m, cost
		}
	}
	if best == nil {
		desc := c.describe()
		switch {
		case desc == "":
			return nil, conflict("No machine available.")
		case len(f["system_id"]) > 0:
			return nil, conflict("No machine with system ID %s available.", f.get("system_id"))
		}
		return nil, conflict("No available machine matches constraints: %s (resolved to \"%s\")", inputConstraints(f), desc)
	}
	m := best
	if paramTrue(f.get("dry_run")) {
		return s.renderAllocated(m), nil
	}
	s.touchParts(m, partNone) // a write of one machine's (listing.go): its owner and status
	// The owner before the status: the status change's event names it.
	m.Owner, m.AgentName, m.Comment = req.user, f.get("agent_name"), f.get("comment")
	if s.move(m, StatusAllocated) {
		s.lifecycleOf(m).Allocations++
	}
	s.addEvent(m, "Allocated", "INFO", "allocated to "+req.user)
	return s.allocatedJSON(m), nil
}

// constraintsByType is the key allocate's answer adds to the machine's
// JSON, before the first key that sorts after it (cpu_count: no part
// of a machine's JSON before it has that key, and a string in it would
// have its quotes escaped).
var constraintsByType, afterConstraints = []byte(`,"constraints_by_type":{}`), []byte(`,"cpu_count":`)

// allocatedJSON is renderAllocated(m) encoded: the machine's JSON as
// writtenJSON renders it (not kept: the engine writes the machine next),
// with constraintsByType put in. Call it under the lock, after the last
// change.
func (s *Server) allocatedJSON(m *machine) any {
	j, ok := s.writtenJSON(m).(pooledJSON)
	if !ok { // not expected: encoding/json decides
		return s.renderAllocated(m)
	}
	i := bytes.Index(*j.buf, afterConstraints)
	if i < 0 { // not expected
		j.release()
		return s.renderAllocated(m)
	}
	*j.buf = slices.Insert(*j.buf, i, constraintsByType...)
	if verifyListingCache {
		if fresh, err := appendJSON(nil, s.renderAllocated(m)); err == nil && !bytes.Equal(fresh, *j.buf) {
			listingCacheStale.Add(1)
			s.log.Error().Str("system_id", m.SystemID).Msg("allocate: answer differs from a fresh rendering")
		}
	}
	return j
}

// inputConstraints is the request's parameters but op as MAAS logs them
// (Python's repr of request.data.lists(); sorted by name here, a form
// having no order).
func inputConstraints(f formValues) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		if k != "op" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		vals := make([]string, len(f[k]))
		for i, v := range f[k] {
			vals[i] = "'" + v + "'"
		}
		parts = append(parts, "('"+k+"', ["+strings.Join(vals, ", ")+"])")
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// legacyTags splits tag values on commas and white space, as MAAS's
// parse_legacy_tags does.
func legacyTags(vals []string) []string {
	var out []string
	for _, v := range vals {
		out = append(out, strings.FieldsFunc(v, func(r rune) bool {
			return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v'
		})...)
	}
	return out
}

func nonEmpty(vals []string) []string {
	var out []string
	for _, v := range vals {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

func missingNames(names []string, exists func(string) bool) []string {
	var out []string
	for _, n := range names {
		if !exists(n) {
			out = append(out, n)
		}
	}
	return out
}

// pyFloat writes a float as Python's str does (16.0, 1024.5).
func pyFloat(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}
