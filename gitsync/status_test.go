package gitsync

import (
	"fmt"
	"strings"
	"testing"
)

// TestStatusBounded: the saved status keeps the last MaxEvents events,
// at most maxFindings findings (saying how many more) and each cut to
// maxItem bytes.
func TestStatusBounded(t *testing.T) {
	a := newApplier(t)
	s := statusStore{a.st}
	var st Status
	for i := range MaxEvents + 10 {
		st.event(Event{Trigger: "test", Outcome: OutcomeFailed, Reason: fmt.Sprint(i)})
	}
	f := &Follower{}
	ev := Event{Commit: "c"}
	long := make([]string, maxFindings+5)
	for i := range long {
		long[i] = strings.Repeat("x", 4*maxItem)
	}
	f.reject(&st, &ev, OutcomeInvalid, strings.Repeat("r", 4096), long)
	if err := s.save(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	got, err := s.load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != MaxEvents || got.Events[0].Reason != "10" {
		t.Errorf("%d events, the first %q; want the last %d", len(got.Events), got.Events[0].Reason, MaxEvents)
	}
	r := got.Rejected
	if len(r.Findings) != maxFindings+1 || r.Findings[maxFindings] != "(and 5 more)" || len(r.Findings[0]) != maxItem || len(r.Reason) > 1024 {
		t.Errorf("rejected: %d findings (last %q), the first %d bytes, reason %d bytes", len(r.Findings), r.Findings[len(r.Findings)-1], len(r.Findings[0]), len(r.Reason))
	}
}
