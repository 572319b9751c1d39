package maas

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The event log, as MAAS keeps it (src/maasserver/models/event.py) and
// answers it (src/maasserver/api/events.py query): every event has the
// next ID; a query takes filters, a level and at most 1000 events, either
// the newest (no after), the newest before an ID, or the OLDEST after an
// ID (returned newest first); next_uri and prev_uri page on.
//
// The lab keeps every event of a run (MAAS keeps them in its database):
// records are compact (about 64 bytes: the machine's ID and hostname
// share the machine's strings, the type is an index, a status change's
// description is rendered from the two statuses), in chunks that are
// never copied. maxEvents bounds the memory; past it the oldest chunk
// goes (docs/lab.md gives the figures).

const (
	eventChunk = 4096
	// maxEvents bounds the log (about 64 bytes each: 256 MiB at most).
	// A 10,000-node deploy emits 10 to 20 events a machine: ~200,000.
	maxEvents = 1 << 22
	// maxEventCount is MAAS's MAX_EVENT_LOG_COUNT; defaultEventCount its
	// DEFAULT_EVENT_LOG_LIMIT.
	maxEventCount     = 1000
	defaultEventCount = 100
	// statusChangedType is NODE_CHANGED_STATUS's description
	// (src/provisioningserver/events.py), level DEBUG in MAAS 3.x.
	statusChangedType  = "Node changed status"
	statusChangedLevel = "DEBUG"
	eventTimeFormat    = "Mon, 02 Jan. 2006 15:04:05"
)

// eventLevels orders MAAS's event levels (AUDIT is 0: a query at AUDIT
// answers only audit events).
var eventLevels = map[string]int{"AUDIT": 0, "DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}

// levelNames are the levels by their index in event.level.
var levelNames = []string{"AUDIT", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}

type event struct {
	SystemID, Hostname string
	desc               string // "" for a status change (rendered from from and to)
	created            int64  // Unix nanoseconds
	typ                uint16 // index in eventLog.types
	level              uint8  // index in levelNames
	from, to           int8   // a status change's statuses
	held               bool   // not answered until released (HoldStatusEvents)
}

type eventLog struct {
	chunks  [][]event
	first   int // the ID of chunks[0][0] (1 until the log passes maxEvents)
	n       int // events held
	types   []string
	typeIdx map[string]uint16
}

func (l *eventLog) typeOf(name string) uint16 {
	if i, ok := l.typeIdx[name]; ok {
		return i
	}
	if l.typeIdx == nil {
		l.typeIdx = map[string]uint16{}
	}
	i := uint16(len(l.types))
	l.types = append(l.types, name)
	l.typeIdx[name] = i
	return i
}

func levelIndex(level string) uint8 {
	for i, n := range levelNames {
		if n == level {
			return uint8(i)
		}
	}
	return 2 // INFO
}

// add appends e (its type named typ); it answers e's ID.
func (l *eventLog) add(e event, typ string) int {
	if l.first == 0 {
		l.first = 1
	}
	e.typ = l.typeOf(typ)
	if l.n >= maxEvents { // the oldest chunk goes
		l.chunks = l.chunks[1:]
		l.first += eventChunk
		l.n -= eventChunk
	}
	if len(l.chunks) == 0 || len(l.chunks[len(l.chunks)-1]) == eventChunk {
		l.chunks = append(l.chunks, make([]event, 0, eventChunk))
	}
	last := len(l.chunks) - 1
	l.chunks[last] = append(l.chunks[last], e)
	l.n++
	return l.first + l.n - 1
}

// last is the newest ID (first-1 when the log is empty).
func (l *eventLog) last() int { return max(l.first, 1) + l.n - 1 }

// get is the event with ID id, nil when the log does not hold it.
func (l *eventLog) get(id int) *event {
	i := id - max(l.first, 1)
	if i < 0 || i >= l.n {
		return nil
	}
	return &l.chunks[i/eventChunk][i%eventChunk]
}

// addEvent records an event (GET /events/?op=query).
func (s *Server) addEvent(m *machine, typ, level, desc string) {
	s.events.add(event{SystemID: m.SystemID, Hostname: m.Hostname, desc: desc, created: time.Now().UnixNano(),
		level: levelIndex(level)}, typ)
}

// setStatus is every change of a machine's status: as MAAS's
// emit_state_transition_event (src/maasserver/models/signals/events.py)
// on every save that changes it, it records NODE_CHANGED_STATUS, "From
// 'Ready' to 'Allocated'" (with " (to owner)" when allocated).
func (s *Server) setStatus(m *machine, to int) {
	from := m.Status
	m.Status = to
	if from == to {
		return
	}
	e := event{SystemID: m.SystemID, Hostname: m.Hostname, created: time.Now().UnixNano(),
		level: levelIndex(statusChangedLevel), from: int8(from), to: int8(to)}
	if to == StatusAllocated {
		e.desc = fmt.Sprintf("From '%s' to '%s' (to %s)", StatusName(from), StatusName(to), m.Owner)
	}
	e.held = s.holdNext[m.SystemID]
	id := s.events.add(e, statusChangedType)
	if e.held {
		delete(s.holdNext, m.SystemID)
		s.heldEvents = append(s.heldEvents, id)
	}
}

func (s *Server) describe(e *event) string {
	if e.desc != "" || s.events.types[e.typ] != statusChangedType {
		return e.desc
	}
	return fmt.Sprintf("From '%s' to '%s'", StatusName(int(e.from)), StatusName(int(e.to)))
}

// eventQuery is a query's parameters.
type eventQuery struct {
	after, before *int
	limit, level  int
	ids, hosts    []string
}

func intParam(f formValues, name string) (*int, *apiError) {
	v, ok := f[name]
	if !ok || len(v) == 0 || v[0] == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v[0]))
	if err != nil {
		return nil, badRequest(name, "Please enter an integer value")
	}
	return &n, nil
}

