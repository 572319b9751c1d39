package maas

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/slipway-dev/slipway/drivers"
)

// Changes reads MAAS's event log (GET events/?op=query): MAAS records
// NODE_CHANGED_STATUS ("Node changed status", level DEBUG in MAAS 3.x;
// src/maasserver/models/signals/events.py) on every save that changes a
// machine's status, so the machines named by such events after an event
// ID are the ones whose status changed. A query with after answers the
// OLDEST events after it (at most 1000, newest first): the driver pages
// until a page is short, at most changesPages pages, else Reset (so much
// changed that reading every machine is as cheap).
//
// Event IDs come from a database sequence: an event whose transaction
// commits after a later one's is behind the cursor when it appears. So
// each read starts changesOverlap IDs behind the cursor and names the
// machines of the events there that it did not answer before (the IDs
// it answered lately are kept, feedSeen): such an event is missed only
// when it commits more than changesOverlap events late, and the caller's
// periodic full read covers that.
const (
	changesLevel = "DEBUG" // every level from DEBUG up (not AUDIT)
	changesType  = "Node changed status"
	// changesAnswerMax bounds one page's answer (1000 events of a few
	// hundred bytes each).
	changesAnswerMax = 4 << 20
)

// changesLimit is a page's events (MAAS's MAX_EVENT_LOG_COUNT) and
// changesPages the pages one Changes reads; changesOverlap how many IDs
// behind the cursor a read starts. Variables for the tests only.
var changesLimit, changesPages, changesOverlap = 1000, 20, int64(1000)

var _ drivers.ServerChanges = (*Driver)(nil)

// mChangeEvent is what Changes reads of an event.
type mChangeEvent struct {
	ID          int64  `json:"id"`
	Node        string `json:"node"`
	Type        string `json:"type"`
	Description string `json:"description"`
}

// mChangesPage is what Changes reads of GET events/?op=query.
type mChangesPage struct {
	Events []mChangeEvent `json:"events"`
}

// Changes answers the machines whose status changed after cursor (an
// event ID); "" or a cursor that is not one is Reset from the newest
// event. The read cache takes each answer (cache_feed.go).
func (d *Driver) Changes(ctx context.Context, cursor string) (drivers.Changes, error) {
	sent := d.c.cache.clock()
	out, err := d.changes(ctx, cursor)
	if err == nil { // the read cache follows the feed (cache_feed.go)
		d.c.cache.changed(cursor, out.Cursor, out.Machines, sent, out.Reset)
	}
	return out, err
}

func (d *Driver) changes(ctx context.Context, cursor string) (drivers.Changes, error) {
	after, ok := parseCursor(cursor)
	if !ok {
		newest, err := d.newestEvent(ctx)
		if err != nil {
			return drivers.Changes{}, err
		}
		return drivers.Changes{Cursor: formatCursor(newest), Reset: true}, nil
	}
	d.feedSeen.mu.Lock() // one read at a time follows the IDs answered
	defer d.feedSeen.mu.Unlock()
	behind := d.feedSeen.behind(cursor, after)
	seen := map[string]struct{}{}
	last := map[string]changedTo{}
	var out drivers.Changes
	var answered []int64
	from := after
	if len(behind) > 0 {
		from = behind[0]
	}
	for range changesPages {
		page, err := d.eventsAfter(ctx, from)
		if err != nil {
			return drivers.Changes{}, err
		}
		late := page.late(after, behind)
		page.lastStates(after, last)
		newest := page.collect(after, seen, &out.Machines)
		late.collect(0, seen, &out.Machines) // named, no state: read
		answered = page.ids(answered)
		if newest > after {
			after = newest
		}
		from = max(from, page.newest())
		if len(page.Events) < changesLimit {
			out.Cursor = formatCursor(after)
			out.States = statesOf(last)
			d.feedSeen.answered(out.Cursor, after, answered)
			return out, nil
		}
	}
	d.feedSeen.forget()
	return drivers.Changes{Cursor: formatCursor(after), Reset: true}, nil
}

// seenEvents are the event IDs the change feed answered within
// changesOverlap of its last cursor, and that cursor: a read from it
// starts behind it and skips these.
type seenEvents struct {
	mu     sync.Mutex
	cursor string
	ids    []int64 // ascending
}

// behind is the window of IDs a read from cursor (after, parsed) reads
// again: [after-changesOverlap, after] as a sorted list of the IDs in it
// already answered, headed by the window's start (exclusive). A cursor
// the feed did not answer last has no window (its answers are unknown):
// the read starts at the cursor.
func (s *seenEvents) behind(cursor string, after int64) []int64 {
	if cursor != s.cursor || changesOverlap <= 0 {
		return nil
	}
	start := max(0, after-changesOverlap)
	out := []int64{start}
	for _, id := range s.ids {
		if id > start && id <= after {
			out = append(out, id)
		}
	}
	return out
}

