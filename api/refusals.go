package api

import (
	"net/netip"
	"sync"
	"time"
)

// Sampling of unauthenticated refusals in the audit (defaults of
// Config.AuditRefusalsPerAddress and Config.AuditRefusalsTotal).
const (
	DefaultAuditRefusalsPerAddress = 20
	DefaultAuditRefusalsTotal      = 60
	refusalWindow                  = time.Minute
)

// refusalSampler decides which unauthenticated refusals (401) the audit
// records: at most perAddr per source address (an IPv6 address counts by
// its /64) and total in all, per minute. It counts the rest, and the next
// recorded refusal carries that count, so anyone can't grow the audit log
// without a token. It holds at most total addresses.
type refusalSampler struct {
	perAddr, total int
	now            func() time.Time

	mu      sync.Mutex
	start   time.Time
	byAddr  map[string]int
	n       int
	dropped uint64 // since the last recorded refusal
}

func newRefusalSampler(perAddr, total int) *refusalSampler {
	return &refusalSampler{perAddr: perAddr, total: total, now: time.Now, byAddr: map[string]int{}}
}

// admit reports whether a refusal from addr is recorded and, when it is,
// how many were not since the previous recorded one.
func (s *refusalSampler) admit(addr string) (bool, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := s.now(); now.Sub(s.start) >= refusalWindow {
		s.start, s.n = now, 0
		clear(s.byAddr)
	}
	key := addrKey(addr)
	if s.n >= s.total || s.byAddr[key] >= s.perAddr {
		s.dropped++
		return false, 0
	}
	s.n++
	s.byAddr[key]++
	d := s.dropped
	s.dropped = 0
	return true, d
}

// addrKey is the source an address counts as: an IPv4 address, an IPv6
// /64, or the text itself (bounded) when it is not an address.
func addrKey(addr string) string {
	a, err := netip.ParseAddr(addr)
	switch {
	case err != nil:
		return clampJSON(addr, maxAuditID)
	case a.Is4() || a.Is4In6():
		return a.Unmap().String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}
