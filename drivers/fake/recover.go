package fake

import (
	"slices"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// recoverMore runs the recovery actions beyond abort and mark-fixed, as
// the MAAS driver does them (each idempotent; the long ones InProgress
// for Script.Polls calls):
//
//   - mark-broken: an owned, allocated machine (Allocated, Deploying,
//     Deployed) becomes Broken; Broken is Done; another is Failed (MAAS
//     lets only the owner mark it).
//   - rescue: Entering rescue mode, then Rescue mode; from New, Ready,
//     Allocated, Deployed or Broken.
//   - exit-rescue: Exiting rescue mode, then the state before rescue;
//     a machine not in rescue mode is Done.
//   - test: Testing, then back where it was; Done without a new run when
//     the last run finished in the machine's current state at or after
//     ref.BudgetFrom.
//   - delete: removes a machine this orchestrator owns for the node, or
//     an unowned one at rest; gone is Done; another node's or a busy one
//     is refused.
//
// Called with f.mu held.
func (f *Server) recoverMore(ref drivers.NodeRef, m *machine, action drivers.Recovery) (drivers.Result, error) {
	switch action {
	case drivers.RecoveryMarkBroken:
		r := markBroken(m)
		f.note(m)
		return r, nil
	case drivers.RecoveryRescue:
		return f.rescue(m), nil
	case drivers.RecoveryExitRescue:
		return f.exitRescue(m), nil
	case drivers.RecoveryTest:
		return f.test(ref, m), nil
	case drivers.RecoveryDelete:
		return f.deleteMachine(ref, m)
	}
	return drivers.Result{}, drivers.Errorf(drivers.Permanent, "fake: unknown recovery action %q", action)
}

// atRest are the states a machine rests in (no operation runs).
var atRest = []string{StateNew, StateReady, StateAllocated, StateDeployed, StateBroken}

func markBroken(m *machine) drivers.Result {
	switch {
	case m.State == StateBroken:
		return drivers.Done("fake: machine %s is Broken", m.MachineID)
	case !m.Owned || !slices.Contains([]string{StateAllocated, StateDeploying, StateDeployed}, m.State):
		return drivers.Failed("fake: cannot mark-broken machine %s: it is %s and has no owner (only the owner may mark it broken)", m.MachineID, m.State)
	}
	from := m.State
	m.State, m.polls = StateBroken, 0
	return drivers.Done("fake: mark-broken: machine %s moved from %s to Broken", m.MachineID, from)
}

func (f *Server) rescue(m *machine) drivers.Result {
	switch {
	case m.State == StateRescue:
		return drivers.Done("fake: machine %s is in Rescue mode", m.MachineID)
	case m.State == StateEnteringRescue:
	case slices.Contains(atRest, m.State):
		m.before, m.State, m.polls = m.State, StateEnteringRescue, 0
		f.note(m)
	default:
		return drivers.Failed("fake: cannot enter rescue mode: machine %s is %s", m.MachineID, m.State)
	}
	return f.progress(m, "entering rescue mode", func() { m.State = StateRescue })
}

func (f *Server) exitRescue(m *machine) drivers.Result {
	switch m.State {
	case StateRescue, StateEnteringRescue:
		m.State, m.polls = StateExitingRescue, 0
		f.note(m)
	case StateExitingRescue:
	default:
		return drivers.Done("fake: machine %s is not in rescue mode (%s)", m.MachineID, m.State)
	}
	return f.progress(m, "exiting rescue mode", func() { m.State = m.before })
}

func (f *Server) test(ref drivers.NodeRef, m *machine) drivers.Result {
	switch {
	case m.State == StateTesting:
	case !m.testedAt.IsZero() && m.testedIn == m.State && !m.testedAt.Before(ref.BudgetFrom):
		return drivers.Done("fake: hardware tests of machine %s passed; it is %s", m.MachineID, m.State)
	case m.State == StateNew:
		return drivers.Failed("fake: cannot test machine %s: it is New (commission it first)", m.MachineID)
	case slices.Contains(atRest, m.State) || m.State == StateRescue:
		m.before, m.State, m.polls = m.State, StateTesting, 0
		f.note(m)
	default:
		return drivers.Failed("fake: cannot test machine %s: it is %s", m.MachineID, m.State)
	}
	return f.progress(m, "testing", func() {
		m.State = m.before
		f.note(m)
		m.testedAt, m.testedIn = time.Now(), m.State
	})
}

func (f *Server) deleteMachine(ref drivers.NodeRef, m *machine) (drivers.Result, error) {
	switch {
	case m.Owned && m.Node != ref.Name:
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "fake: machine %s belongs to node %q, not %q; refusing to delete it", m.MachineID, m.Node, ref.Name)
	case !slices.Contains(atRest, m.State):
		return drivers.Failed("fake: will not delete machine %s: it is %s (an operation runs)", m.MachineID, m.State), nil
	case !m.Owned && m.State != StateNew && m.State != StateReady && m.State != StateBroken:
		return drivers.Failed("fake: will not delete machine %s: it is %s and not this orchestrator's", m.MachineID, m.State), nil
	}
	delete(f.machines, m.MachineID)
	if f.byNode[m.Node] == m.MachineID {
		delete(f.byNode, m.Node)
	}
	return drivers.Done("fake: machine %s deleted", m.MachineID), nil
}