// answered keeps the IDs a read answered (and those kept still within
// the overlap of its cursor, newest).
func (s *seenEvents) answered(cursor string, newest int64, ids []int64) {
	keep := s.ids[:0]
	for _, id := range s.ids {
		if id > newest-changesOverlap {
			keep = append(keep, id)
		}
	}
	for _, id := range ids {
		if id > newest-changesOverlap && id <= newest {
			keep = append(keep, id)
		}
	}
	slices.Sort(keep)
	s.ids, s.cursor = slices.Compact(keep), cursor
}

func (s *seenEvents) forget() { s.ids, s.cursor = nil, "" }

// late is the page's events at or behind after that the window behind
// (from seenEvents.behind) does not hold: committed after the read that
// passed their IDs.
func (p *mChangesPage) late(after int64, behind []int64) mChangesPage {
	var out mChangesPage
	if len(behind) == 0 {
		return out
	}
	for _, e := range p.Events {
		if e.ID > behind[0] && e.ID <= after {
			if _, found := slices.BinarySearch(behind[1:], e.ID); !found {
				out.Events = append(out.Events, e)
			}
		}
	}
	return out
}

// ids appends the page's event IDs to to.
func (p *mChangesPage) ids(to []int64) []int64 {
	for _, e := range p.Events {
		to = append(to, e.ID)
	}
	return to
}

// newest is the page's newest event ID (0 for none).
func (p *mChangesPage) newest() int64 {
	var n int64
	for _, e := range p.Events {
		n = max(n, e.ID)
	}
	return n
}

// newestEvent is the newest event's ID (0 when there is none).
func (d *Driver) newestEvent(ctx context.Context) (int64, error) {
	var page mChangesPage
	p := url.Values{"level": {changesLevel}, "limit": {"1"}}
	if err := d.c.callLimit(ctx, http.MethodGet, "events/", "query", p, &page, changesAnswerMax); err != nil {
		return 0, err
	}
	return page.collect(0, nil, nil), nil
}

func (d *Driver) eventsAfter(ctx context.Context, after int64) (mChangesPage, error) {
	var page mChangesPage
	p := url.Values{"level": {changesLevel}, "after": {strconv.FormatInt(after, 10)}, "limit": {strconv.Itoa(changesLimit)}}
	err := d.c.callLimit(ctx, http.MethodGet, "events/", "query", p, &page, changesAnswerMax)
	return page, err
}

// collect adds the machines of the page's status changes after after to
// machines (each once, by seen; nil machines: none) and answers the
// newest event ID, never less than after.
func (p *mChangesPage) collect(after int64, seen map[string]struct{}, machines *[]string) int64 {
	newest := after
	for _, e := range p.Events {
		if e.ID <= after {
			continue // not after the cursor (a MAAS that ignored after)
		}
		newest = max(newest, e.ID)
		if machines == nil || e.Type != changesType || e.Node == "" {
			continue
		}
		if _, dup := seen[e.Node]; !dup {
			seen[e.Node] = struct{}{}
			*machines = append(*machines, e.Node)
		}
	}
	return newest
}

// parseCursor reads a cursor Changes gave: a non-negative event ID as
// formatCursor writes it (anything else is not one).
func parseCursor(s string) (int64, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0 && formatCursor(n) == s
}

func formatCursor(id int64) string { return strconv.FormatInt(id, 10) }

// changedTo is the status a machine's newest status change event in an
// answer changed it to ("" when its description does not say), and the
// event's ID.
type changedTo struct {
	id    int64
	state string
}

// lastStates notes in last, for each machine of the page's status
// changes after after, the status its newest one changed it to: MAAS
// describes each "From 'Deploying' to 'Deployed'" (with " (to USER)"
// when allocated; signals/events.py), the names of status_name.
func (p *mChangesPage) lastStates(after int64, last map[string]changedTo) {
	for _, e := range p.Events {
		if e.ID <= after || e.Type != changesType || e.Node == "" {
			continue
		}
		if l, ok := last[e.Node]; !ok || e.ID > l.id {
			last[e.Node] = changedTo{id: e.ID, state: statusChangedTo(e.Description)}
		}
	}
}

// statusChangedTo is the status a status change event's description
// names as the new one ("" when the description is not MAAS's form).
func statusChangedTo(desc string) string {
	rest, ok := strings.CutPrefix(desc, "From '")
	if !ok {
		return ""
	}
	_, rest, ok = strings.Cut(rest, "' to '")
	if !ok {
		return ""
	}
	to, _, ok := strings.Cut(rest, "'")
	if !ok || to == "" || len(to) > 64 {
		return ""
	}
	return to
}

// statesOf is the known new statuses of last, by machine ID (nil when
// none is known).
func statesOf(last map[string]changedTo) map[string]string {
	var out map[string]string
	for id, l := range last {
		if l.state == "" {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(last))
		}
		out[id] = l.state
	}
	return out
}
