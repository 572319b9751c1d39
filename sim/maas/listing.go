package maas

import (
	"bytes"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/slipway-dev/slipway/internal/jsonenc"
)

// The listing cache. A read of 10,000 machines (the engine's batched
// status poll) rendered and encoded some 100 MiB of JSON under the lock,
// though between two polls most machines sit in a phase and change
// nothing. Each machine keeps the JSON the last listing made of it, and
// a listing reuses it while it is still what renderMachine would give:
//
//   - every request on the machine (withMachine, withNode: the only
//     handlers of /machines/{system_id}/ and /nodes/{system_id}/ paths)
//     and every phase end (schedule) bumps its rev, under the lock, in
//     the same hold as the change;
//   - every other write request (networking, tags, zones, allocation,
//     machine creation ...) may change any machine's JSON (its VLANs,
//     subnets, tags, domain): while one is in flight no listing uses the
//     cache, and when it ends sharedRev moves on, so nothing cached
//     before it is used again; EnlistNew moves it on too;
//   - the machine's domain, with its record count that changes with
//     every machine enlisted, is rendered once per listing and put
//     between the head and the tail the cache keeps.

// rawJSON is JSON already encoded; appendJSON copies it as it is.
type rawJSON []byte

// MarshalJSON makes encoding/json copy it too (writeJSON's fallback).
func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

// listed is a machine's JSON as a listing rendered it, and what it was
// rendered from. Every machine's JSON repeats its domain with the
// domain's record count, which changes with every machine enlisted: the
// JSON is kept around it (head, tail) and the domain rendered once per
// listing.
type listed struct {
	json   rawJSON // the whole (power parameters), or the head up to the domain
	tail   rawJSON // after the domain
	rev    uint64
	shared uint64
	valid  bool
}

// domainMark stands for the domain in a machine's JSON while it is
// encoded: appendJSON escapes a NUL in any string, so the only raw NUL
// is the mark.
var domainMark = rawJSON{0}

// cachedMachine is renderMachine(m) encoded in three parts, head and
// tail from the cache when they are current, the domain from the
// listing's (domains). Call it under the lock, within beginListing.
func (s *Server) cachedMachine(m *machine, domains map[string]rawJSON) (head, domain, tail rawJSON, ok bool) {
	// Read sharedWrites before sharedRev: a write that ends in between
	// moves sharedRev on, and the cache is not used.
	busy := s.sharedWrites.Load() > 0
	shared := s.sharedRev.Load()
	d := s.domainOf(m)
	domain, ok = domains[d.Name]
	if !ok {
		b, err := appendJSON(nil, s.renderDomain(d))
		if err != nil {
			return nil, nil, nil, false
		}
		domain, domains[d.Name] = b, b
	}
	c := &m.rendered
	if !busy && c.valid && c.rev == m.rev && c.shared == shared {
		if verifyListingCache {
			s.verifyCached(m, c.json, domain, c.tail)
		}
		return c.json, domain, c.tail, true
	}
	if !s.renderListed(m, shared, busy) {
		return nil, nil, nil, false
	}
	return c.json, domain, c.tail, true
}

// renderListed renders m into its listing cache (m.rendered), kept
// valid unless a shared write was in flight (busy); false when
// appendJSON failed. Call it under the lock, or under the read lock
// with m.renderMu held (shared_reads.go).
func (s *Server) renderListed(m *machine, shared uint64, busy bool) bool {
	c := &m.rendered
	scratch := renderScratch.Get().(*[]byte)
	defer putRenderScratch(scratch)
	b, err := s.appendMachine((*scratch)[:0], m, domainMark) // render_machine.go
	*scratch = b
	i := bytes.IndexByte(b, 0)
	if err != nil || i < 0 || bytes.IndexByte(b[i+1:], 0) >= 0 {
		c.valid = false
		return false
	}
	// Kept in a buffer of its exact size: rendered straight into a kept
	// buffer sized from its last JSON, a machine whose JSON grew was
	// grown by copies, and every kept JSON held its spare capacity.
	kept := bytes.Clone(append(b[:i], b[i+1:]...))
	*c = listed{json: kept[:i:i], tail: kept[i:], rev: m.rev, shared: shared, valid: !busy}
	return true
}

// renderScratch holds the buffers machines are rendered in before their
// JSON is kept (renderListed).
var renderScratch = sync.Pool{New: func() any { b := make([]byte, 0, 32<<10); return &b }}

