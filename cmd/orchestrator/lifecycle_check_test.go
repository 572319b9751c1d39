package main

// The randomized lifecycle runs' invariants, checked after every step
// once nothing runs, from the lab's own state: its MAAS machines and
// events (the transitions each machine went through) and its BMCs' power
// states. The engine's node records (through the API) are read only for
// which machine each node claims and the lifecycle each node shows.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// claims are the nodes the API shows, by name.
func (r *lrRun) claims() map[string]apitypes.NodeSummary {
	page, err := r.cl.Nodes(r.t.Context(), client.NodeQuery{Limit: 1000})
	if err != nil {
		r.t.Fatalf("seed %d: list nodes: %v", r.seed, err)
	}
	out := map[string]apitypes.NodeSummary{}
	for _, n := range page.Items {
		out[n.Name] = n
	}
	return out
}

// lrView is the lab and the nodes at the end of a step.
type lrView struct {
	nodes  map[string]apitypes.NodeSummary
	byID   map[string]simMachine
	events []simEvent
}

// check runs the invariants after op's step (before: the nodes before).
func (r *lrRun) check(op lrOp, before map[string]apitypes.NodeSummary) []string {
	evs, err := r.lv.eventsAfter(r.lastEvent)
	if err != nil {
		r.t.Fatalf("seed %d: %v", r.seed, err)
	}
	if len(evs) > 0 {
		r.lastEvent = evs[len(evs)-1].ID
	}
	r.countEvents(evs)
	v := lrView{nodes: r.claims(), byID: map[string]simMachine{}, events: evs}
	for _, m := range r.lv.machines(r.t) {
		v.byID[m.SystemID] = m
	}
	var out []string
	out = append(out, r.checkReleases(op, before, v)...)
	out = append(out, r.checkErase(op, before, v)...)
	out = append(out, r.checkDeploys(v)...)
	out = append(out, r.checkClaims(v)...)
	out = append(out, r.checkLifecycles(v)...)
	out = append(out, r.checkPower(v)...)
	out = append(out, r.checkCancelled(op, v)...)
	r.counts.checks += 8
	return out
}

func (r *lrRun) countEvents(evs []simEvent) {
	r.counts.events += len(evs)
	for _, e := range evs {
		switch e.Type {
		case "Releasing":
			r.counts.releases++
		case "Deploying":
			r.counts.deploys++
		}
	}
}

// targets are the nodes op acts on (a verb: the nodes of its task).
func (r *lrRun) targets(op lrOp) []string {
	switch op.Kind {
	case lrRetry, lrResume, lrRerun, lrRestartClean:
		return r.taskNodes[r.lastTask]
	}
	return op.Nodes
}

// touched are the machines of the nodes, as their records claim them
// before and after the step and as the lab names them.
func touched(nodes []string, before map[string]apitypes.NodeSummary, v lrView) map[string]bool {
	out := map[string]bool{}
	for _, n := range nodes {
		out[before[n].MachineID], out[v.nodes[n].MachineID] = true, true
	}
	for id, m := range v.byID {
		if slices.Contains(nodes, m.Hostname) {
			out[id] = true
		}
	}
	delete(out, "")
	return out
}

// checkReleases: a machine is released or erased only when a verb asked
// for it or a deploy's recovery plan did (op.releasing, on its nodes);
// an invalid op leaves its nodes' machines without a transition at all.
func (r *lrRun) checkReleases(op lrOp, before map[string]apitypes.NodeSummary, v lrView) []string {
	mine := touched(r.targets(op), before, v)
	var out []string
	for _, e := range v.events {
		switch {
		case op.Invalid && mine[e.Node]:
			out = append(out, fmt.Sprintf("%s: machine %s (%s) went through %q (%s), the op should have had no effect", op, e.Node, e.Hostname, e.Type, e.Description))
		case releaseEvent(e.Type) && !(op.releasing() && mine[e.Node]):
			out = append(out, fmt.Sprintf("%s: machine %s (%s) %q (%s) though no verb asked for it", op, e.Node, e.Hostname, e.Type, e.Description))
		}
	}
	return out
}

