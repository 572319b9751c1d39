package maas

import (
	"sort"
	"time"
)

// The phases the simulator makes a machine wait (Phase.Name).
const (
	PhaseCommission = "commission"
	PhaseDeploy     = "deploy" // a deployment, succeeded or failed (or timed out)
	PhaseRelease    = "release"
	PhaseErase      = "erase"
)

// Phase is one phase a machine waited to its end: Nominal is its scaled
// duration (what the machine could not do faster), Start and End when it
// began and ended in wall time (End-Start >= Nominal).
type Phase struct {
	Name       string
	Start, End time.Time
	Nominal    time.Duration
}

// PhaseHooks, when the MachineHooks implement it too, hear of every phase
// a machine waited to its end (not of a phase cut short by another, e.g.
// a deployment aborted by a release). Called on a goroutine of its own.
type PhaseHooks interface {
	PhaseWaited(systemID string, macs []string, p Phase)
}

// phaseWaited tells the hooks about a phase that ran its course; s.mu is
// held.
func (s *Server) phaseWaited(m *machine, p Phase) {
	if h, ok := s.opts.Hooks.(PhaseHooks); ok {
		id, macs := m.SystemID, m.macs()
		go h.PhaseWaited(id, macs, p)
	}
}

// MachineState is a machine as the simulator holds it: what an audit
// reads to count outcomes without asking the driver under test.
type MachineState struct {
	SystemID string
	Hostname string
	Status   string // MAAS's label, e.g. "Deployed"
	Owner    string
	MACs     []string
	Power    string // power_state: on, off, unknown, error
}

// Owned tells whether MAAS counts the machine as someone's: it has an
// owner (a deployed machine in rescue mode or testing keeps its owner),
// or it is Allocated, Deploying, Deployed or Failed deployment.
func (ms MachineState) Owned() bool {
	if ms.Owner != "" {
		return true
	}
	switch ms.Status {
	case StatusName(StatusAllocated), StatusName(StatusDeploying), StatusName(StatusDeployed),
		StatusName(StatusFailedDeployment):
		return true
	}
	return false
}

// Machines returns every machine's state, by system ID order.
func (s *Server) Machines() []MachineState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]MachineState, 0, len(s.machines))
	for _, m := range s.machines {
		out = append(out, MachineState{SystemID: m.SystemID, Hostname: m.Hostname, Status: StatusName(m.Status),
			Owner: m.Owner, MACs: m.macs(), Power: m.PowerState})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SystemID < out[j].SystemID })
	return out
}
