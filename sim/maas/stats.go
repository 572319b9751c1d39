package maas

import (
	"net/http"
	"sort"
	"sync"
)

// Stats counts requests per method, path template and op, and answers by
// status code: how many MAAS calls a deploy costs.
type Stats struct {
	mu       sync.Mutex
	requests map[string]int // "GET /machines/ op=" -> count
	statuses map[int]int
	total    int
}

func newStats() *Stats { return &Stats{requests: map[string]int{}, statuses: map[int]int{}} }

func (st *Stats) record(key string, status int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.requests[key]++
	st.statuses[status]++
	st.total++
}

// StatsSnapshot is the JSON at /sim/stats.
type StatsSnapshot struct {
	Total    int            `json:"total"`
	Requests []RequestCount `json:"requests"`
	Statuses map[int]int    `json:"statuses"`
}

// RequestCount is the count of one kind of request.
type RequestCount struct {
	Request string `json:"request"` // e.g. "POST /machines/{system_id}/?op=deploy"
	Count   int    `json:"count"`
}

// Snapshot returns the counts so far.
func (st *Stats) Snapshot() StatsSnapshot {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := StatsSnapshot{Total: st.total, Statuses: map[int]int{}}
	for k, v := range st.requests {
		out.Requests = append(out.Requests, RequestCount{k, v})
	}
	for k, v := range st.statuses {
		out.Statuses[k] = v
	}
	sort.Slice(out.Requests, func(i, j int) bool { return out.Requests[i].Request < out.Requests[j].Request })
	return out
}

func (s *Server) serveStats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.stats.Snapshot())
}
