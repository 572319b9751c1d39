package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestRefusalSampler: per address (IPv6 by /64) and in all per minute;
// the next recorded refusal carries the count of those dropped before it.
func TestRefusalSampler(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newRefusalSampler(2, 6)
	s.now = func() time.Time { return now }
	type call struct {
		addr    string
		ok      bool
		dropped uint64
	}
	for i, c := range []call{
		{"192.0.2.1", true, 0}, {"192.0.2.1", true, 0}, {"192.0.2.1", false, 0}, {"::ffff:192.0.2.1", false, 0},
		{"2001:db8::1", true, 2}, {"2001:db8::ffff", true, 0}, {"2001:db8:0:1::1", true, 0}, // another /64
		{"198.51.100.7", true, 0}, // the sixth: the total is reached
		{"203.0.113.9", false, 0},
	} {
		if ok, d := s.admit(c.addr); ok != c.ok || d != c.dropped {
			t.Errorf("call %d from %s: %v %d, want %v %d", i, c.addr, ok, d, c.ok, c.dropped)
		}
	}
	now = now.Add(time.Minute)
	if ok, d := s.admit("192.0.2.1"); !ok || d != 1 {
		t.Errorf("after a minute: %v %d, want true 1", ok, d)
	}
	if len(s.byAddr) > s.total {
		t.Errorf("%d addresses held, more than %d", len(s.byAddr), s.total)
	}
}

// TestAuditRecordBound: whatever its input, a record's JSON stays under
// MaxAuditRecordBytes and is valid.
func TestAuditRecordBound(t *testing.T) {
	t.Parallel()
	for _, fill := range []string{"a", "<", `"`, "\x00", "\xff", "é", "\u2028", "😀"} {
		big := strings.Repeat(fill, 100000)
		r := AuditRecord{Time: time.Now(), RequestID: big, ClientRequestID: big, Who: Principal{ID: big, Name: big, Role: Role(big)},
			Method: big, Route: big, Path: big, Remote: big, Status: 401, Outcome: big, Detail: big, Suppressed: 1 << 63}
		bound(&r)
		b, err := json.Marshal(r)
		if err != nil || len(b) > MaxAuditRecordBytes || !json.Valid(b) {
			t.Errorf("filled with %q: %d bytes (max %d), %v", fill, len(b), MaxAuditRecordBytes, err)
		}
		if !strings.HasSuffix(r.Path, "…") {
			t.Errorf("filled with %q: the cut path does not end in …", fill)
		}
	}
	if got := clampJSON("short", 64); got != "short" {
		t.Errorf("clampJSON of a short string: %q", got)
	}
}
