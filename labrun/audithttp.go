package labrun

import (
	"encoding/json"
	"math"
	"net/http"
	"sort"
	"time"

	"github.com/slipway-dev/slipway/sim/lab"
)

// AuditPath is where `orchestrator lab` serves AuditHandler.
const AuditPath = "/sim/audit"

// AuditRequest is what an engine in another process tells the lab's
// audit: which machine each node's record claims, the deploy starts its
// explicit requests excuse (none for a single deploy task) and since
// when the floor counts (the deploy task's start).
type AuditRequest struct {
	Claims  map[string]string `json:"claims"`  // node → system ID
	Excused map[string]int    `json:"excused"` // system ID → deploy starts beyond the first requested
	Since   time.Time         `json:"since"`
}

// AuditReport is the lab's audit as JSON (AuditHandler's answer).
type AuditReport struct {
	Machines             int      `json:"machines"`
	Deployed             int      `json:"deployed"`
	Failed               int      `json:"failed"`
	Stuck                int      `json:"stuck"`
	Leaked               int      `json:"leaked"`
	FailedNodes          []string `json:"failed_nodes,omitempty"`
	StuckNodes           []string `json:"stuck_nodes,omitempty"`
	LeakedMachines       []string `json:"leaked_machines,omitempty"`
	DuplicateDeploys     int      `json:"duplicate_deploys"`
	DuplicateAllocations int      `json:"duplicate_allocations"`
	// FloorSeconds: the longest any machine waited in the lab's phases
	// that started at or after since (the demo's floor_seconds).
	FloorSeconds float64 `json:"floor_seconds"`
	// LastAgentSeconds: since → the last node agent's end (the lab's
	// view of the last node's outcome; 0 when none finished).
	LastAgentSeconds   float64        `json:"last_agent_seconds"`
	MAASRequests       int            `json:"maas_requests"`
	MAASRequestsByKind map[string]int `json:"maas_requests_by_kind"`
	// PhaseStarts: per phase, when the machines began it (their first
	// since since), in seconds since since: count, min, p10, p50, p90,
	// max. Where the wall time over the floor went: a spread of
	// commission starts is the identification's, of deploy starts the
	// configuration's.
	PhaseStarts map[string]Spread `json:"phase_starts,omitempty"`
}

// Spread summarises times in seconds since an instant.
type Spread struct {
	N   int     `json:"n"`
	Min float64 `json:"min"`
	P10 float64 `json:"p10"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	Max float64 `json:"max"`
}

func spreadOf(ts []time.Time, since time.Time) Spread {
	d := make([]float64, len(ts))
	for i, t := range ts {
		d[i] = t.Sub(since).Seconds()
	}
	sort.Float64s(d)
	at := func(p float64) float64 { return round3(d[min(len(d)-1, int(p*float64(len(d))))]) }
	return Spread{N: len(d), Min: at(0), P10: at(0.1), P50: at(0.5), P90: at(0.9), Max: round3(d[len(d)-1])}
}

// Report turns an audit into its JSON form.
func (a Audit) Report(machines int, since time.Time) AuditReport {
	r := AuditReport{Machines: machines, Deployed: a.Deployed, Failed: len(a.Failed), Stuck: len(a.Stuck), Leaked: len(a.Leaked),
		FailedNodes: cap20(a.Failed), StuckNodes: cap20(a.Stuck), LeakedMachines: cap20(a.Leaked),
		DuplicateDeploys: a.DuplicateDeploys, DuplicateAllocations: a.DuplicateAllocations,
		FloorSeconds: round3(a.Floor.Seconds()), MAASRequests: a.MAASRequests, MAASRequestsByKind: a.MAASRequestsByKind}
	if !a.LastAgent.IsZero() && !since.IsZero() {
		r.LastAgentSeconds = round3(a.LastAgent.Sub(since).Seconds())
	}
	if !since.IsZero() && len(a.PhaseStarts) > 0 {
		r.PhaseStarts = map[string]Spread{}
		for name, ts := range a.PhaseStarts {
			r.PhaseStarts[name] = spreadOf(ts, since)
		}
	}
	return r
}

func cap20(s []string) []string { return s[:min(len(s), 20)] }

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// AuditHandler answers POST AuditRequest with the lab's AuditReport:
// the audit of an engine that runs in another process (scripts/bench-scale.sh).
func AuditHandler(lb *lab.Lab) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST an AuditRequest", http.StatusMethodNotAllowed)
			return
		}
		var req AuditRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&req); err != nil {
			http.Error(w, "audit request: "+err.Error(), http.StatusBadRequest)
			return
		}
		a := AuditLab(r.Context(), lb, req.Claims, req.Excused, req.Since)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(a.Report(len(lb.Machines()), req.Since))
	})
}