func parseEventQuery(f formValues) (eventQuery, *apiError) {
	var q eventQuery
	var aerr *apiError
	if q.after, aerr = intParam(f, "after"); aerr != nil {
		return q, aerr
	}
	if q.before, aerr = intParam(f, "before"); aerr != nil {
		return q, aerr
	}
	limit, aerr := intParam(f, "limit")
	if aerr != nil {
		return q, aerr
	}
	q.limit = defaultEventCount
	if limit != nil {
		q.limit = max(*limit, 1)
	}
	if q.limit > maxEventCount {
		return q, errorf(http.StatusBadRequest, "Requested number of events %d is greater than limit: %d", q.limit, maxEventCount)
	}
	level := orDefault(f.get("level"), "INFO")
	lv, ok := eventLevels[level]
	if !ok {
		return q, errorf(http.StatusBadRequest, "Unrecognised log level: %s", level)
	}
	q.level = lv
	if q.after != nil && q.before != nil {
		return q, errorf(http.StatusBadRequest, "There is undetermined behaviour when both `after` and `before` are specified.")
	}
	q.ids, q.hosts = f["id"], f["hostname"]
	return q, nil
}

// eventMatches: the event is of an existing machine the query names, at its
// level (AUDIT: audit events only).
func (s *Server) eventMatches(q *eventQuery, e *event) bool {
	if e.held {
		return false
	}
	lv := eventLevels[levelNames[e.level]]
	if (q.level == 0) != (lv == 0) || lv < q.level {
		return false
	}
	m := s.machines[e.SystemID]
	if m == nil {
		return false // MAAS answers the events of the nodes it has
	}
	return (len(q.ids) == 0 || contains(q.ids, m.SystemID)) && (len(q.hosts) == 0 || contains(q.hosts, m.Hostname))
}

// selectEvents is the IDs of the query's events, newest first.
func (s *Server) selectEvents(q *eventQuery) []int {
	var out []int
	if q.after != nil { // the oldest limit after it, then newest first
		for id := max(*q.after+1, s.events.first); id <= s.events.last() && len(out) < q.limit; id++ {
			if e := s.events.get(id); e != nil && s.eventMatches(q, e) {
				out = append(out, id)
			}
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}
	top := s.events.last()
	if q.before != nil {
		top = min(top, *q.before-1)
	}
	for id := top; id >= s.events.first && len(out) < q.limit; id-- {
		if e := s.events.get(id); e != nil && s.eventMatches(q, e) {
			out = append(out, id)
		}
	}
	return out
}

// eventsQuery is GET /events/?op=query.
func (s *Server) eventsQuery(req *request) (any, *apiError) {
	q, aerr := parseEventQuery(req.form)
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.selectEvents(&q)
	out := make([]any, len(ids))
	for i, id := range ids {
		e := s.events.get(id)
		out[i] = map[string]any{"id": id, "node": e.SystemID, "hostname": e.Hostname, "type": s.events.types[e.typ],
			"level": levelNames[e.level], "description": s.describe(e), "username": nil,
			"created": time.Unix(0, e.created).UTC().Format(eventTimeFormat)}
	}
	next, prev := eventURIs(req.form, &q, ids)
	return map[string]any{"count": len(out), "events": out, "next_uri": next, "prev_uri": prev}, nil
}

// eventURIs are MAAS's next_uri (newer events) and prev_uri (older; nil
// when there are none and never will be), ids newest first.
func eventURIs(f formValues, q *eventQuery, ids []int) (next string, prev any) {
	keep := func(drop string) url.Values {
		v := url.Values{}
		for _, k := range []string{"agent_name", "domain", "hostname", "id", "level", "limit", "mac_address", "op", "zone", "owner", "after", "before"} {
			if k != drop && len(f[k]) > 0 {
				v[k] = f[k]
			}
		}
		return v
	}
	base := APIPrefix + "/events/?"
	nv, pv := keep("before"), keep("after")
	switch {
	case len(ids) > 0:
		nv.Set("after", strconv.Itoa(ids[0]))
		pv.Set("before", strconv.Itoa(ids[len(ids)-1]))
	default:
		if q.before != nil {
			nv.Set("after", strconv.Itoa(*q.before-1))
		}
		if q.after == nil {
			return base + nv.Encode(), nil
		}
		pv.Set("before", strconv.Itoa(*q.after+1))
	}
	return base + nv.Encode(), base + pv.Encode()
}

// HoldStatusEvents makes the next status change of each machine named
// take its event ID at once but stay out of every query until
// ReleaseEvents: in MAAS, the event of a transaction that commits after
// a later event's (IDs come from a sequence), which a reader of the log
// then finds behind the point it read to.
func (s *Server) HoldStatusEvents(systemIDs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holdNext == nil {
		s.holdNext = map[string]bool{}
	}
	for _, id := range systemIDs {
		s.holdNext[id] = true
	}
}

// ReleaseEvents answers the held events from now on.
func (s *Server) ReleaseEvents() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range s.heldEvents {
		if e := s.events.get(id); e != nil {
			e.held = false
		}
	}
	s.heldEvents, s.holdNext = nil, nil
}
