package labrun

import (
	"context"
	"maps"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
)

// Audit is what the lab itself says about a run, from its own state (the
// machines, their node agents and the simulated MAAS), never from the
// engine's task results or the driver under test. The engine's node
// records are read only to know which machine each node claims and which
// redeploys were requested.
type Audit struct {
	// Deployed: machines whose node agent reported every boot action as
	// a success (2xx) for the deployment the node record claims (the
	// system ID MAAS deployed the OS with), MAAS showing it Deployed.
	Deployed int
	// Failed: machines at rest otherwise (their agent failed or reported
	// a failure, or MAAS holds them Ready, New, Failed ...).
	Failed []string
	// Stuck: machines still on the way (MAAS in a transient state such
	// as Commissioning, Deploying, Allocated or Releasing, or an agent
	// booting or running).
	Stuck []string
	// Leaked: machines MAAS holds as someone's (Allocated, Deploying,
	// Deployed, Failed deployment) that no node record claims, read from
	// the simulator directly.
	Leaked []string
	// DuplicateAllocations is maas.DuplicateAllocations (the old, weaker
	// measure: a release excuses anything).
	DuplicateAllocations int
	// DuplicateDeploys is maas.DuplicateDeploys: deploy starts beyond the
	// first that neither followed a failed deployment nor were explicitly
	// requested (deployRequests: a deploy or redeploy task, or a verb on
	// one, beyond the first request).
	DuplicateDeploys   int
	MAASRequests       int
	MAASRequestsByKind map[string]int
	// Floor is the longest time any machine waited in its phases
	// (lab.Timeline.Floor): no engine could have finished sooner.
	Floor time.Duration
	// LastAgent is when the last node agent finished (zero when none
	// did): the lab's view of the last node's outcome.
	LastAgent time.Time
	// PhaseStarts are, per phase name (enlist, commission, deploy, boot
	// ...), when each machine's first such phase since the audit's since
	// began: how the machines were spread over the run.
	PhaseStarts map[string][]time.Time
}

// atRest are the MAAS states in which nothing happens to a machine by
// itself.
var atRest = map[string]bool{"": true, "New": true, "Ready": true, "Deployed": true, "Failed commissioning": true,
	"Failed deployment": true, "Failed disk erasing": true, "Failed releasing": true, "Broken": true}

// Audit counts the run's outcomes from the lab.
func (env *Env) Audit(ctx context.Context, e *orchestrator.Engine) (Audit, error) {
	recs, err := e.Nodes(ctx)
	if err != nil {
		return Audit{}, err
	}
	claims := map[string]string{}
	for _, r := range recs {
		if r.MachineID != "" {
			claims[r.Name] = r.MachineID
		}
	}
	requests, err := deployRequests(ctx, e, claims)
	if err != nil {
		return Audit{}, err
	}
	return AuditLab(ctx, env.Lab, claims, beyondFirst(requests), time.Time{}), nil
}

// AuditLab counts a run's outcomes from the lab's state alone, given
// which machine (system ID) each node's record claims and the deploy
// starts per system ID the engine's explicit requests excuse (nil: none,
// a single deploy task). Floor is over the phases that started at or
// after since (zero: all). The engine may run in another process: its
// node records are all this needs of it.
func AuditLab(ctx context.Context, lb *lab.Lab, claims map[string]string, excused map[string]int, since time.Time) Audit {
	var a Audit
	a.MAASRequests, a.MAASRequestsByKind = RequestCounts(lb)
	var states []maas.MachineState
	lc := map[string]maas.MachineLifecycle{}
	for _, r := range lb.Regions() { // every MAAS region of the lab: one per Site
		states = append(states, r.MAAS.Machines()...)
		maps.Copy(lc, r.MAAS.Lifecycle())
	}
	claimed := make(map[string]bool, len(claims))
	for _, id := range claims {
		claimed[id] = true
	}
	for _, ms := range states {
		if ms.Owned() && !claimed[ms.SystemID] {
			a.Leaked = append(a.Leaked, ms.SystemID)
		}
	}
	settleAgents(ctx, lb)
	byMAC := statesByMAC(states)
	for _, m := range lb.Machines() {
		a.count(m, stateOf(byMAC, m), claims[m.Name], since)
	}
	a.DuplicateAllocations, a.DuplicateDeploys = maas.DuplicateAllocations(lc), maas.DuplicateDeploys(lc, excused)
	return a
}

