package maas

import (
	"fmt"
	"net/http"
)

// Recovery ops: rescue mode, hardware testing, and the state rules MAAS
// applies to them (src/maasserver/models/node.py start_rescue_mode,
// stop_rescue_mode, update_power_state, start_testing, abort_testing;
// src/metadataserver/api.py _process_testing; src/maasserver/node_action.py
// Test.actionable_statuses).

// More phases (phases.go).
const (
	PhaseRescue     = "rescue"      // Entering rescue mode: the rescue environment PXE-boots
	PhaseExitRescue = "exit-rescue" // Exiting rescue mode: the power action that ends it
	PhaseTest       = "test"        // Testing: the hardware tests
)

// transitionError is MAAS's NodeStateViolation of a move its status
// table does not allow (Node._validate_status_transition): a 409.
func transitionError(from, to int) *apiError {
	return conflict("Invalid transition: %s -> %s.", StatusName(from), StatusName(to))
}

// opRescueMode starts rescue mode (POST op=rescue_mode): Entering rescue
// mode, the machine owned by the caller and PXE-booted into the rescue
// environment, then Rescue mode once it booted (Failed to enter rescue
// mode on a fault). MAAS checks nothing but its status table, so any
// status that may move to Entering rescue mode may start it; Entering
// rescue mode itself is a transition to the same status, which MAAS
// allows (the lab does not boot the machine again).
func (s *Server) opRescueMode(m *machine, req *request) (any, *apiError) {
	if m.Status == StatusEnteringRescueMode {
		return machineAnswer{m}, nil
	}
	if !canMove(m.Status, StatusEnteringRescueMode) {
		return nil, transitionError(m.Status, StatusEnteringRescueMode)
	}
	s.cancelPhase(m)
	s.move(m, StatusEnteringRescueMode)
	m.Owner = req.user
	m.StatusMessage = "Entering rescue mode"
	s.addEvent(m, "User starting rescue mode", "DEBUG", "start rescue mode")
	s.addEvent(m, "Entering rescue mode", "INFO", "rescue mode started by "+req.user)
	s.bootPXE(m)
	mf := s.faults.machine(m.Hostname)
	s.schedule(m, PhaseRescue, or(s.dur.Rescue, DefaultDurations.Rescue), func() {
		if m.failRescues < mf.FailRescue {
			m.failRescues++
			s.move(m, StatusFailedEnteringRescueMode)
			m.StatusMessage = "Failed to enter rescue mode."
			s.addEvent(m, "Marking node failed", "ERROR", "Failed to enter rescue mode: the rescue environment did not boot (injected fault)") // mark_failed
			return
		}
		s.move(m, StatusRescueMode)
		m.StatusMessage = "Rescue mode"
		s.addEvent(m, "Rescue mode", "INFO", "rescue mode entered")
	})
	return machineAnswer{m}, nil
}

// opExitRescueMode leaves rescue mode (POST op=exit_rescue_mode):
// Exiting rescue mode, then back to the status before rescue mode. As in
// MAAS, a machine that was Deployed is power cycled into its OS and
// comes back Deployed (power on, still owned); one that was Ready or
// Broken is powered off and comes back to it without an owner. For any
// other earlier status MAAS sends no power action, the machine stays on
// in the rescue environment and MAAS gives up after its 5-minute timeout
// (Failed to exit rescue mode); the lab does the same.
func (s *Server) opExitRescueMode(m *machine, req *request) (any, *apiError) {
	if m.Status != StatusExitingRescueMode && !canMove(m.Status, StatusExitingRescueMode) {
		return nil, transitionError(m.Status, StatusExitingRescueMode)
	}
	s.cancelPhase(m)
	s.move(m, StatusExitingRescueMode)
	m.StatusMessage = "Exiting rescue mode"
	s.addEvent(m, "User stopping rescue mode", "DEBUG", "stop rescue mode by "+req.user)
	prev := m.PrevStatus
	switch prev {
	case StatusDeployed:
		s.schedule(m, PhaseExitRescue, s.dur.PowerCycle, func() {
			if s.power(m, "cycle") != nil {
				s.failExitRescue(m)
				return
			}
			s.move(m, StatusDeployed)
			m.StatusMessage = ""
			s.addEvent(m, "Exited rescue mode", "INFO", "rescue mode exited")
		})
	case StatusReady, StatusBroken:
		s.schedule(m, PhaseExitRescue, s.dur.PowerCycle, func() {
			if s.power(m, "off") != nil {
				s.failExitRescue(m)
				return
			}
			s.move(m, prev)
			m.Owner, m.StatusMessage = "", ""
			s.addEvent(m, "Exited rescue mode", "INFO", "rescue mode exited")
		})
	default:
		s.schedule(m, PhaseExitRescue, s.dur.ReleaseTimeout, func() { s.failExitRescue(m) })
	}
	return machineAnswer{m}, nil
}

