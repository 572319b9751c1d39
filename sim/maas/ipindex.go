package maas

import "net/netip"

// The IP index. Linking a static address asks whether any link of any
// machine holds it (ipInUse): at 10,000 machines a walk through every
// machine's interfaces and links for each of 30,000 link_subnet calls was
// a third of the simulator's time. The index counts the links holding
// each address; it follows the machines touched since (every change of a
// machine's links is a request on it, a phase end or its creation: all
// touch it) and is rebuilt when a write elsewhere (networking) may have
// changed any machine's links (sharedRev, as the listing cache).

// touch marks m changed: its cached JSON and MACs are stale, its
// addresses are to be indexed again. Call it under the lock.
func (s *Server) touch(m *machine) {
	m.rev++
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
	// As cachedMachine: sharedWrites before sharedRev.
	if s.sharedWrites.Load() > 0 {
		return s.ipInUseScan(a)
	}
	shared := s.sharedRev.Load()
	if s.ipIdx == nil || s.ipIdxShared != shared {
		s.ipIdx = make(map[netip.Addr]int, len(s.machines)*2)
		for _, m := range s.ipDirty {
			m.ipDirty = false
		}
		s.ipDirty = s.ipDirty[:0]
		for _, m := range s.machines {
			m.ipAddrs = linkAddrs(m, m.ipAddrs[:0])
			for _, x := range m.ipAddrs {
				s.ipIdx[x]++
			}
		}
		s.ipIdxShared = shared
	}
	for _, m := range s.ipDirty {
		for _, x := range m.ipAddrs {
			if s.ipIdx[x]--; s.ipIdx[x] <= 0 {
				delete(s.ipIdx, x)
			}
		}
		m.ipAddrs = m.ipAddrs[:0]
		if s.machines[m.SystemID] == m {
			m.ipAddrs = linkAddrs(m, m.ipAddrs)
			for _, x := range m.ipAddrs {
				s.ipIdx[x]++
			}
		}
		m.ipDirty = false
	}
	s.ipDirty = s.ipDirty[:0]
	return s.ipIdx[a] > 0
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
