package maas

import (
	"net/netip"
	"strings"
)

// The indexes: link addresses, MACs and hostnames. Linking a static address asks whether any link of any
// machine holds it (ipInUse): at 10,000 machines a walk through every
// machine's interfaces and links for each of 30,000 link_subnet calls was
// a third of the simulator's time. The index counts the links holding
// each address; it follows the machines touched since (every change of a
// machine's links is a request on it, a phase end or its creation: all
// touch it) and is rebuilt when a write elsewhere (networking) may have
// changed any machine's links (sharedRev, as the listing cache). The
// MAC and hostname indexes follow the same way: a node's identification
// lists machines by hostname and by MAC and enlists with its MACs, and a
// walk through 10,000 machines for each was most of what the simulator
// did then.

// touch marks m changed: its cached JSON and MACs are stale, its
// addresses are to be indexed again. Call it under the lock.
func (s *Server) touch(m *machine) { s.touchParts(m, partsAll) }

// touchParts is touch for a change that may show only in the parts of
// m's JSON that p names (render_parts.go): the others stay cached.
func (s *Server) touchParts(m *machine, p part) {
	m.rev++
	m.parts.touch(p)
	m.dropStale(p)
	if !m.ipDirty {
		m.ipDirty = true
		s.ipDirty = append(s.ipDirty, m)
	}
}

// ipInUse reports whether an interface link holds the address.
func (s *Server) ipInUse(a netip.Addr) bool {
	got := s.ipIndexed(a)
	if verifyListingCache && got != s.ipInUseScan(a) {
		listingCacheStale.Add(1)
		s.log.Error().Str("ip", a.String()).Msg("IP index: wrong answer")
	}
	return got
}

func (s *Server) ipIndexed(a netip.Addr) bool {
	if !s.indexCurrent() {
		return s.ipInUseScan(a)
	}
	return s.ipIdx[a] > 0
}

// indexCurrent brings the indexes (addresses, MACs, hostnames) up to
// date with the machines touched since; false when a write elsewhere is
// in flight and only a scan can answer.
func (s *Server) indexCurrent() bool {
	// As cachedMachine: sharedWrites before sharedRev.
	if s.sharedWrites.Load() > 0 {
		return false
	}
	shared := s.sharedRev.Load()
	if s.ipIdx == nil || s.ipIdxShared != shared {
		s.ipIdx = make(map[netip.Addr]int, len(s.machines)*2)
		s.macMachines = make(map[string][]*machine, len(s.machines)*4)
		s.hostMachines = make(map[string][]*machine, len(s.machines))
		for _, m := range s.ipDirty {
			m.ipDirty = false
		}
		s.ipDirty = s.ipDirty[:0]
		for _, m := range s.machines {
			s.indexMachine(m)
		}
		s.ipIdxShared = shared
	}
	for _, m := range s.ipDirty {
		s.unindexMachine(m)
		if s.machines[m.SystemID] == m {
			s.indexMachine(m)
		}
		m.ipDirty = false
	}
	s.ipDirty = s.ipDirty[:0]
	return true
}

// indexMachine adds m's addresses, MACs and hostname to the indexes,
// and remembers them on m.
func (s *Server) indexMachine(m *machine) {
	m.ipAddrs = linkAddrs(m, m.ipAddrs[:0])
	for _, x := range m.ipAddrs {
		s.ipIdx[x]++
	}
	m.idxMACs = m.idxMACs[:0]
	for _, i := range m.Interfaces {
		if i.MAC != "" {
			k := strings.ToLower(i.MAC)
			m.idxMACs = append(m.idxMACs, k)
			s.macMachines[k] = append(s.macMachines[k], m)
		}
	}
	m.idxHost = m.Hostname
	s.hostMachines[m.idxHost] = append(s.hostMachines[m.idxHost], m)
}

// unindexMachine takes out what indexMachine put in for m.
func (s *Server) unindexMachine(m *machine) {
	for _, x := range m.ipAddrs {
		if s.ipIdx[x]--; s.ipIdx[x] <= 0 {
			delete(s.ipIdx, x)
		}
	}
	m.ipAddrs = m.ipAddrs[:0]
	for _, k := range m.idxMACs {
		s.macMachines[k] = without(s.macMachines[k], m)
		if len(s.macMachines[k]) == 0 {
			delete(s.macMachines, k)
		}
	}
	m.idxMACs = m.idxMACs[:0]
	s.hostMachines[m.idxHost] = without(s.hostMachines[m.idxHost], m)
	if len(s.hostMachines[m.idxHost]) == 0 {
		delete(s.hostMachines, m.idxHost)
	}
}

func without(ms []*machine, m *machine) []*machine {
	for i, x := range ms {
		if x == m {
			return append(ms[:i:i], ms[i+1:]...)
		}
	}
	return ms
}

// candidates are the machines a listing filtered by hostname or MAC can
// match, from the indexes (nil, false: look at every machine). Each is
// still put through matches.
func (s *Server) candidates(f formValues) ([]*machine, bool) {
	hosts, byHost := f["hostname"]
	macs, byMAC := f["mac_address"]
	if !byHost && !byMAC {
		return nil, false
	}
	for _, mac := range macs {
		if macNeedle(mac) == "" { // not plain: only EqualFold decides
			byMAC = false
		}
	}
	if (!byHost && !byMAC) || !s.indexCurrent() {
		return nil, false
	}
	seen := map[*machine]bool{}
	var out []*machine
	add := func(ms []*machine) {
		for _, m := range ms {
			if !seen[m] && s.machines[m.SystemID] == m {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	if byHost { // every match has one of these hostnames
		for _, h := range hosts {
			add(s.hostMachines[h])
		}
	} else {
		for _, mac := range macs {
			add(s.macMachines[strings.ToLower(mac)])
		}
	}
	return out, true
}

// linkAddrs appends the addresses m's links hold.
func linkAddrs(m *machine, out []netip.Addr) []netip.Addr {
	for _, i := range m.Interfaces {
		for _, l := range i.Links {
			if b, ok := l.parsedIP(); ok {
				out = append(out, b)
			}
		}
	}
	return out
}
