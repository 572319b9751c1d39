package maas

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// Polling intervals of the recovery actions.
const (
	pollAbort  = 5 * time.Second
	pollRescue = 10 * time.Second
	pollTest   = 15 * time.Second
)

// Recover runs a recovery action on the node's machine. Each action reads
// the machine first and is safe to repeat: asked again once its goal
// holds it is Done, while MAAS is on the way (Entering rescue mode,
// Testing, ...) it is InProgress and the caller asks again with the same
// action. A state the action does not apply to is Failed naming the
// state and what to do; an unknown action is a Permanent error.
//
// Which states allow what is MAAS's (src/maasserver/node_status.py
// NODE_TRANSITIONS, which the API enforces with a 409; the Test action's
// actionable statuses, which TestForm enforces with a 400):
//
//   - abort: Commissioning, Deploying, Disk erasing, Testing (POST
//     op=abort). Nothing running is Done; Releasing and the rescue mode
//     transitions cannot be aborted (Failed: wait, or exit-rescue).
//   - mark-fixed: Broken (op=mark_fixed) goes back to Ready, or Deployed
//     if it was; Ready or Deployed is Done.
//   - mark-broken: any state (op=mark_broken), but MAAS's API lets only
//     the machine's owner do it: an unowned machine, or one allocated to
//     another agent, is refused here. MAAS releases an allocated machine
//     on the way (no erase).
//   - rescue: New, Failed commissioning, Ready, Reserved, Allocated,
//     Failed deployment, Deployed, Missing, Retired, Broken, Failed disk
//     erasing, Failed testing (op=rescue_mode); Rescue mode is Done.
//   - exit-rescue: Entering rescue mode, Rescue mode, Failed to enter
//     rescue mode (op=exit_rescue_mode); MAAS returns the machine to the
//     state before rescue mode (a Deployed one power cycled into its OS,
//     a Ready or Broken one powered off). A machine not in rescue mode
//     is Done.
//   - test: the states rescue allows, plus Rescue mode and the other
//     failed states, but not New (op=test runs MAAS's default tests).
//   - delete: see delete.
//
// A failure of the action itself (Failed testing, Failed to enter or
// exit rescue mode) is Failed with MAAS's reason; it is tried again only
// when the attempt that failed started before n.BudgetFrom (the engine
// sets it when an operator's retry opens a fresh attempt).
func (d *Driver) Recover(ctx context.Context, n drivers.NodeRef, action drivers.Recovery) (drivers.Result, error) {
	if action == drivers.RecoveryDelete {
		return d.delete(ctx, n)
	}
	do := map[drivers.Recovery]func(context.Context, drivers.NodeRef, *mMachine) (drivers.Result, error){
		drivers.RecoveryAbort: d.abort, drivers.RecoveryMarkFixed: d.markFixed, drivers.RecoveryMarkBroken: d.markBroken,
		drivers.RecoveryRescue: d.rescue, drivers.RecoveryExitRescue: d.exitRescue, drivers.RecoveryTest: d.test,
	}[action]
	if do == nil {
		names := make([]string, len(drivers.Recoveries))
		for i, r := range drivers.Recoveries {
			names[i] = string(r)
		}
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "maas: unknown recovery action %q for node %s (want one of %s)",
			action, n.Name, strings.Join(names, ", "))
	}
	m, err := d.fetchMachine(ctx, n.MachineID)
	if err != nil {
		return drivers.Result{}, err
	}
	return do(ctx, n, m)
}

func (d *Driver) abort(ctx context.Context, n drivers.NodeRef, m *mMachine) (drivers.Result, error) {
	switch m.Status {
	case stDeploying, stDiskErasing:
		if err := d.checkOurs(ctx, m, n.Name); err != nil {
			return drivers.Result{}, err
		}
	case stCommissioning, stTesting:
		if err := d.notForeign(m, n.Name); err != nil {
			return drivers.Result{}, err
		}
	case stReleasing, stEnteringRescueMode, stExitingRescueMode:
		return drivers.Failed("cannot abort: %s; MAAS cannot abort that: wait for it to end (exit-rescue leaves rescue mode)", describe(m)), nil
	default:
		return drivers.Done("nothing running to abort: %s", describe(m)), nil
	}
	nm, err := d.machineOp(ctx, m.SystemID, "abort", url.Values{"comment": {"aborted by slipway " + d.instance + ": node " + n.Name}})
	if err != nil {
		return d.afterConflict(ctx, err, m, func(cur *mMachine) (drivers.Result, bool) {
			if cur.Status != m.Status { // it ended meanwhile
				return drivers.Done("nothing running to abort any more: %s", describe(cur)), true
			}
			return drivers.Result{}, false
		})
	}
	if nm.Status == m.Status { // MAAS stops the machine first, then changes its state
		return drivers.InProgress(pollAbort, "aborting: machine %s was %s; MAAS is stopping it", m.SystemID, m.StatusName), nil
	}
	return drivers.Done("abort: machine %s was %s, now %s", m.SystemID, m.StatusName, nm.StatusName), nil
}

