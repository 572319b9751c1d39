package api

import (
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// The conversions at the API's edge between the engine's records
// (orchestrator/record, what the store keeps) and the API's wire types
// (api/apitypes). A flat struct converts with a Go conversion, which
// compiles only while the two have the same fields in the same order: a
// field added to a record fails the build here until the wire type (and
// so the API contract) is decided. The round-trip test
// (fromrecord_test.go) holds that each conversion writes the JSON the
// record wrote.

func wireTask(t record.Task) apitypes.Task {
	return apitypes.Task{ID: t.ID, Action: t.Action, Filter: wireFilter(t.Filter), Revision: t.Revision,
		Requester: t.Requester, Status: t.Status, Nodes: t.Nodes, Message: t.Message, Created: t.Created,
		Started: t.Started, Finished: t.Finished, Cancel: t.Cancel, Correlation: t.Correlation,
		Options: (*apitypes.TaskOptions)(t.Options)}
}

func wireTasks(ts []record.Task) []apitypes.Task { return mapSlice(ts, wireTask) }

func wireResult(r record.NodeResult) apitypes.NodeResult { return apitypes.NodeResult(r) }

func wireResults(rs []record.NodeResult) []apitypes.NodeResult { return mapSlice(rs, wireResult) }

func wireFilter(f record.Filter) apitypes.Filter {
	return apitypes.Filter{Type: f.Type, Sets: mapSlice(f.Sets, func(s design.NodeFilter) apitypes.NodeFilter {
		return apitypes.NodeFilter{Names: s.Names, Labels: s.Labels, Tags: s.Tags, Racks: s.Racks, Sites: s.Sites}
	})}
}

// recordFilter is a request's filter as the engine takes it.
func recordFilter(f apitypes.Filter) record.Filter {
	return record.Filter{Type: f.Type, Sets: mapSlice(f.Sets, func(s apitypes.NodeFilter) design.NodeFilter {
		return design.NodeFilter{Names: s.Names, Labels: s.Labels, Tags: s.Tags, Racks: s.Racks, Sites: s.Sites}
	})}
}

// recordOptions is a request's task options as the engine takes them.
func recordOptions(o *apitypes.TaskOptions) *record.TaskOptions { return (*record.TaskOptions)(o) }

func wireNodeRecord(r record.NodeRecord) apitypes.NodeRecord {
	return apitypes.NodeRecord{Name: r.Name, MachineID: r.MachineID, Observed: r.Observed, ObservedPower: r.ObservedPower,
		Lifecycle: r.Lifecycle, Task: r.Task, LastTask: r.LastTask, Action: r.Action, Stage: r.Stage, Step: r.Step,
		Outcome: r.Outcome, Attempts: r.Attempts, Total: r.Total, Rounds: r.Rounds, Deployment: r.Deployment,
		DeploymentEnded: r.DeploymentEnded, Intent: (*apitypes.Intent)(r.Intent), AllocatedBy: r.AllocatedBy,
		Class: r.Class, Reason: r.Reason, PXEBeforePower: r.PXEBeforePower, Frozen: r.Frozen, FrozenWhy: r.FrozenWhy,
		StageStart: r.StageStart, BudgetFrom: r.BudgetFrom, Recovery: (*apitypes.Recovery)(r.Recovery),
		Baseline: wireBaseline(r.Baseline), NextAt: r.NextAt, Updated: r.Updated,
		History: mapSlice(r.History, func(t record.Transition) apitypes.Transition { return apitypes.Transition(t) })}
}

func wireBaseline(b *record.Baseline) *apitypes.Baseline {
	if b == nil {
		return nil
	}
	return &apitypes.Baseline{Task: b.Task, Planned: b.Planned, Reboot: b.Reboot, DryRun: b.DryRun, BIOS: b.BIOS, Staged: b.Staged,
		ResetAt: b.ResetAt, ResetDone: b.ResetDone, Verified: b.Verified,
		Plan:    mapSlice(b.Plan, func(c record.BaselineChange) apitypes.BaselineChange { return apitypes.BaselineChange(c) }),
		Updates: mapSlice(b.Updates, func(u record.FirmwareUpdate) apitypes.FirmwareUpdate { return apitypes.FirmwareUpdate(u) }),
		Volumes: mapSlice(b.Volumes, func(v record.VolumeBuild) apitypes.VolumeBuild { return apitypes.VolumeBuild(v) })}
}

func wireRebootstrapped(r record.Rebootstrapped) apitypes.Rebootstrapped {
	return apitypes.Rebootstrapped{Node: wireNodeRecord(r.Node), Task: r.Task, Env: r.Env, UserData: r.UserData}
}

func wireAsBuilt(r record.AsBuiltRecord) apitypes.AsBuiltRecord {
	return apitypes.AsBuiltRecord{Node: r.Node, MachineID: r.MachineID, Inventory: r.Inventory, Checked: r.Checked,
		Mismatches: r.Mismatches, Accepted: (*apitypes.HardwareAcceptance)(r.Accepted)}
}

func wireEvent(e record.Event) apitypes.Event { return apitypes.Event(e) }

func wireEvents(es []record.Event) []apitypes.Event { return mapSlice(es, wireEvent) }

func wireDrift(d record.DriftRecord) apitypes.DriftRecord { return apitypes.DriftRecord(d) }

func wireReconcileStatus(s record.ReconcileStatus) apitypes.ReconcileStatus {
	return apitypes.ReconcileStatus{LastRun: (*apitypes.ReconcileRun)(s.LastRun), NextRun: s.NextRun, Interval: s.Interval,
		Running: s.Running, Open: s.Open, Counts: s.Counts}
}

func wireDriftResolved(r record.DriftResolved) apitypes.DriftResolved {
	return apitypes.DriftResolved{Drift: wireDrift(r.Drift), Resolution: r.Resolution, Message: r.Message, Task: r.Task}
}

func wireSweep(r record.SweepReport) apitypes.SweepReport {
	return apitypes.SweepReport{Time: r.Time, Trigger: r.Trigger, Owned: r.Owned, Examined: r.Examined,
		Leaks:   mapSlice(r.Leaks, func(m drivers.Machine) apitypes.Machine { return apitypes.Machine(m) }),
		Drift:   mapSlice(r.Drift, func(d record.Drift) apitypes.Drift { return apitypes.Drift(d) }),
		Records: mapSlice(r.Records, wireDrift), Detected: r.Detected, Cleared: r.Cleared, Repaired: r.Repaired,
		Released: r.Released}
}

// wirePlan is a plan on the wire; omitted counts the nodes a stored plan
// left out.
func wirePlan(p record.Plan, omitted int) apitypes.Plan {
	var counts map[string]int
	if p.Counts != nil {
		counts = make(map[string]int, len(p.Counts))
		for a, n := range p.Counts {
			counts[string(a)] = n
		}
	}
	return apitypes.Plan{From: p.From, To: p.To, Approve: planApproval(p), Created: p.Created, Observed: p.Observed, Notes: p.Notes,
		Destructive: p.Destructive, Counts: counts, Nodes: mapSlice(p.Nodes, wireNodePlan),
		Sites: mapSlice(p.Sites, func(s record.SitePlan) apitypes.SitePlan {
			return apitypes.SitePlan{Site: s.Site, Changes: wireChanges(s.Changes), Records: s.Records}
		}), Changed: p.Changed(), NodesOmitted: omitted}
}

func wireNodePlan(n record.NodePlan) apitypes.NodePlan {
	return apitypes.NodePlan{Node: n.Node, Site: n.Site, Action: string(n.Action), Machine: n.Machine, State: n.State,
		Reasons: n.Reasons, Changes: wireChanges(n.Changes), Erase: n.Erase}
}

func wireChanges(cs []drivers.PlannedChange) []apitypes.PlannedChange {
	return mapSlice(cs, func(c drivers.PlannedChange) apitypes.PlannedChange { return apitypes.PlannedChange(c) })
}

// mapSlice converts each element; nil stays nil (encoding/json writes
// null for it, as it did for the record).
func mapSlice[S, W any](in []S, f func(S) W) []W {
	if in == nil {
		return nil
	}
	out := make([]W, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
