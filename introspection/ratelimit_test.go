package introspection

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReportFlood: a node that floods its report route adds a bounded
// number of events (the rest are refused with 429 and Retry-After, and
// write nothing), its messages are capped, and another node reports as
// usual meanwhile.
func TestReportFlood(t *testing.T) {
	e := newEnv(t)
	const flooder, other = "r01-gpu01", "r01-cmp01"
	tokA, tokB := e.issue(flooder, "1"), e.issue(other, "1")
	action := signalling(e.d, flooder)[0]
	huge := strings.Repeat("é", 10000) // 20,000 bytes, under the body limit
	var ok, limited int
	for i := range 500 {
		r := e.report(tokA, action, "running", fmt.Sprintf("step %d %s", i, huge))
		switch r.code {
		case 200:
			ok++
		case 429:
			limited++
			if s, err := strconv.Atoi(r.hdr.Get("Retry-After")); err != nil || s < 1 {
				t.Fatalf("429 without a Retry-After in seconds: %q", r.hdr.Get("Retry-After"))
			}
			if p := r.problem(t); !strings.Contains(p.Detail, "reports") {
				t.Fatalf("429 detail: %q", p.Detail)
			}
		default:
			t.Fatalf("report %d: %d %s", i, r.code, r.body)
		}
		if i == 250 { // the other node, in the middle of the flood
			if r := e.report(tokB, signalling(e.d, other)[0], "success", "done"); r.code != 200 {
				t.Fatalf("the other node's report during the flood: %d %s", r.code, r.body)
			}
		}
	}
	var fromA, fromB int
	for _, ev := range events(t, e) {
		switch ev.Node {
		case flooder:
			fromA++
			if len(ev.Message) > maxMessage+200 {
				t.Errorf("an event of %d bytes", len(ev.Message))
			}
		case other:
			fromB++
		}
	}
	if fromA != ok || fromA > DefaultReportBurst || limited == 0 {
		t.Errorf("the flood: %d accepted, %d refused, %d events; want at most %d events", ok, limited, fromA, DefaultReportBurst)
	}
	if fromB != 1 {
		t.Errorf("the other node: %d events, want 1", fromB)
	}
	// The bucket refills: one report per ReportEvery.
	now := time.Now().Add(5*DefaultReportEvery + time.Millisecond)
	e.srv.reports.now = func() time.Time { return now }
	ok = 0
	for i := range 20 {
		if r := e.report(tokA, action, "running", fmt.Sprintf("later %d", i)); r.code == 200 {
			ok++
		}
	}
	if ok != 5 {
		t.Errorf("after 5 intervals: %d reports accepted, want 5", ok)
	}
}
