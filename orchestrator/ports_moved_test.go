package orchestrator_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore"
)

// A node removed from the design whose cables moved to another node: the
// new design gives node b the ports node a was deployed on, and the
// orphan a is destroyed. Its quarantine (its last design's cabling) must
// not touch the ports the current design gives b: the switch keeps them
// as they were (read from the switch itself), the destroy says which
// ports it left and why, and b then deploys on them.
func TestOrphanQuarantineSparesAnotherNodesPorts(t *testing.T) {
	t.Parallel()
	env, e, sw, d, cabled := fabricEnv(t)
	a, b := cabled[0], cabled[1]
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(a)}, record.TaskSucceeded)

	moved := designtest.Example(t)
	designtest.Fabric(moved, "fake", nil)
	moved.Nodes[b].Spec.Cabling = maps.Clone(moved.Nodes[a].Spec.Cabling)
	delete(moved.Nodes, a)
	putDesign(t, env, moved)

	_, res := run(t, e, record.Request{Action: record.ActionDestroyNodes, Requester: "test", Filter: only(a)}, record.TaskSucceeded)
	checkPorts(t, sw, d, a, drivers.PhaseProduction) // left as they were
	plan, err := driverspec.Ports(moved, moved.Nodes[b], drivers.PhaseProduction)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := e.Events(t.Context(), 0, 0, "", a)
	if err != nil {
		t.Fatal(err)
	}
	var said string
	for _, ev := range evs {
		if strings.Contains(ev.Message, "switch ports (quarantine)") {
			said = ev.Message
		}
	}
	for _, want := range []string{plan[0].String(), "node " + b} {
		if !strings.Contains(said, want) {
			t.Errorf("the orphan's quarantine does not say it left %q: %q (%s %s)", want, said, res[0].Outcome, res[0].Reason)
		}
	}
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(b)}, record.TaskSucceeded)
	checkPorts(t, sw, moved, b, drivers.PhaseProduction)
}

func putDesign(t *testing.T, env *labrun.Env, d *design.Design) {
	t.Helper()
	raw, id, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.PutRevision(t.Context(), statestore.Revision{ID: id, Design: raw, Counts: d.Counts(), Roots: []string{"(test)"}}); err != nil {
		t.Fatal(err)
	}
}

// A deployed node that a task takes through oob-prepare again (deploy
// of a node already deployed, prepare_nodes) keeps its production
// ports: its machine is Deployed in the lab's MAAS and does not PXE-boot,
// so putting its ports on the provisioning VLAN only cut a running
// server off its networks. The switch sees no provisioning call after
// the first deploy, and the ports read back as production.
func TestDeployedNodeKeepsProductionPorts(t *testing.T) {
	t.Parallel()
	env, e, sw, d, cabled := fabricEnv(t)
	node := cabled[0]
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
	first := len(sw.phases(node))
	for _, a := range []record.Action{record.ActionDeployNodes, record.ActionPrepareNodes} {
		run(t, e, record.Request{Action: a, Requester: "test", Filter: only(node)}, record.TaskSucceeded)
		if got := sw.phases(node)[first:]; slices.Contains(got, drivers.PhaseProvisioning) {
			t.Errorf("%s of deployed node %s: the switch was told %v", a, node, got)
		}
		checkPorts(t, sw, d, node, drivers.PhaseProduction)
		states, _ := maasOf(env)
		if id := nodeRecord(t, e, node).MachineID; states[id] != maas.StatusName(maas.StatusDeployed) {
			t.Errorf("after %s: machine %s is %q in MAAS, want Deployed", a, id, states[id])
		}
	}
}