func (d *Driver) markFixed(ctx context.Context, n drivers.NodeRef, m *mMachine) (drivers.Result, error) {
	switch m.Status {
	case stReady, stDeployed:
		return drivers.Done("not broken: %s", describe(m)), nil
	case stBroken:
	default:
		return drivers.Failed("cannot mark-fixed: %s; only a Broken machine can be marked fixed", describe(m)), nil
	}
	if err := d.notForeign(m, n.Name); err != nil {
		return drivers.Result{}, err
	}
	nm, err := d.machineOp(ctx, m.SystemID, "mark_fixed", url.Values{"comment": {"marked fixed by slipway " + d.instance + ": node " + n.Name}})
	if err != nil {
		return d.afterConflict(ctx, err, m, func(cur *mMachine) (drivers.Result, bool) {
			if cur.Status != stBroken {
				return drivers.Done("not broken any more: %s", describe(cur)), true
			}
			return drivers.Result{}, false
		})
	}
	return drivers.Done("mark-fixed: machine %s was Broken, now %s", m.SystemID, nm.StatusName), nil
}

func (d *Driver) markBroken(ctx context.Context, n drivers.NodeRef, m *mMachine) (drivers.Result, error) {
	if m.Status == stBroken {
		return drivers.Done("%s", describe(m)), nil
	}
	if m.Owner == nil || *m.Owner == "" {
		return drivers.Failed("cannot mark-broken: %s and has no owner; MAAS's API lets only a machine's owner mark it broken: "+
			"mark it broken in MAAS as an administrator (or deploy it first)", describe(m)), nil
	}
	if err := d.checkOurs(ctx, m, n.Name); err != nil {
		return drivers.Result{}, err
	}
	nm, err := d.machineOp(ctx, m.SystemID, "mark_broken", url.Values{"comment": {"marked broken by slipway " + d.instance + ": node " + n.Name}})
	if err != nil {
		return d.afterConflict(ctx, err, m, func(cur *mMachine) (drivers.Result, bool) {
			if cur.Status == stBroken {
				return drivers.Done("%s", describe(cur)), true
			}
			return drivers.Result{}, false
		})
	}
	note := ""
	switch m.Status {
	case stAllocated, stReserved, stDeploying, stDeployed, stFailedDeployment, stFailedReleasing, stFailedDiskErasing:
		note = " (MAAS released it on the way, without erasing)"
	}
	return drivers.Done("mark-broken: machine %s was %s, now %s%s", m.SystemID, m.StatusName, nm.StatusName, note), nil
}

func (d *Driver) rescue(ctx context.Context, n drivers.NodeRef, m *mMachine) (drivers.Result, error) {
	switch m.Status {
	case stRescueMode:
		return drivers.Done("%s", describe(m)), nil
	case stEnteringRescueMode:
		return drivers.InProgress(pollRescue, "%s", describe(m)), nil
	case stExitingRescueMode:
		return drivers.InProgress(pollRescue, "waiting for rescue mode to end before entering it again: %s", describe(m)), nil
	case stFailedEnteringRescueMode:
		retry, err := d.attemptBefore(ctx, m.SystemID, "Entering rescue mode", n.BudgetFrom)
		if err != nil {
			return drivers.Result{}, err
		}
		if !retry {
			return drivers.Failed("rescue: machine %s failed to enter rescue mode: %s; exit-rescue returns it to its earlier state, a retry tries again",
				m.SystemID, orText(statusMessage(m), m.StatusName)), nil
		}
	case stFailedExitingRescueMode:
		return drivers.Failed("cannot enter rescue mode: %s; MAAS allows it only after the machine left rescue mode: exit-rescue first", describe(m)), nil
	case stCommissioning, stDeploying, stReleasing, stDiskErasing, stTesting:
		return drivers.Failed("cannot enter rescue mode while an operation runs: %s; wait for it to end, or abort it", describe(m)), nil
	}
	if err := d.mayAct(ctx, m, n.Name); err != nil {
		return drivers.Result{}, err
	}
	nm, err := d.machineOp(ctx, m.SystemID, "rescue_mode", nil)
	if err != nil {
		return d.afterConflict(ctx, err, m, func(cur *mMachine) (drivers.Result, bool) {
			switch cur.Status {
			case stRescueMode:
				return drivers.Done("%s", describe(cur)), true
			case stEnteringRescueMode:
				return drivers.InProgress(pollRescue, "%s", describe(cur)), true
			}
			return drivers.Result{}, false
		})
	}
	return drivers.InProgress(pollRescue, "entering rescue mode: machine %s was %s, now %s", m.SystemID, m.StatusName, nm.StatusName), nil
}

