package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestAuditRecordBoundWithWhat: with every field of what was done filled
// to excess too, a record's JSON stays under MaxAuditRecordBytes; the
// targets are cut to the first maxAuditTargets, and targetCount keeps how
// many there were.
func TestAuditRecordBoundWithWhat(t *testing.T) {
	for _, fill := range []string{"a", "<", `"`, "\x00", "\xff", "é", "\u2028", "😀"} {
		big := strings.Repeat(fill, 100000)
		targets := make([]string, 500)
		for i := range targets {
			targets[i] = big
		}
		r := AuditRecord{Time: time.Now(), RequestID: big, ClientRequestID: big, Who: Principal{ID: big, Name: big, Role: Role(big)},
			Method: big, Route: big, Path: big, Remote: big, Status: 401, Outcome: big, Detail: big, Suppressed: 1 << 63,
			Action: big, Verb: big, Task: big, Targets: targets, TargetCount: 1 << 40, Resolution: big}
		bound(&r)
		b, err := json.Marshal(r)
		if err != nil || len(b) > MaxAuditRecordBytes || !json.Valid(b) {
			t.Errorf("filled with %q: %d bytes (max %d), %v", fill, len(b), MaxAuditRecordBytes, err)
		}
		if len(r.Targets) != maxAuditTargets || r.TargetCount != 1<<40 {
			t.Errorf("filled with %q: %d targets, count %d", fill, len(r.Targets), r.TargetCount)
		}
	}
	r := AuditRecord{Targets: make([]string, 20)}
	bound(&r)
	if len(r.Targets) != maxAuditTargets || r.TargetCount != 20 {
		t.Errorf("20 targets: kept %d, count %d", len(r.Targets), r.TargetCount)
	}
}