func putRenderScratch(b *[]byte) {
	if cap(*b) <= 1<<20 {
		renderScratch.Put(b)
	}
}

// verifyListingCache makes every cache hit check itself against a fresh
// rendering (the package's tests set it for every test: TestMain).
var verifyListingCache = false

// listingCacheStale counts the hits verifyCached found stale.
var listingCacheStale atomic.Int64

func (s *Server) verifyCached(m *machine, head, domain, tail []byte) {
	s.freshRender = true // every part rendered anew (render_parts.go)
	fresh, err := appendJSON(nil, s.renderMachine(m))
	s.freshRender = false
	cached := append(append(append([]byte(nil), head...), domain...), tail...)
	if err == nil && !bytes.Equal(fresh, cached) {
		listingCacheStale.Add(1)
		s.log.Error().Str("system_id", m.SystemID).Msg("listing cache: stale JSON served")
	}
}

// listMachines is the JSON array of the machines, each from the cache
// when current, in a pooled buffer sized once (a poll of
// 10,000 machines is some 100 MiB: grown by doubling and copied again
// into the response buffer, it cost more than the rest of the listing).
func (s *Server) listMachines(ms []*machine) any {
	parts := make([]listedParts, len(ms))
	domains := map[string]rawJSON{}
	for i, m := range ms {
		h, d, t, ok := s.cachedMachine(m, domains)
		if !ok { // not expected: appendJSON failed, encoding/json decides
			out := make([]any, len(ms))
			for i, m := range ms {
				out[i] = s.renderMachine(m)
			}
			return out
		}
		parts[i] = listedParts{h, d, t}
	}
	return assembleListing(parts)
}

// listedParts is one machine's JSON in a listing: the head and tail
// its cache keeps, the domain between them.
type listedParts struct{ head, domain, tail rawJSON }

// assembleListing is the JSON array of the machines' parts, in a pooled
// buffer sized once (pooledBuffer).
func assembleListing(parts []listedParts) pooledJSON {
	size := 2
	for _, p := range parts {
		size += len(p.head) + len(p.domain) + len(p.tail) + 1
	}
	buf := pooledBuffer(size)
	b := (*buf)[:0]
	b = append(b, '[')
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, p.head...), p.domain...), p.tail...)
	}
	*buf = append(b, ']')
	return pooledJSON{buf}
}

// machineJSON is renderMachine(m) encoded, from the cache when it is
// current (cachedMachine), in a buffer of answerBuffers: a machine read.
// Call it under the lock.
func (s *Server) machineJSON(m *machine) any {
	defer s.beginListing()()
	h, d, t, ok := s.cachedMachine(m, make(map[string]rawJSON, 1))
	if !ok { // not expected: appendJSON failed, encoding/json decides
		return s.renderMachine(m)
	}
	buf := answerBuffers.Get().(*[]byte)
	*buf = append(append(append((*buf)[:0], h...), d...), t...)
	return pooledJSON{buf}
}

// writtenJSON is renderMachine(m) encoded for the answer of a write on
// it, in a buffer of answerBuffers, and not kept for the listing: the
// machine is written again before it is read (a rollout allocates, marks,
// deploys and configures each machine in requests one after the other),
// so each kept copy was garbage at the next request, a fifth of the
// lab's allocation while it configured 10,000 machines. Its parts
// (render_parts.go) are kept as ever. Call it under the lock.
func (s *Server) writtenJSON(m *machine) any {
	defer s.beginListing()()
	d, err := appendJSON(nil, s.renderDomain(s.domainOf(m)))
	if err != nil { // not expected: encoding/json decides
		return s.renderMachine(m)
	}
	buf := answerBuffers.Get().(*[]byte)
	b, err := s.appendMachine((*buf)[:0], m, d) // render_machine.go
	if err != nil {
		answerBuffers.Put(buf)
		return s.renderMachine(m)
	}
	*buf = b
	return pooledJSON{buf}
}

// pooledJSON is JSON in a pooled buffer (answerBuffers, listingBuffers):
// ServeHTTP writes it as it is and puts the buffer back.
type pooledJSON struct{ buf *[]byte }