func (d *Driver) exitRescue(ctx context.Context, n drivers.NodeRef, m *mMachine) (drivers.Result, error) {
	switch m.Status {
	case stEnteringRescueMode, stRescueMode, stFailedEnteringRescueMode:
	case stExitingRescueMode:
		return drivers.InProgress(pollRescue, "%s", describe(m)), nil
	case stFailedExitingRescueMode:
		retry, err := d.attemptBefore(ctx, m.SystemID, "Failed exiting rescue mode", n.BudgetFrom)
		if err != nil {
			return drivers.Result{}, err
		}
		if !retry {
			return drivers.Failed("exit-rescue: machine %s failed to exit rescue mode: %s; MAAS powers a machine that was Deployed on and one that was Ready or Broken off, "+
				"and waits for that: power it as it should be (or mark-broken), then retry", m.SystemID, orText(statusMessage(m), m.StatusName)), nil
		}
	case stDeployed:
		return drivers.Done("not in rescue mode: %s", describe(m)), nil
	default:
		return d.exitedRescue(ctx, n, m)
	}
	if err := d.notForeign(m, n.Name); err != nil {
		return drivers.Result{}, err
	}
	nm, err := d.machineOp(ctx, m.SystemID, "exit_rescue_mode", nil)
	if err != nil {
		return d.afterConflict(ctx, err, m, func(cur *mMachine) (drivers.Result, bool) {
			switch cur.Status {
			case stExitingRescueMode:
				return drivers.InProgress(pollRescue, "%s", describe(cur)), true
			case stRescueMode, stEnteringRescueMode, stFailedEnteringRescueMode, stFailedExitingRescueMode:
				return drivers.Result{}, false
			}
			return drivers.Done("not in rescue mode any more: %s", describe(cur)), true
		})
	}
	return drivers.InProgress(pollRescue, "exiting rescue mode: machine %s was %s, now %s", m.SystemID, m.StatusName, nm.StatusName), nil
}

// exitedRescue is exit-rescue's answer for a machine neither in rescue
// mode nor deployed: done when it exited rescue mode during this attempt
// (back where it was before, e.g. Ready), else failed: it was never in
// rescue mode, and Done would record it as deployed.
func (d *Driver) exitedRescue(ctx context.Context, n drivers.NodeRef, m *mMachine) (drivers.Result, error) {
	old, err := d.attemptBefore(ctx, m.SystemID, "Exited rescue mode", n.BudgetFrom)
	if err != nil {
		return drivers.Result{}, err
	}
	if !old {
		return drivers.Done("not in rescue mode any more: %s", describe(m)), nil
	}
	return drivers.Failed("exit-rescue: machine %s is %s, neither in rescue mode nor deployed: there is no deployed OS to return to (deploy the node instead)",
		m.SystemID, m.StatusName), nil
}

// testEnds are the events after a test run's "Testing" that start
// something else: the run no longer says how the machine is.
var testEnds = map[string]bool{
	"Commissioning": true, "Deploying": true, "Releasing": true, "Entering rescue mode": true,
	"Aborted testing": true, "Aborted commissioning": true, "Aborted deployment": true,
}

