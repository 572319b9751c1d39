package maas

import (
	"bytes"
	"sort"
)

// Reads beside reads. The simulator's lock (Server.mu) is a RWMutex:
// every request that changes anything, phase ends and whatever fills a
// cache hold it alone, as before; the reads a rollout sends most
// answer under its read lock, side by side, when they can do so without
// changing anything:
//
//   - a machine read (GET /machines/{system_id}/) and the batched poll
//     (GET /machines/?id=...&id=...): each machine's JSON from the
//     listing cache (listing.go), rendered into it first when it is not
//     current, under the machine's renderMu (the cache and the parts
//     are the machine's own; the VLAN and subnet JSON have jsonMu), the
//     domain rendered from the kept domain counts;
//   - the commissioning details (op=details), made from the hardware.
//
// A read that would have to count the domains, one while a write that
// may change any machine is in flight, or a listing with other filters,
// lets the read lock go and runs alone as before. In a 1,000-node
// rollout, reads holding the lock alone were 40% of the time requests
// waited for it.
//
// The tests (verifyListingCache) check each such answer, once the read
// lock is let go, against a fresh rendering under the lock while the
// machine is unchanged.

// sharedHandler answers a read under the read lock; ok false when it
// would change something (then the request runs alone).
type sharedHandler func(s *Server, m *machine, req *request) (out any, err *apiError, ok bool)

// readShared is readMachine for a read that may run beside other reads:
// shared under the read lock, else alone as readMachine runs slow.
func (s *Server) readShared(shared sharedHandler, slow machineHandler) handler {
	alone := s.readMachine(slow)
	return func(s *Server, req *request) (any, *apiError) {
		s.mu.RLock()
		m := s.machines[req.params["system_id"]]
		if m == nil {
			s.mu.RUnlock()
			return nil, notFound("Machine")
		}
		out, err, ok := shared(s, m, req)
		served := s.servedAs(m)
		s.mu.RUnlock()
		if !ok {
			return alone(s, req)
		}
		s.sharedReads.Add(1)
		if verifyListingCache {
			s.verifySharedRead(m, out, served)
		}
		return out, err
	}
}

// machineReadShared answers the machine from the listing cache.
func (s *Server) machineReadShared(m *machine, _ *request) (any, *apiError, bool) {
	domains := make(map[*domain]rawJSON, 1)
	h, d, t, ok := s.keptMachine(m, domains)
	if !ok {
		return nil, nil, false
	}
	buf := answerBuffers.Get().(*[]byte)
	*buf = append(append(append((*buf)[:0], h...), d...), t...)
	return pooledJSON{buf}, nil, true
}

// opDetailsShared: the details change nothing.
func (s *Server) opDetailsShared(m *machine, req *request) (any, *apiError, bool) {
	out, err := s.opDetails(m, req)
	return out, err, true
}

// keptMachine is cachedMachine's answer under the read lock: the
// machine's JSON from its cache, rendered into it first when not
// current (m.renderMu held: the caches are the machine's own, and the
// VLAN and subnet JSON have their own lock), the domain from the kept
// counts (domainCount changes nothing). ok false when that cannot be:
// the domain counts are not kept, or a write that may change any
// machine is in flight. domains holds the domains' JSON rendered by
// this answer so far.
func (s *Server) keptMachine(m *machine, domains map[*domain]rawJSON) (head, domain, tail rawJSON, ok bool) {
	if s.domainCounts == nil {
		return nil, nil, nil, false
	}
	m.renderMu.Lock()
	defer m.renderMu.Unlock()
	busy := s.sharedWrites.Load() > 0 // before sharedRev: see cachedMachine
	shared := s.sharedRev.Load()
	if busy {
		return nil, nil, nil, false
	}
	c := &m.rendered
	if (!c.valid || c.rev != m.rev || c.shared != shared) && !s.renderListed(m, shared, false) {
		return nil, nil, nil, false
	}
	d := s.domainOf(m)
	dj, ok := domains[d]
	if !ok {
		b, err := appendJSON(nil, s.renderDomain(d))
		if err != nil {
			return nil, nil, nil, false
		}
		dj, domains[d] = b, b
	}
	return c.json, dj, c.tail, true
}

// machinesReadShared answers a listing by system IDs alone (the
// engine's poll) from the cache, every machine's JSON current.
func (s *Server) machinesReadShared(req *request) (any, []*machine, bool) {
	for k := range req.form {
		if k != "id" {
			return nil, nil, false
		}
	}
	ids := req.form["id"]
	ms := make([]*machine, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if m := s.machines[id]; m != nil && !seen[id] {
			seen[id] = true
			ms = append(ms, m)
		}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].SystemID < ms[j].SystemID })
	parts := make([]listedParts, len(ms))
	domains := map[*domain]rawJSON{}
	for i, m := range ms {
		h, d, t, ok := s.keptMachine(m, domains)
		if !ok {
			return nil, nil, false
		}
		parts[i] = listedParts{h, d, t}
	}
	return assembleListing(parts), ms, true
}

// verifySharedListing checks the machines a listing answered under the
// read lock, those still as they were, against fresh renderings (tests:
// verifyListingCache).
func (s *Server) verifySharedListing(ms []*machine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range ms {
		c := &m.rendered
		if s.sharedWrites.Load() > 0 || c.rev != m.rev || c.shared != s.sharedRev.Load() || s.machines[m.SystemID] != m {
			continue // changed since: nothing to compare with
		}
		d := s.domainOf(m)
		if dj, err := appendJSON(nil, s.renderDomain(d)); err == nil {
			s.verifyCached(m, c.json, dj, c.tail)
		}
	}
}

// servedState is what a machine's JSON was answered from: its
// revision, the shared revision and its domain's machine count.
type servedState struct {
	rev, shared uint64
	domain      int
}

// servedAs is m's servedState now; call it under the lock (either).
func (s *Server) servedAs(m *machine) servedState {
	n := -1
	if s.domainCounts != nil {
		n = s.domainCounts[m.Domain]
	}
	return servedState{rev: m.rev, shared: s.sharedRev.Load(), domain: n}
}

// verifySharedRead checks a machine read answered under the read lock
// against a fresh rendering, when the machine is still as it was then
// (tests: verifyListingCache).
func (s *Server) verifySharedRead(m *machine, out any, served servedState) {
	p, ok := out.(pooledJSON)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sharedWrites.Load() > 0 || s.servedAs(m) != served || s.machines[m.SystemID] != m {
		return // changed since: nothing to compare with
	}
	s.freshRender = true
	fresh, err := appendJSON(nil, s.renderMachine(m))
	s.freshRender = false
	if err == nil && !bytes.Equal(fresh, *p.buf) {
		listingCacheStale.Add(1)
		s.log.Error().Str("system_id", m.SystemID).Msg("shared read: stale JSON served")
	}
}
