package redfish

import "time"

// Durations are the service's own times for its long operations, so that
// a bench or the demo can compute the floor of a baseline from the lab's
// figures rather than its own: no client gets a BMC through them faster.
type Durations struct {
	Update      time.Duration // a firmware update's run once its image is in (Options.UpdateDuration)
	BMCReset    time.Duration // the BMC's reset after its own update (Options.BMCResetDuration)
	VolumeBuild time.Duration // a RAID volume's build
	// SystemReset: a ComputerSystem.Reset takes effect at once in the lab
	// (the machine's boot is the lab's own phases: enlistment, etc.).
	SystemReset time.Duration
}

// Durations returns the service's durations.
func (s *Service) Durations() Durations {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Durations{Update: s.lab.o.UpdateDuration, BMCReset: s.lab.o.BMCResetDuration, VolumeBuild: volumeBuild}
}

// AppliedResets counts the system resets (a ComputerSystem.Reset that
// starts the machine, or a boot the service did not see) that applied
// staged BIOS settings or installed firmware: what a baseline cost in
// resets, as the BMC saw them.
func (s *Service) AppliedResets() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// staged is how many BIOS settings and system firmware versions wait for
// a reset. Called with mu held.
func (s *Service) staged() int {
	n := len(s.state.pending)
	for _, f := range s.lab.fw {
		if f.Kind != kindBMC && f.pending != "" {
			n++
		}
	}
	return n
}