func (d *Driver) test(ctx context.Context, n drivers.NodeRef, m *mMachine) (drivers.Result, error) {
	if m.Status == stTesting {
		return drivers.InProgress(pollTest, "%s", describe(m)), nil
	}
	// The latest test run counts when it is the last thing that happened
	// to the machine and it started at or after BudgetFrom: its outcome
	// is the machine's state (Failed testing, or back where it was).
	evs, err := d.events(ctx, m.SystemID)
	if err != nil {
		return drivers.Result{}, err
	}
	floor := n.BudgetFrom.UTC().Truncate(time.Second)
	for _, e := range evs {
		if m.Status == stBroken {
			break // marked broken since (MAAS logs that below INFO): test again
		}
		if testEnds[e.Type] {
			break
		}
		if e.Type != "Testing" {
			continue
		}
		if t, ok := e.time(); !n.BudgetFrom.IsZero() && (!ok || t.Before(floor)) {
			break // a run from before this attempt's budget
		}
		if m.Status == stFailedTesting {
			return drivers.Failed("Failed testing: machine %s failed its hardware tests: %s (MAAS's test results of the machine name the failed tests)",
				m.SystemID, orText(d.failureReason(m, evs, "Failed testing"), "no reason given")), nil
		}
		return drivers.Done("hardware tests passed: %s", describe(m)), nil
	}
	switch m.Status {
	case stFailedCommissioning, stReady, stReserved, stAllocated, stFailedDeployment, stDeployed, stMissing, stRetired,
		stBroken, stRescueMode, stFailedReleasing, stFailedDiskErasing, stFailedEnteringRescueMode,
		stFailedExitingRescueMode, stFailedTesting:
	case stNew:
		return drivers.Failed("cannot test: %s; commission it first (MAAS tests only a commissioned machine)", describe(m)), nil
	default:
		return drivers.Failed("cannot test while an operation runs: %s; wait for it to end, or abort it", describe(m)), nil
	}
	if err := d.mayAct(ctx, m, n.Name); err != nil {
		return drivers.Result{}, err
	}
	nm, err := d.machineOp(ctx, m.SystemID, "test", nil)
	if err != nil {
		return drivers.Result{}, err
	}
	return drivers.InProgress(pollTest, "hardware tests of machine %s started (was %s); now %s", m.SystemID, m.StatusName, nm.StatusName), nil
}

// failureReason is why MAAS says the machine failed: its status message,
// else the description of the newest event of type typ.
func (d *Driver) failureReason(m *mMachine, evs []mEvent, typ string) string {
	if msg := statusMessage(m); msg != "" && !strings.EqualFold(msg, m.StatusName) {
		return msg
	}
	for _, e := range evs {
		if e.Type == typ && e.Description != "" {
			return e.Description
		}
	}
	return ""
}

// deletable are the states of an unowned machine the driver deletes:
// nothing runs on it and nobody holds it.
func deletable(st int) bool {
	switch st {
	case stNew, stReady, stFailedCommissioning, stBroken, stMissing, stRetired, stFailedTesting,
		stFailedReleasing, stFailedDiskErasing:
		return true
	}
	return false
}

// delete removes the machine from MAAS (DELETE machines/{id}/). MAAS
// deletes a machine in any state for an administrator, so the driver
// decides what is safe: a machine carrying this orchestrator's marker for
// this node, or one nobody owns, and in either case not while an
// operation runs on it or it is booted into rescue mode (it would stay
// powered on in an environment nobody manages). A machine owned by
// another agent or user is a Permanent error. A machine MAAS no longer
// has is Done.
func (d *Driver) delete(ctx context.Context, n drivers.NodeRef) (drivers.Result, error) {
	if n.MachineID == "" {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "maas: delete node %s: the node has no machine ID (nothing known to delete)", n.Name)
	}
	var m mMachine
	if err := d.c.call(ctx, http.MethodGet, "machines/"+url.PathEscape(n.MachineID)+"/", "", nil, &m); err != nil {
		if isNotFound(err) {
			return drivers.Done("machine %s is not in MAAS (already deleted)", n.MachineID), nil
		}
		return drivers.Result{}, err
	}
	owned := m.Owner != nil && *m.Owner != ""
	marked := m.OwnerData[OwnerDataNode] != "" || m.OwnerData[OwnerDataInstance] != ""
	switch {
	case marked || owned:
		if err := d.checkOurs(ctx, &m, n.Name); err != nil {
			return drivers.Result{}, err
		}
		switch m.Status {
		case stCommissioning, stDeploying, stReleasing, stDiskErasing, stTesting,
			stEnteringRescueMode, stRescueMode, stExitingRescueMode:
			return drivers.Failed("will not delete %s: an operation runs on it; abort it or wait for it to end (exit-rescue for rescue mode), then delete", describe(&m)), nil
		}
	case !deletable(m.Status):
		return drivers.Failed("will not delete %s: an operation runs on it; wait for it to end (or abort it), then delete", describe(&m)), nil
	}
	if err := d.c.call(ctx, http.MethodDelete, "machines/"+url.PathEscape(m.SystemID)+"/", "", nil, nil); err != nil {
		if isNotFound(err) {
			return drivers.Done("machine %s is not in MAAS (deleted meanwhile)", m.SystemID), nil
		}
		return drivers.Result{}, err
	}
	return drivers.Done("machine %s (%s, %s) deleted from MAAS", m.SystemID, m.Hostname, m.StatusName), nil
}