// A deploy cancelled after its production ports were set releases the
// machine (the task took it): a released node's ports belong in
// quarantine, as after destroy, so the cancel puts them there once the
// lab's MAAS has the machine back (Ready); the switch reads them back
// on the quarantine VLAN, and switchport drift finds nothing.
func TestCancelledDeployQuarantinesPorts(t *testing.T) {
	t.Parallel()
	env, e, sw, d, cabled := fabricEnv(t)
	node := cabled[0]
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	held, release := make(chan struct{}), make(chan struct{})
	sw.set(func(s *labSwitch) { s.holdIn, s.held, s.release = drivers.PhaseProduction, held, release })
	task, err := e.Submit(t.Context(), record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(node)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("the deploy never set the production ports")
	}
	if _, err := e.TaskVerb(t.Context(), task.ID, record.VerbCancel, "test"); err != nil {
		t.Fatal(err)
	}
	sw.set(func(s *labSwitch) { s.holdIn = "" })
	close(release)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := e.Wait(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	rec := nodeRecord(t, e, node)
	states, _ := maasOf(env)
	if rec.LifecycleState() != record.LifecycleCancelled || states[rec.MachineID] != maas.StatusName(maas.StatusReady) {
		t.Fatalf("after the cancel: %s lifecycle %s, machine %s %q in MAAS; want cancelled, Ready", node, rec.LifecycleState(), rec.MachineID, states[rec.MachineID])
	}
	checkPorts(t, sw, d, node, drivers.PhaseQuarantine)
	if got := sw.phases(node); got[len(got)-1] != drivers.PhaseQuarantine {
		t.Errorf("the switch was told %v, want quarantine last", got)
	}
	if _, open := reconcile(t, e); slices.Contains(keys(open), node+"/switchport") {
		t.Errorf("switchport drift after the cancel: %v", keys(open))
	}
	if v := fabricOf(t, e, d, node); len(v.Nodes) != 1 || v.Nodes[0].Phase != drivers.PhaseQuarantine {
		t.Errorf("the fabric view has %s in %+v, want the quarantine phase", node, v.Nodes)
	}
}

// A node removed from the design together with its rack's switch: the
// network driver, built from the current design, no longer knows that
// switch, so quarantining the orphan's ports there can only fail, and
// the destroy would stop at the release for good, whatever retry does.
// The destroy leaves those ports, saying which and why (set them by
// hand), and ends; the lab's MAAS has the machine released once.
func TestOrphanQuarantineOnASwitchNoLongerDesigned(t *testing.T) {
	t.Parallel()
	env, e, sw, d, cabled := fabricEnv(t)
	a := cabled[0]
	gone := ""
	for _, c := range d.Nodes[a].Spec.Cabling {
		gone = c.Switch
	}
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(a)}, record.TaskSucceeded)
	id := nodeRecord(t, e, a).MachineID

	smaller := designtest.Example(t)
	designtest.Fabric(smaller, "fake", nil)
	delete(smaller.Nodes, a)
	for _, n := range smaller.Nodes {
		for alias, c := range n.Spec.Cabling {
			if c.Switch == gone {
				delete(n.Spec.Cabling, alias)
			}
		}
	}
	site := smaller.SiteOf(d.Nodes[a])
	delete(site.Spec.Fabric.Switches, gone)
	if !site.HasFabric() {
		t.Fatalf("the example's Site has no switch besides %s: the test needs two", gone)
	}
	putDesign(t, env, smaller)
	sw.set(func(s *labSwitch) { s.gone = map[string]bool{gone: true} })

	_, res := run(t, e, record.Request{Action: record.ActionDestroyNodes, Requester: "test", Filter: only(a)}, record.TaskSucceeded)
	states, releases := maasOf(env)
	if states[id] != maas.StatusName(maas.StatusReady) || releases[id] != 1 {
		t.Errorf("machine %s: %q after %d releases, want Ready after 1 (%s)", id, states[id], releases[id], res[0].Reason)
	}
	evs, err := e.Events(t.Context(), 0, 0, "", a)
	if err != nil {
		t.Fatal(err)
	}
	said := ""
	for _, ev := range evs {
		if strings.Contains(ev.Message, "switch ports (quarantine)") {
			said = ev.Message
		}
	}
	if !strings.Contains(said, "switch "+gone+" is not in the current design") {
		t.Errorf("the destroy does not say it left the ports on %s: %q", gone, said)
	}
}

// A deployed node removed from the design, its cables moved to node b,
// and b deployed before the orphan is destroyed: the orphan's machine
// is still held and was deployed on those ports, so b's provisioning
// must not take them (a cable moved in the design before it moved in
// the rack cuts a running server off). b fails at oob-prepare before
// any switch call, naming the orphan and what to do; the switch keeps
// the orphan's production ports and MAAS never saw b's machine. Once
// the orphan is destroyed (its quarantine leaves the ports the design
// gives b), retry deploys b on them.
func TestProvisioningWaitsForTheOrphanOnItsPorts(t *testing.T) {
	t.Parallel()
	env, e, sw, d, cabled := fabricEnv(t)
	a, b := cabled[0], cabled[1]
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(a)}, record.TaskSucceeded)

	moved := designtest.Example(t)
	designtest.Fabric(moved, "fake", nil)
	moved.Nodes[b].Spec.Cabling = maps.Clone(moved.Nodes[a].Spec.Cabling)
	delete(moved.Nodes, a)
	putDesign(t, env, moved)
	task, res := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: only(b)}, record.TaskFailed)
	if got := sw.phases(b); len(got) != 0 {
		t.Errorf("the switch was told %v for %s", got, b)
	}
	checkPorts(t, sw, d, a, drivers.PhaseProduction)
	for _, want := range []string{"node " + b, "stage oob-prepare", "node " + a, "orchestrator destroy --node " + a, "orchestrator retry " + task.ID} {
		if !strings.Contains(res[0].Reason, want) {
			t.Errorf("reason lacks %q: %s", want, res[0].Reason)
		}
	}
	if states, _ := maasOf(env); len(states) != 1 {
		t.Errorf("MAAS has %d machines, want only %s's", len(states), a)
	}

	run(t, e, record.Request{Action: record.ActionDestroyNodes, Requester: "test", Filter: only(a)}, record.TaskSucceeded)
	applyVerb(t, e, task.ID, record.VerbRetry, record.TaskSucceeded)
	checkPorts(t, sw, moved, b, drivers.PhaseProduction)
}
