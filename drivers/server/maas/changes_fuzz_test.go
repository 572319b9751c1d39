package maas

import (
	"strings"
	"testing"

	segjson "github.com/segmentio/encoding/json"
)

// FuzzChangesAnswer: any cursor and any answer of events/?op=query are
// read without a panic; a cursor read back is the same; the newest ID
// never goes back; each machine is named once.
func FuzzChangesAnswer(f *testing.F) {
	f.Add("41", `{"count": 2, "events": [{"id": 43, "node": "abc", "type": "Node changed status", "level": "DEBUG"},
	 {"id": 42, "node": "abc", "type": "Node changed status"}], "next_uri": "/MAAS/api/2.0/events/?after=43", "prev_uri": null}`)
	f.Add("", `{"events": [{"id": 7, "node": null, "type": "Powering on"}]}`)
	f.Add("-1", `{"events": [{"id": 1e3, "node": "x"}]}`)
	f.Fuzz(func(t *testing.T, cursor, answer string) {
		after, ok := parseCursor(cursor)
		if ok && (after < 0 || formatCursor(after) != cursor) {
			t.Fatalf("cursor %q read as %d", cursor, after)
		}
		var page mChangesPage
		if segjson.Unmarshal([]byte(answer), &page) != nil {
			return
		}
		var ms []string
		newest := page.collect(after, map[string]struct{}{}, &ms)
		if newest < after {
			t.Fatalf("newest %d before the cursor %d", newest, after)
		}
		seen := map[string]bool{}
		for _, m := range ms {
			if m == "" || seen[m] {
				t.Fatalf("machines %q: empty or twice", ms)
			}
			seen[m] = true
		}
		last := map[string]changedTo{}
		page.lastStates(after, last)
		for id, st := range statesOf(last) {
			if !seen[id] || st == "" || len(st) > 64 || strings.Contains(st, "'") {
				t.Fatalf("state %q of machine %q: not a machine named (%q), empty, too long or quoted", st, id, ms)
			}
		}
	})
}

// FuzzStatusChangedTo: any description gives a status no longer than 64
// bytes and without a quote, or none; MAAS's form gives its new status.
func FuzzStatusChangedTo(f *testing.F) {
	f.Add("From 'Ready' to 'Allocated' (to admin)")
	f.Add("From 'Deploying' to 'Failed deployment'")
	f.Add("From '' to ''")
	f.Fuzz(func(t *testing.T, desc string) {
		got := statusChangedTo(desc)
		if len(got) > 64 || strings.Contains(got, "'") {
			t.Fatalf("%q: status %q", desc, got)
		}
		if st := strings.ReplaceAll(desc, "'", ""); st != "" && len(st) <= 64 {
			if again := statusChangedTo("From 'X' to '" + st + "'"); again != st {
				t.Fatalf("the form with %q gave %q", st, again)
			}
		}
	})
}