// notForeign refuses a machine whose ownership marker names another
// orchestrator instance, or another node of this one. It asks MAAS
// nothing: for the states where MAAS itself owns the machine for a while
// (testing, rescue mode), where the marker is all there is.
func (d *Driver) notForeign(m *mMachine, node string) error {
	inst, who := m.OwnerData[OwnerDataInstance], m.OwnerData[OwnerDataNode]
	switch {
	case inst != "" && inst != d.instance:
		return drivers.Errorf(drivers.Permanent, "maas: machine %s is marked for orchestrator instance %q (node %q), not %q; refusing to touch it", m.SystemID, inst, who, d.instance)
	case inst == d.instance && who != "" && who != node:
		return drivers.Errorf(drivers.Permanent, "maas: machine %s belongs to node %q of this site, not %q", m.SystemID, who, node)
	}
	return nil
}

// mayAct checks that the driver may start an operation on the machine:
// one held by an allocation (Allocated, Reserved, Deployed, Failed
// deployment, or a failed or Broken state that kept its owner) must be
// ours (checkOurs); one nobody holds must carry no other orchestrator's
// marker.
func (d *Driver) mayAct(ctx context.Context, m *mMachine, node string) error {
	switch m.Status {
	case stAllocated, stReserved, stDeployed, stFailedDeployment:
		return d.checkOurs(ctx, m, node)
	case stBroken, stFailedReleasing, stFailedDiskErasing:
		if m.Owner != nil && *m.Owner != "" {
			return d.checkOurs(ctx, m, node)
		}
	}
	return d.notForeign(m, node)
}

// afterConflict handles MAAS's 409 to an op: the machine moved on
// meanwhile, so it is read again and settle says what the new state
// means (ok false: the 409 stands, with the state named).
func (d *Driver) afterConflict(ctx context.Context, err error, was *mMachine, settle func(*mMachine) (drivers.Result, bool)) (drivers.Result, error) {
	if !isConflict(err) {
		return drivers.Result{}, err
	}
	cur, rerr := d.fetchMachine(ctx, was.SystemID)
	if rerr != nil {
		return drivers.Result{}, rerr
	}
	if r, ok := settle(cur); ok {
		return r, nil
	}
	return drivers.Failed("MAAS refused: %v; %s", err, describe(cur)), nil
}

// mEvent is one of MAAS's events of a machine (GET events/?op=query).
type mEvent struct {
	Type        string `json:"type"`
	Created     string `json:"created"`
	Description string `json:"description"`
}

// time is when MAAS created the event (UTC, to the second).
func (e mEvent) time() (time.Time, bool) {
	t, err := time.Parse(eventTime, e.Created)
	return t, err == nil
}

// events reads the machine's latest events, newest first.
func (d *Driver) events(ctx context.Context, id string) ([]mEvent, error) {
	var evs struct {
		Events []mEvent `json:"events"`
	}
	if err := d.c.call(ctx, http.MethodGet, "events/", "query", url.Values{"id": {id}, "limit": {"100"}}, &evs); err != nil {
		return nil, err
	}
	return evs.Events, nil
}

// attemptBefore reports whether the machine's newest event of type typ
// (the start or the failure of an attempt) is from before since: a
// failure the fresh budget does not count, so the action tries again. A
// zero since counts every failure (false); an attempt whose event is
// not found or has no readable time counts as old.
func (d *Driver) attemptBefore(ctx context.Context, id, typ string, since time.Time) (bool, error) {
	if since.IsZero() {
		return false, nil
	}
	evs, err := d.events(ctx, id)
	if err != nil {
		return false, err
	}
	for _, e := range evs {
		if e.Type == typ {
			t, ok := e.time()
			return !ok || t.Before(since.UTC().Truncate(time.Second)), nil
		}
	}
	return true, nil
}
