package maas

// The event log with MAAS's semantics (api/events.py query): after and
// before, paging, the 400s, and a status-change event for every status
// change (models/signals/events.py, level DEBUG in MAAS 3.x).

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/canonical/gomaasclient/entity"
	maasevent "github.com/canonical/gomaasclient/entity/event"
)

type evPage struct {
	Count  int `json:"count"`
	Events []struct {
		ID          int    `json:"id"`
		Node        string `json:"node"`
		Type        string `json:"type"`
		Level       string `json:"level"`
		Description string `json:"description"`
	} `json:"events"`
	NextURI string  `json:"next_uri"`
	PrevURI *string `json:"prev_uri"`
}

func (l *simLab) events(q url.Values) evPage {
	l.tb.Helper()
	var p evPage
	l.must(http.StatusOK, "GET", "/events/?op=query", q, &p)
	return p
}

// statusChanges are a page's status-change descriptions by machine.
func (p evPage) statusChanges() map[string][]string {
	out := map[string][]string{}
	for _, e := range p.Events {
		if e.Type == statusChangedType {
			out[e.Node] = append(out[e.Node], e.Description)
		}
	}
	return out
}

func TestEventsStatusChangesAfterCursor(t *testing.T) {
	l := newSimLab(t, nil)
	a, b := l.ready(1, "ev-a"), l.ready(2, "ev-b")
	all := l.events(url.Values{"level": {"DEBUG"}, "limit": {"1000"}})
	got := all.statusChanges()
	// Newest first: Commissioning to Ready, then New to Commissioning.
	want := []string{"From 'Commissioning' to 'Ready'", "From 'New' to 'Commissioning'"}
	for _, id := range []string{a, b} {
		if strings.Join(got[id], "|") != strings.Join(want, "|") {
			t.Fatalf("status changes of %s: got %q, want %q", id, got[id], want)
		}
	}
	for _, e := range all.Events {
		if e.Type == statusChangedType && e.Level != "DEBUG" {
			t.Fatalf("status change at level %s, MAAS 3.x emits it at DEBUG", e.Level)
		}
	}
	// The default level (INFO) leaves them out, as MAAS does.
	if n := len(l.events(url.Values{"limit": {"1000"}}).statusChanges()); n != 0 {
		t.Fatalf("INFO query answered status changes of %d machines", n)
	}
	cursor := all.Events[0].ID
	l.must(http.StatusOK, "POST", "/machines/?op=allocate", url.Values{"system_id": {a}}, nil)
	after := l.events(url.Values{"level": {"DEBUG"}, "after": {strconv.Itoa(cursor)}, "limit": {"1000"}})
	ch := after.statusChanges()
	if len(ch) != 1 || len(ch[a]) != 1 || ch[a][0] != "From 'Ready' to 'Allocated' (to "+l.user()+")" {
		t.Fatalf("after %d: got %q, want one change of %s (Ready to Allocated)", cursor, ch, a)
	}
	for _, e := range after.Events {
		if e.ID <= cursor {
			t.Fatalf("after %d answered event %d", cursor, e.ID)
		}
	}
	// The same through the Terraform provider's client.
	resp, err := l.gomaasclient().Events.Get(&entity.EventParams{After: strconv.Itoa(cursor), Level: maasevent.DEBUG, Limit: "1000"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Events) != len(after.Events) || resp.Events[0].ID != after.Events[0].ID {
		t.Fatalf("gomaasclient: got %d events, want %d as the raw query", len(resp.Events), len(after.Events))
	}
}

func (l *simLab) user() string { return l.s.opts.User }

func TestEventsAfterPagesOldestFirst(t *testing.T) {
	l := newSimLab(t, nil)
	l.ready(1, "page-a")
	all := l.events(url.Values{"level": {"DEBUG"}, "limit": {"1000"}})
	n := len(all.Events)
	if n < 4 {
		t.Fatalf("only %d events", n)
	}
	// after=0, limit 2: the two OLDEST events, newest first.
	p := l.events(url.Values{"level": {"DEBUG"}, "after": {"0"}, "limit": {"2"}})
	if p.Count != 2 || p.Events[0].ID != all.Events[n-2].ID || p.Events[1].ID != all.Events[n-1].ID {
		t.Fatalf("after 0 limit 2: got %+v, want the two oldest (%d, %d) newest first", p.Events, all.Events[n-2].ID, all.Events[n-1].ID)
	}
	// next_uri goes on after the newest answered, and reads every event once.
	seen := map[int]bool{}
	for range n {
		for _, e := range p.Events {
			if seen[e.ID] {
				t.Fatalf("event %d answered twice while paging", e.ID)
			}
			seen[e.ID] = true
		}
		u, err := url.Parse(p.NextURI)
		if err != nil || !strings.HasPrefix(u.Path, APIPrefix+"/events/") || u.Query().Get("after") == "" {
			t.Fatalf("next_uri %q", p.NextURI)
		}
		if u.Query().Get("after") != strconv.Itoa(p.maxID()) && p.Count > 0 {
			t.Fatalf("next_uri after=%s, want the newest answered %d", u.Query().Get("after"), p.maxID())
		}
		if p.Count == 0 {
			break
		}
		p = l.events(u.Query())
	}
	if len(seen) != n {
		t.Fatalf("paging read %d events, the log has %d", len(seen), n)
	}
	if p.PrevURI == nil || !strings.Contains(*p.PrevURI, "before=") {
		t.Fatalf("empty page after an id: prev_uri %v, want one going before it", p.PrevURI)
	}
	// before: the newest before it, newest first; no before nor after on
	// an empty log end: prev_uri null.
	b := l.events(url.Values{"level": {"DEBUG"}, "before": {strconv.Itoa(all.Events[0].ID)}, "limit": {"1"}})
	if b.Count != 1 || b.Events[0].ID != all.Events[1].ID {
		t.Fatalf("before newest limit 1: got %+v, want %d", b.Events, all.Events[1].ID)
	}
}

func (p evPage) maxID() int {
	m := 0
	for _, e := range p.Events {
		m = max(m, e.ID)
	}
	return m
}

func TestEventsQueryRefusals(t *testing.T) {
	l := newSimLab(t, nil)
	l.enlist(1, "bad-a")
	for _, tc := range []struct {
		q    url.Values
		want string
	}{
		{url.Values{"limit": {"1001"}}, "greater than limit: 1000"},
		{url.Values{"after": {"1"}, "before": {"5"}}, "both `after` and `before`"},
		{url.Values{"after": {"x"}}, "integer"},
		{url.Values{"level": {"LOUD"}}, "Unrecognised log level"},
	} {
		r := l.must(http.StatusBadRequest, "GET", "/events/?op=query", tc.q, nil)
		if !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%v: got %s, want %q", tc.q, r.body, tc.want)
		}
	}
	// limit 0 is 1, as MAAS clamps it.
	if p := l.events(url.Values{"level": {"DEBUG"}, "limit": {"0"}}); p.Count != 1 {
		t.Fatalf("limit 0: got %d events, want 1", p.Count)
	}
}

func TestEventLogChunksKeepIDs(t *testing.T) {
	var lg eventLog
	for i := range 2*eventChunk + 5 {
		if id := lg.add(event{SystemID: "m"}, "t"); id != i+1 {
			t.Fatalf("event %d got ID %d", i, id)
		}
	}
	if lg.last() != 2*eventChunk+5 || lg.get(eventChunk+1) == nil || lg.get(0) != nil || lg.get(lg.last()+1) != nil {
		t.Fatalf("last %d", lg.last())
	}
}

// An abort changes the status outside the phases (opAbort): its change
// is recorded like every other.
func TestEventsStatusChangeOnAbort(t *testing.T) {
	l := newSimLab(t, nil)
	l.setDuration(func(d *Durations) { d.Commission = time.Hour })
	id := l.enlist(1, "abort-a")
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=commission", nil, nil)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=abort", nil, nil)
	got := l.events(url.Values{"level": {"DEBUG"}, "id": {id}}).statusChanges()[id]
	want := []string{"From 'Commissioning' to 'New'", "From 'New' to 'Commissioning'"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("status changes: got %q, want %q", got, want)
	}
}