// checkErase: a destroy or decommission erases its nodes' disks as it
// asked: none never erases; quick or secure erases, in that mode, every
// machine it releases, before the release.
func (r *lrRun) checkErase(op lrOp, before map[string]apitypes.NodeSummary, v lrView) []string {
	if op.Invalid || op.Erase == "" || (op.Kind != lrDestroy && op.Kind != lrDecommission) {
		return nil
	}
	mine := touched(op.Nodes, before, v)
	erased := map[string]bool{}
	var out []string
	for _, e := range v.events {
		switch {
		case !mine[e.Node]:
		case e.Type == "Erasing disks" && (op.Erase == "none" || !strings.Contains(e.Description, "("+op.Erase+")")):
			out = append(out, fmt.Sprintf("%s: machine %s (%s): %s", op, e.Node, e.Hostname, e.Description))
		case e.Type == "Erasing disks":
			erased[e.Node] = true
		case e.Type == "Releasing" && op.Erase != "none" && !erased[e.Node]:
			out = append(out, fmt.Sprintf("%s: machine %s (%s) released without its disks erased", op, e.Node, e.Hostname))
		}
	}
	return out
}

func releaseEvent(typ string) bool {
	return typ == "Releasing" || typ == "Released" || typ == "Erasing disks" || typ == "Disks erased"
}

// checkDeploys: no machine starts deploying again unless its previous
// deployment failed, was aborted or the machine was released between,
// or its hardware tests failed (Failed testing: MAAS took the deployed
// machine out of service, its node reads failed and deploys again).
func (r *lrRun) checkDeploys(v lrView) []string {
	var out []string
	for _, e := range v.events {
		switch {
		case e.Type == "Deploying" && r.deployed[e.Node]:
			out = append(out, fmt.Sprintf("duplicate deploy: machine %s (%s) started deploying again (event %d) with its previous deployment neither failed nor released", e.Node, e.Hostname, e.ID))
		case e.Type == "Deploying":
			r.deployed[e.Node] = true
		case e.Type == "Failed deployment" || e.Type == "Failed testing" || releaseEvent(e.Type) || strings.HasPrefix(e.Type, "Aborted"):
			delete(r.deployed, e.Node)
		}
	}
	return out
}

// checkClaims: no machine claimed by two nodes; no machine the lab holds
// as someone's (allocated, deploying, deployed) that no node claims.
func (r *lrRun) checkClaims(v lrView) []string {
	var out []string
	by := map[string]string{}
	recs := map[string]record.NodeRecord{}
	for _, n := range v.nodes {
		recs[n.Name] = record.NodeRecord{Name: n.Name, MachineID: n.MachineID}
		if n.MachineID == "" {
			continue
		}
		if o, ok := by[n.MachineID]; ok {
			out = append(out, fmt.Sprintf("machine %s claimed by %s and %s", n.MachineID, o, n.Name))
		}
		by[n.MachineID] = n.Name
	}
	if k := leaked(r.t, v.byID, recs); k > 0 {
		out = append(out, fmt.Sprintf("%d leaked machines (listed above)", k))
	}
	return out
}

// checkLifecycles: once tasks ended each node's lifecycle agrees with
// its machine's status in the lab.
func (r *lrRun) checkLifecycles(v lrView) []string {
	var out []string
	for _, name := range r.names {
		n := v.nodes[name]
		m, has := v.byID[n.MachineID]
		if !lifecycleAgrees(n.Lifecycle, m, has) {
			out = append(out, fmt.Sprintf("%s: lifecycle %q (stage %s, outcome %s, task %s) but its machine %q is %q in the lab",
				name, n.Lifecycle, n.Stage, n.Outcome, n.Task, n.MachineID, m.StatusName))
		}
	}
	return out
}