// count classifies one machine.
func (a *Audit) count(m *lab.Machine, ms maas.MachineState, claim string, since time.Time) {
	rec, tl := m.Bootstrap(), m.Timeline()
	a.Floor = max(a.Floor, tl.Since(since).Floor())
	seen := map[string]bool{}
	for _, p := range tl.Since(since).Phases {
		if !seen[p.Name] {
			seen[p.Name] = true
			if a.PhaseStarts == nil {
				a.PhaseStarts = map[string][]time.Time{}
			}
			a.PhaseStarts[p.Name] = append(a.PhaseStarts[p.Name], p.Start)
		}
	}
	if rec.Finished.After(a.LastAgent) {
		a.LastAgent = rec.Finished
	}
	switch {
	case rec.State == lab.BootstrapDone && allSucceeded(rec) && claim != "" && tl.SystemID == claim &&
		ms.SystemID == claim && ms.Status == "Deployed":
		a.Deployed++
	case rec.State == lab.BootstrapBooting || rec.State == lab.BootstrapRunning || !atRest[ms.Status]:
		a.Stuck = append(a.Stuck, m.Name)
	default:
		a.Failed = append(a.Failed, m.Name)
	}
}

// allSucceeded: every action of actions.txt was reported as a success
// and the introspection API took the report.
func allSucceeded(rec lab.BootstrapRecord) bool {
	ok := map[string]bool{}
	for _, r := range rec.Reports {
		ok[r.Action] = r.Status == "success" && r.Code >= 200 && r.Code < 300
	}
	for _, act := range rec.Actions {
		if !ok[act.Name] {
			return false
		}
	}
	return true
}

// statesByMAC indexes the simulator's machines by their MACs (lower
// case).
func statesByMAC(states []maas.MachineState) map[string]maas.MachineState {
	out := make(map[string]maas.MachineState, len(states)*2)
	for _, ms := range states {
		for _, mac := range ms.MACs {
			if _, ok := out[strings.ToLower(mac)]; !ok { // the first, as a scan would find
				out[strings.ToLower(mac)] = ms
			}
		}
	}
	return out
}

// stateOf finds the simulator's machine with one of m's MACs.
func stateOf(byMAC map[string]maas.MachineState, m *lab.Machine) maas.MachineState {
	for _, n := range m.Hardware.NICs {
		if ms, ok := byMAC[strings.ToLower(n.MAC)]; ok {
			return ms
		}
	}
	return maas.MachineState{}
}

// settleAgents gives node agents that are talking to the introspection
// API a moment to finish: the engine may have seen an agent's last report
// before the agent read the answer.
func settleAgents(ctx context.Context, lb *lab.Lab) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, m := range lb.Machines() {
		if m.Bootstrap().State == lab.BootstrapRunning {
			_, _ = m.WaitBootstrap(ctx)
		}
	}
}

// deployRequests counts, by the system ID each node's record claims,
// the explicit requests to deploy the node: every deploy_nodes or
// redeploy_nodes task that selected it, and every verb (retry, resume,
// rerun, restart-clean) applied to such a task that picked it. The first
// request explains the first deploy start; each further one may explain
// one more (maas.DuplicateDeploys takes the requests beyond the first).
func deployRequests(ctx context.Context, e *orchestrator.Engine, claims map[string]string) (map[string]int, error) {
	tasks, err := e.Tasks(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, t := range tasks {
		if t.Action != record.ActionDeployNodes && t.Action != record.ActionRedeployNodes {
			continue
		}
		picks, err := verbPicks(ctx, e, t)
		if err != nil {
			return nil, err
		}
		for _, n := range append(append([]string(nil), t.Nodes...), picks...) {
			if id := claims[n]; id != "" {
				out[id]++
			}
		}
	}
	return out, nil
}

// verbPicks lists the nodes the verbs applied to t picked, once per verb,
// from the engine's "verb" events ("rerun by X: 3 node(s): a, b, c"); a
// list cut short ("… 5 more") counts as all of t's nodes.
func verbPicks(ctx context.Context, e *orchestrator.Engine, t record.Task) ([]string, error) {
	evs, err := e.Events(ctx, 0, 0, t.ID, "")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ev := range evs {
		if ev.Kind != "verb" || strings.HasPrefix(ev.Message, string(record.VerbCancel)+" ") {
			continue
		}
		_, list, ok := strings.Cut(ev.Message, " node(s): ")
		names := strings.Split(list, ", ")
		if !ok || strings.HasPrefix(names[len(names)-1], "…") {
			names = t.Nodes
		}
		out = append(out, names...)
	}
	return out, nil
}

// beyondFirst is the requests beyond each machine's first.
func beyondFirst(requests map[string]int) map[string]int {
	out := make(map[string]int, len(requests))
	for id, n := range requests {
		out[id] = max(0, n-1)
	}
	return out
}

// RequestCounts are the requests every MAAS region of the lab answered,
// in all and by kind.
func RequestCounts(lb *lab.Lab) (int, map[string]int) {
	total, byKind := 0, map[string]int{}
	for _, r := range lb.Regions() {
		total += r.MAAS.Stats().Snapshot().Total
		for k, n := range r.MAAS.Stats().ByKind() {
			byKind[k] += n
		}
	}
	return total, byKind
}
