package lab

import (
	"time"

	"github.com/slipway-dev/slipway/sim/maas"
)

// The lab's own phases (the simulator's are maas.Phase*).
const (
	// PhaseEnlist: a machine MAAS did not know PXE-booted and enlisted
	// itself (maas.DefaultDurations.Enlist).
	PhaseEnlist = "enlist"
	// PhaseBoot: a deployed OS booted before its node agent started
	// (Config.BootDelay).
	PhaseBoot = "boot"
)

// Timeline is what a machine waited: every phase that ran its course, in
// the order recorded.
type Timeline struct {
	SystemID string       // of the last deployment the lab saw ("" before)
	Phases   []maas.Phase // the lab's and the simulator's
}

// Floor is the sum of the phases' nominal (scaled) durations: no
// orchestrator can get the machine through them faster, since a machine
// is in one phase at a time.
func (tl Timeline) Floor() time.Duration {
	var d time.Duration
	for _, p := range tl.Phases {
		d += p.Nominal
	}
	return d
}

// Until keeps the phases that ended by t.
func (tl Timeline) Until(t time.Time) Timeline {
	out := Timeline{SystemID: tl.SystemID}
	for _, p := range tl.Phases {
		if !p.End.After(t) {
			out.Phases = append(out.Phases, p)
		}
	}
	return out
}

// Start is when the first phase began (zero without phases).
func (tl Timeline) Start() time.Time {
	var t time.Time
	for _, p := range tl.Phases {
		if t.IsZero() || p.Start.Before(t) {
			t = p.Start
		}
	}
	return t
}

// Timeline returns a copy of the machine's timeline.
func (m *Machine) Timeline() Timeline {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Timeline{SystemID: m.systemID, Phases: append([]maas.Phase(nil), m.phases...)}
}

// waited records a phase the machine waited to its end.
func (m *Machine) waited(p maas.Phase) {
	m.mu.Lock()
	m.phases = append(m.phases, p)
	m.mu.Unlock()
	m.consolePhase(p)
}

// PhaseWaited records the simulator's phases in the machine's timeline.
func (h hooks) PhaseWaited(_ string, macs []string, p maas.Phase) {
	if m := h.l.machineByMAC(macs); m != nil {
		m.waited(p)
	}
}

// Since keeps the phases that started at or after t.
func (tl Timeline) Since(t time.Time) Timeline {
	out := Timeline{SystemID: tl.SystemID}
	for _, p := range tl.Phases {
		if !p.Start.Before(t) {
			out.Phases = append(out.Phases, p)
		}
	}
	return out
}