// rescueOrDeployed are the lab's states of a deployed node's machine:
// rescue mode and a failed rescue entry or exit keep the deployment
// (docs/operations.md, "Rescue mode"; the node's task fails saying so).
var rescueOrDeployed = map[string]bool{"Deployed": true, "Rescue mode": true,
	"Failed to enter rescue mode": true, "Failed to exit rescue mode": true}

// lifecycleAgrees maps a lifecycle state to the lab's machine states it
// allows at rest.
func lifecycleAgrees(lc record.Lifecycle, m simMachine, has bool) bool {
	owned := has && (m.Owner != "" || maas.MachineState{Status: m.StatusName}.Owned())
	switch lc {
	case record.LifecycleDeployed:
		return has && rescueOrDeployed[m.StatusName]
	case record.LifecycleReady, record.LifecycleReleased, record.LifecycleCancelled, record.LifecycleNew, "":
		// A failed hardware test leaves the machine Failed testing, its
		// tester its owner (test_nodes does not own the lifecycle).
		return (!owned || m.StatusName == "Failed testing") && m.StatusName != "Failed disk erasing"
	case record.LifecycleFailed:
		return true // at rest (quiet), whatever the failure left
	}
	return false // deploying, releasing, preparing once every task ended
}

// checkCancelled: after a cancel that stopped its task, each of the
// task's nodes is deployed (it got there first), failed, or cancelled,
// its machine not held (lifecycleAgrees): never merely "released".
func (r *lrRun) checkCancelled(op lrOp, v lrView) []string {
	if op.Kind != lrCancel || r.lastTask == "" {
		return nil
	}
	tk, err := r.cl.Task(r.t.Context(), r.lastTask)
	if err != nil || tk.Status != record.TaskCancelled {
		return nil
	}
	var out []string
	for _, n := range op.Nodes {
		switch lc := v.nodes[n].Lifecycle; lc {
		case record.LifecycleDeployed, record.LifecycleFailed, record.LifecycleCancelled:
		default:
			out = append(out, fmt.Sprintf("%s: lifecycle %q after its deploy task %s was cancelled (want cancelled, or deployed/failed if it got there first)", n, lc, r.lastTask))
		}
	}
	return out
}

// checkPower: a machine the lab shows Deployed is powered on, as its BMC
// says (nodes whose BMC never answers aside).
func (r *lrRun) checkPower(v lrView) []string {
	var out []string
	for id, m := range v.byID {
		if m.StatusName != "Deployed" || r.noPower[m.Hostname] {
			continue
		}
		st, err := r.lv.powerState(id)
		if err != nil || st != "on" {
			out = append(out, fmt.Sprintf("machine %s (%s) is Deployed but its BMC says power %q (%v)", id, m.Hostname, st, err))
		}
	}
	return out
}

// checkAudit: serve's audit log holds exactly one record for each
// mutating call the run made (counted by the calls' X-Request-Ids) and
// none the run did not make.
func (r *lrRun) checkAudit() []string {
	seen := map[string]int{}
	var since uint64
	for range 1000 {
		page, err := r.cl.Audit(r.t.Context(), since, 500)
		if err != nil {
			r.t.Fatalf("seed %d: audit: %v", r.seed, err)
		}
		for _, a := range page.Items {
			if strings.HasPrefix(a.ClientRequestID, fmt.Sprintf("lr-%d-", r.seed)) {
				seen[a.ClientRequestID]++
			}
		}
		if !page.More || page.Next == since {
			break
		}
		since = page.Next
	}
	var out []string
	for _, id := range r.calls {
		if seen[id] != 1 {
			out = append(out, fmt.Sprintf("audit: %d records of call %s (want 1)", seen[id], id))
		}
		delete(seen, id)
	}
	for id, k := range seen {
		out = append(out, fmt.Sprintf("audit: %d records of %s, a call the run did not make", k, id))
	}
	r.counts.checks++
	r.counts.calls += len(r.calls)
	return out
}
