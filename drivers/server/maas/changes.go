package maas

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

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
// commits after a later one's is behind the cursor when it appears, and
// is missed; the caller's periodic full read covers it.
const (
	changesLevel = "DEBUG" // every level from DEBUG up (not AUDIT)
	changesType  = "Node changed status"
	// changesAnswerMax bounds one page's answer (1000 events of a few
	// hundred bytes each).
	changesAnswerMax = 4 << 20
)

// changesLimit is a page's events (MAAS's MAX_EVENT_LOG_COUNT) and
// changesPages the pages one Changes reads; variables for the tests only.
var changesLimit, changesPages = 1000, 20

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
	seen := map[string]struct{}{}
	last := map[string]changedTo{}
	var out drivers.Changes
	for range changesPages {
		page, err := d.eventsAfter(ctx, after)
		if err != nil {
			return drivers.Changes{}, err
		}
		page.lastStates(after, last)
		after = page.collect(after, seen, &out.Machines)
		if len(page.Events) < changesLimit {
			out.Cursor = formatCursor(after)
			out.States = statesOf(last)
			return out, nil
		}
	}
	return drivers.Changes{Cursor: formatCursor(after), Reset: true}, nil
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
