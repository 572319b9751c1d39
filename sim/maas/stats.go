package maas

import (
	"net/http"
	"sort"
	"strings"
	"sync"
)

// Stats counts requests per method, path template and op, and answers by
// status code: how many MAAS calls a deploy costs.
type Stats struct {
	mu       sync.Mutex
	requests map[string]int // "GET /machines/ op=" -> count
	statuses map[int]int
	total    int
	// listedByID: the machines that listings were asked for by ID (the
	// engine's status poll reads this many machine objects).
	listedByID int
}

func newStats() *Stats { return &Stats{requests: map[string]int{}, statuses: map[int]int{}} }

// arrived counts a request by its key as it arrives, before its handler
// answers: a client that has its answer always finds its request counted
// (counting on return let a test read a count one short).
func (st *Stats) arrived(key string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.requests[key]++
	st.total++
}

// listed counts n machines asked for by ID in a listing.
func (st *Stats) listed(n int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.listedByID += n
}

// answered counts the status a request was answered with.
func (st *Stats) answered(status int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.statuses[status]++
}

// StatsSnapshot is the JSON at /sim/stats.
type StatsSnapshot struct {
	Total    int            `json:"total"`
	Requests []RequestCount `json:"requests"`
	Statuses map[int]int    `json:"statuses"`
	// ListedByID: the machines listings were asked for by ID (GET
	// machines/?id=...&id=...: the engine's status poll).
	ListedByID int `json:"listed_by_id"`
	// Lifecycle is Server.Lifecycle, by system ID. /sim/stats fills it
	// in; Stats.Snapshot, which counts requests only, leaves it nil.
	Lifecycle map[string]MachineLifecycle `json:"lifecycle"`
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
	out := StatsSnapshot{Total: st.total, Statuses: map[int]int{}, ListedByID: st.listedByID}
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
	snap := s.stats.Snapshot()
	snap.Lifecycle = s.Lifecycle()
	writeJSON(w, http.StatusOK, snap)
}

// MachineLifecycle counts what the simulator did to one machine, recorded
// where its state changes: what a deploy engine's tests need to prove that
// no machine was allocated or deployed twice.
type MachineLifecycle struct {
	Hostname string `json:"hostname"` // as of the last count
	// Allocations: moves to Allocated, by allocate (not dry_run) or by a
	// deploy of a Ready machine, which allocates it on the way.
	Allocations int `json:"allocations"`
	// DeployStarts: deploy ops accepted (the machine moved to Deploying).
	DeployStarts int `json:"deploy_starts"`
	// DeployRefused: deploy ops refused because of the machine's state
	// (409) or owner (403). Validation errors (400 on distro_series),
	// injected faults and unknown machines (404) are not counted.
	DeployRefused int `json:"deploy_refused"`
	// DeployFailures: deployments that ended in Failed deployment, by a
	// failing installation or by MAAS's node timeout.
	DeployFailures int `json:"deploy_failures"`
	// Releases: release ops accepted (machine or machines op).
	Releases int `json:"releases"`
	// CommissionStarts: commissionings started (commission op, or create
	// with commission=true).
	CommissionStarts int `json:"commission_starts"`
	// DuplicateDeploys: deploy starts of a machine whose previous
	// deployment did not end in Failed deployment (it succeeded, or was
	// still running, or was aborted by a release). The first deploy start
	// and the redeploy of a failed deployment are not counted; a
	// deliberate redeploy of a healthy machine is, and only the engine's
	// request can excuse it (see DuplicateDeploys).
	DuplicateDeploys int `json:"duplicate_deploys"`
}

// deployStarted counts an accepted deploy start of m; s.mu is held.
func (s *Server) deployStarted(m *machine) {
	lc := s.lifecycleOf(m)
	if lc.DeployStarts > 0 && !m.lastDeployBad {
		lc.DuplicateDeploys++
	}
	lc.DeployStarts++
	m.lastDeployBad = false
}

// deployFailed counts a deployment of m that ended in Failed deployment;
// s.mu is held.
func (s *Server) deployFailed(m *machine) {
	s.lifecycleOf(m).DeployFailures++
	m.lastDeployBad = true
}

// DuplicateDeploys sums, over machines, the deploy starts not explained
// by a failed deployment (MachineLifecycle.DuplicateDeploys), less the
// redeploys the engine explicitly requested of that machine (explicit, by
// system ID; nil when none), never below 0 per machine.
func DuplicateDeploys(lc map[string]MachineLifecycle, explicit map[string]int) int {
	n := 0
	for id, c := range lc {
		n += max(0, c.DuplicateDeploys-explicit[id])
	}
	return n
}

// ByKind sums the request counts by method and op ("POST deploy"), or by
// method and path template for requests without an op ("GET
// /machines/{system_id}/").
func (st *Stats) ByKind() map[string]int {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := map[string]int{}
	for k, v := range st.requests {
		method, rest, _ := strings.Cut(k, " ")
		path, op, _ := strings.Cut(rest, "?op=")
		if op == "" {
			op = path
		}
		out[method+" "+op] += v
	}
	return out
}

// lifecycleOf returns m's counters, creating them; call it with s.mu held.
func (s *Server) lifecycleOf(m *machine) *MachineLifecycle {
	lc := s.lifecycle[m.SystemID]
	if lc == nil {
		lc = &MachineLifecycle{}
		s.lifecycle[m.SystemID] = lc
	}
	lc.Hostname = m.Hostname
	return lc
}

// Lifecycle returns a copy of the per-machine counters, by system ID
// (machines deleted since keep theirs).
func (s *Server) Lifecycle() map[string]MachineLifecycle {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]MachineLifecycle, len(s.lifecycle))
	for id, lc := range s.lifecycle {
		out[id] = *lc
	}
	return out
}

// DuplicateAllocations counts the allocations and deployments of a machine
// that were not preceded by a release or a failed deployment of that
// machine: per machine, max(0, Allocations-1-Releases) plus
// max(0, DeployStarts-1-DeployFailures-Releases), summed. It is 0 when
// every machine was allocated and deployed at most once per release, and
// redeployed only after a failed deployment. (A deployment aborted and
// started again counts as a duplicate.)
func DuplicateAllocations(lc map[string]MachineLifecycle) int {
	n := 0
	for _, c := range lc {
		n += max(0, c.Allocations-1-c.Releases)
		n += max(0, c.DeployStarts-1-c.DeployFailures-c.Releases)
	}
	return n
}