// The buffers of one machine's JSON and those of listings are pooled
// apart: from one pool, a 17 KB answer took a listing's 9 MB buffer and
// the next listing made a new one, and the pool held some 90 MB.
var (
	answerBuffers  = sync.Pool{New: func() any { b := make([]byte, 0, 1<<16); return &b }}
	listingBuffers = sync.Pool{New: func() any { return new([]byte) }}
)

// pooledBuffer is an empty buffer of at least size bytes from the pool
// of its size (release puts it back there).
func pooledBuffer(size int) *[]byte {
	pool := &answerBuffers
	if size > answerBufferMax {
		pool = &listingBuffers
	}
	buf := pool.Get().(*[]byte)
	if cap(*buf) < size {
		*buf = make([]byte, 0, size+size/8)
	}
	return buf
}

// answerBufferMax is the largest buffer answerBuffers keeps.
const answerBufferMax = 1 << 20

// release puts the buffer back (ServeHTTP, after writing it), in the
// pool of its size.
func (p pooledJSON) release() {
	switch c := cap(*p.buf); {
	case c <= answerBufferMax:
		answerBuffers.Put(p.buf)
	case c <= 256<<20:
		listingBuffers.Put(p.buf)
	}
}

// MarshalJSON makes encoding/json copy it (tests that decode answers).
func (p pooledJSON) MarshalJSON() ([]byte, error) { return *p.buf, nil }

// cachedPowerParams is `"SYSTEM_ID":{power parameters}`, as the
// power_parameters op lists a machine, kept while the machine is not
// written (its rev; power parameters change only by requests on it or
// its creation).
func (s *Server) cachedPowerParams(m *machine) rawJSON {
	c := &m.powerJSON
	if c.valid && c.rev == m.rev {
		return c.json
	}
	b := jsonenc.AppendString(nil, m.SystemID)
	b = append(b, ':')
	b, err := appendJSON(b, powerParamsJSON(m.PowerParams))
	if err != nil { // not expected: encoding/json decides
		j, _ := json.Marshal(powerParamsJSON(m.PowerParams))
		b = append(append(jsonenc.AppendString(nil, m.SystemID), ':'), j...)
	}
	*c = listed{json: b, rev: m.rev, valid: err == nil}
	return c.json
}

// oneMachineWrites are the writes without a system ID in their path that
// change only the machines they bump the rev of (allocate, release) or
// create (POST /machines/: a new machine, and its domain's record count,
// which each listing renders anew), by ServeHTTP's request key (the
// stats' request template).
//
// A new tag is on no machine; update_nodes bumps the rev of the machines
// it names; boot image writes touch no machine.
var oneMachineWrites = map[string]bool{
	"POST /tags/":                       true,
	"POST /tags/{tag}/?op=update_nodes": true,
	"POST /machines/":                   true,
	"POST /machines/?op=allocate":       true,
	"POST /machines/?op=release":        true,
	// A storage clone changes only its destinations, each touched
	// (storage_clone.go): as a shared write, each clone of a 10,000-node
	// rollout rebuilt the address, MAC and hostname indexes of every
	// machine at the next link_subnet.
	"POST /machines/?op=clone": true,
	// Boot images and their sources change no machine's JSON
	// (bootres_api.go, bootsrc_api.go).
	"POST /boot-resources/":                                      true,
	"PUT /boot-resources/{boot-resource}/upload/{upload}/":       true,
	"DELETE /boot-resources/{boot-resource}/":                    true,
	"POST /boot-resources/?op=import":                            true,
	"POST /boot-resources/?op=stop_import":                       true,
	"POST /boot-sources/":                                        true,
	"PUT /boot-sources/{boot-source}/":                           true,
	"DELETE /boot-sources/{boot-source}/":                        true,
	"POST /boot-sources/{boot-source}/selections/":               true,
	"PUT /boot-sources/{boot-source}/selections/{selection}/":    true,
	"DELETE /boot-sources/{boot-source}/selections/{selection}/": true,
}

// verifyCandidates checks a listing the indexes answered against a walk
// through every machine (tests: verifyListingCache).
func (s *Server) verifyCandidates(f formValues, got []*machine) {
	n := 0
	for _, m := range s.machines {
		if s.matches(m, f) {
			n++
		}
	}
	if n != len(got) {
		listingCacheStale.Add(1)
		s.log.Error().Int("indexed", len(got)).Int("walked", n).Msg("hostname/MAC index: wrong listing")
	}
}