func (s *Server) failExitRescue(m *machine) {
	s.move(m, StatusFailedExitingRescueMode)
	m.StatusMessage = "Failed to exit rescue mode."
	s.addEvent(m, "Failed exiting rescue mode", "ERROR", fmt.Sprintf("Failed to exit rescue mode: the machine is still powered %s", m.PowerState))
}

// testable are the statuses MAAS lets a machine start testing from
// (node_action.py Test.actionable_statuses, which TestForm checks).
func testable(st int) bool {
	switch st {
	case StatusFailedCommissioning, StatusNew, StatusReady, StatusReserved, StatusAllocated, StatusFailedDeployment,
		StatusDeployed, StatusMissing, StatusRetired, StatusBroken, StatusRescueMode, StatusFailedReleasing,
		StatusFailedDiskErasing, StatusFailedEnteringRescueMode, StatusFailedExitingRescueMode, StatusFailedTesting:
		return true
	}
	return false
}

// resetsToReady are the statuses a passed test returns to Ready from
// (node_status.py NODE_TESTING_RESET_READY_TRANSITIONS).
func resetsToReady(st int) bool {
	switch st {
	case StatusNew, StatusCommissioning, StatusFailedDeployment, StatusMissing, StatusRetired, StatusBroken,
		StatusFailedReleasing, StatusFailedDiskErasing, StatusFailedEnteringRescueMode,
		StatusFailedExitingRescueMode, StatusFailedTesting:
		return true
	}
	return false
}

// opTest runs the hardware tests (POST op=test): Testing, then back where
// the machine was (Ready from a failed or broken state, New from Failed
// commissioning), or Failed testing on a fault. A state MAAS does not
// test from is refused as TestForm refuses it: 400 with a form error.
func (s *Server) opTest(m *machine, req *request) (any, *apiError) {
	if !testable(m.Status) {
		return nil, badRequest("__all__", "Test is not available because of the current state of the node.")
	}
	if m.Status == StatusNew && !m.commissioned {
		return nil, errorf(http.StatusBadRequest, "Unable to start machine testing; this node has never been commissioned. Please use the 'Commission' action to commission & test this machine.")
	}
	s.cancelPhase(m)
	s.move(m, StatusTesting)
	if m.Owner == "" {
		m.Owner = req.user
	}
	m.StatusMessage = "Testing"
	s.addEvent(m, "User starting node testing", "DEBUG", "start testing")
	s.addEvent(m, "Testing", "INFO", "testing started")
	s.bootPXE(m)
	mf := s.faults.machine(m.Hostname)
	s.schedule(m, PhaseTest, or(s.dur.Test, DefaultDurations.Test), func() {
		if m.failTests < mf.FailTesting {
			m.failTests++
			s.move(m, StatusFailedTesting)
			m.StatusMessage = "Failed testing: memtester failed (injected fault)"
			s.addEvent(m, "Failed testing", "ERROR", m.StatusMessage)
			_ = s.power(m, "off")
			return
		}
		s.move(m, s.testedTo(m))
		m.StatusMessage = ""
		switch m.Status { // MAAS's signal handler tells only of these
		case StatusReady:
			s.addEvent(m, "Ready", "INFO", "testing passed")
		case StatusNew:
			s.addEvent(m, "New", "INFO", "testing passed")
		}
		if m.Status == StatusDeployed {
			_ = s.power(m, "cycle") // back to its OS
		} else {
			_ = s.power(m, "off")
		}
	})
	return machineAnswer{m}, nil
}

// testedTo is where a machine goes when its tests pass.
func (s *Server) testedTo(m *machine) int {
	switch {
	case resetsToReady(m.PrevStatus):
		return StatusReady
	case m.PrevStatus == StatusFailedCommissioning:
		return StatusNew
	}
	return m.PrevStatus
}
