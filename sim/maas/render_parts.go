package maas

import "bytes"

// The parts of a machine's JSON. Its interfaces and its block devices
// are most of a machine's JSON and most of what rendering it costs,
// yet most writes on a machine in a rollout change neither: owner data,
// tags, allocation and a deployment's end change its status and owner;
// an interface request changes no disk, a storage request no
// interface. Each part is kept with a revision of its own, bumped by
// the changes that may show in it (touchParts; touch bumps every part),
// and the shared revision, as the listing cache keeps the whole
// (listing.go): a write elsewhere (a VLAN, a subnet) renders them anew.
//
// The tests (verifyListingCache) check every part taken from the cache
// against a fresh rendering, as they check the whole.

// part names parts of a machine's JSON.
type part uint8

const (
	partIfaces part = 1 << iota // interface_set, boot_interface, ip_addresses
	partDisks                   // the block device sets, storage, boot_disk
	partNone   part = 0
	partsAll        = partIfaces | partDisks
)

// machineParts are a machine's parts as last rendered, and the
// revisions of what they show.
type machineParts struct {
	ifaceRev, diskRev uint64
	ifaces            ifacesPart
	disks             disksPart
}

func (p *machineParts) touch(which part) {
	if which&partIfaces != 0 {
		p.ifaceRev++
	}
	if which&partDisks != 0 {
		p.diskRev++
	}
}

// dropStale lets go of the JSON kept of m that a change to its parts p
// made stale (touchParts): it is never served again (its revision is
// behind), and 10,000 machines held some 150 MB of it until their next
// rendering.
func (m *machine) dropStale(p part) {
	m.rendered = listed{}
	if p&partIfaces != 0 {
		m.parts.ifaces = ifacesPart{}
	}
	if p&partDisks != 0 {
		m.parts.disks = disksPart{}
	}
}

// ifacesPart is renderMachineInterfaces' answer: each interface encoded
// (rawJSON), never changed once made, so answers may share it.
type ifacesPart struct {
	rev, shared uint64
	valid       bool
	ifaces      []any
	boot        any
	ips         []string
}

// disksPart is renderMachineDisks' answer, each device encoded.
type disksPart struct {
	rev, shared uint64
	valid       bool
	physical    []any
	all         []any
	virtual     []any
	storage     float64
	boot        any
}

// machineIfaces is renderMachineInterfaces(m), kept while nothing that
// shows in it changed. Call it under the lock.
func (s *Server) machineIfaces(m *machine) (ifaces []any, boot any, ips []string) {
	if s.freshRender {
		return s.renderMachineInterfaces(m)
	}
	busy := s.sharedWrites.Load() > 0 // before sharedRev: see cachedMachine
	shared := s.sharedRev.Load()
	c := &m.parts.ifaces
	if c.valid && !busy && c.rev == m.parts.ifaceRev && c.shared == shared {
		if verifyListingCache {
			f, fb, fi := s.renderMachineInterfaces(m)
			s.verifyPart(m, "interfaces", []any{c.ifaces, c.boot, c.ips}, []any{f, fb, fi})
		}
		return c.ifaces, c.boot, c.ips
	}
	ifaces, boot, ips = s.renderMachineInterfaces(m)
	*c = ifacesPart{rev: m.parts.ifaceRev, shared: shared, valid: !busy && allEncoded(ifaces, boot),
		ifaces: ifaces, boot: boot, ips: ips}
	return ifaces, boot, ips
}

// machineDisks is renderMachineDisks(m), kept while nothing that shows
// in it changed. Call it under the lock.
func (s *Server) machineDisks(m *machine) (physical, all, virtual []any, storage float64, boot any) {
	if s.freshRender {
		return s.renderMachineDisks(m)
	}
	busy := s.sharedWrites.Load() > 0
	shared := s.sharedRev.Load()
	c := &m.parts.disks
	if c.valid && !busy && c.rev == m.parts.diskRev && c.shared == shared {
		if verifyListingCache {
			p, a, v, st, b := s.renderMachineDisks(m)
			s.verifyPart(m, "disks", []any{c.physical, c.all, c.virtual, c.storage, c.boot}, []any{p, a, v, st, b})
		}
		return c.physical, c.all, c.virtual, c.storage, c.boot
	}
	physical, all, virtual, storage, boot = s.renderMachineDisks(m)
	*c = disksPart{rev: m.parts.diskRev, shared: shared, valid: !busy && allEncoded(all, boot),
		physical: physical, all: all, virtual: virtual, storage: storage, boot: boot}
	return physical, all, virtual, storage, boot
}

// allEncoded: every element is encoded JSON (encodeOnce fell back to
// none of the machine's own maps), so the part may be kept.
func allEncoded(list []any, one any) bool {
	if _, ok := one.(rawJSON); one != nil && !ok {
		return false
	}
	for _, e := range list {
		if _, ok := e.(rawJSON); !ok {
			return false
		}
	}
	return true
}

// verifyPart counts a kept part that differs from a fresh rendering
// (tests: verifyListingCache).
func (s *Server) verifyPart(m *machine, name string, kept, fresh []any) {
	a, errA := appendJSON(nil, kept)
	b, errB := appendJSON(nil, fresh)
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		listingCacheStale.Add(1)
		s.log.Error().Str("system_id", m.SystemID).Str("part", name).Msg("machine JSON parts: stale part served")
	}
}
