package orchestrator_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
)

// labMachine is a machine as the lab's MAAS answers it over its API (the
// lab's own state, read without the driver).
type labMachine struct {
	SystemID   string            `json:"system_id"`
	Hostname   string            `json:"hostname"`
	StatusName string            `json:"status_name"`
	PowerState string            `json:"power_state"`
	TagNames   []string          `json:"tag_names"`
	OwnerData  map[string]string `json:"owner_data"`
}

// labCall sends a signed request to the lab's MAAS, behind Slipway's back.
func labCall(t *testing.T, env *labrun.Env, method, path, op string, form url.Values, out any) {
	t.Helper()
	raw, err := env.MAASCall(t.Context(), method, path, op, form)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatal(err)
		}
	}
}

func labGet(t *testing.T, env *labrun.Env, id string) labMachine {
	t.Helper()
	var m labMachine
	labCall(t, env, "GET", "/machines/"+id+"/", "", nil, &m)
	return m
}

// reconcile runs a reconciliation and returns its open records by node/kind.
func reconcile(t *testing.T, e *orchestrator.Engine) (record.SweepReport, map[string]record.DriftRecord) {
	t.Helper()
	rep, err := e.Reconcile(t.Context(), "test")
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]record.DriftRecord{}
	for _, r := range rep.Records {
		k := r.Node + "/" + string(r.Kind)
		if _, dup := byKey[k]; dup {
			t.Fatalf("two records for %s", k)
		}
		byKey[k] = r
	}
	stored, err := e.Drift(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(byKey) {
		t.Fatalf("the run reports %d open drift records, the store holds %d: %+v", len(byKey), len(stored), stored)
	}
	return rep, byKey
}

func typedEvents(t *testing.T, e *orchestrator.Engine, node, typ string) []record.Event {
	t.Helper()
	evs, err := e.Events(t.Context(), 0, 0, "", node)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(evs, func(ev record.Event) bool { return ev.Type != typ })
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestReconcileDriftKinds: changes made in the lab's MAAS behind the
// engine's back (hostname, power, a tag, the ownership marker, the kernel
// parameter tag) are each one drift record, however many runs see them,
// with one detected event; each resolution puts the lab back (or accepts
// it), and a drift fixed in the lab is cleared with a resolved event.
func TestReconcileDriftKinds(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	deployAll(t, e)
	if _, open := reconcile(t, e); len(open) != 0 {
		t.Fatalf("drift after a clean deploy: %v", keys(open))
	}
	ids := machines(t, e)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range ids {
			if !yield(n) {
				return
			}
		}
	})
	if len(names) < 6 {
		t.Fatalf("the example deploys %d nodes, the test needs 6", len(names))
	}
	hostN, powerN, tagN, ownerN, kernelN, fixedN := names[0], names[1], names[2], names[3], names[4], names[5]
	labCall(t, env, "PUT", "/machines/"+ids[hostN]+"/", "", url.Values{"hostname": {"renamed-by-hand"}}, nil)
	labCall(t, env, "POST", "/machines/"+ids[powerN]+"/", "power_off", url.Values{}, nil)
	labCall(t, env, "POST", "/machines/"+ids[fixedN]+"/", "power_off", url.Values{}, nil)
	tag := d.Nodes[tagN].Spec.Tags[0]
	labCall(t, env, "POST", "/tags/"+tag+"/", "update_nodes", url.Values{"remove": {ids[tagN]}}, nil)
	labCall(t, env, "POST", "/machines/"+ids[ownerN]+"/", "set_owner_data", url.Values{"slipway_node": {""}}, nil)
	var ktag string
	for _, tn := range labGet(t, env, ids[kernelN]).TagNames {
		if strings.HasPrefix(tn, "slipway-kernel-") {
			ktag = tn
		}
	}
	if ktag == "" {
		t.Fatalf("%s has no kernel parameter tag in the lab", kernelN)
	}
	labCall(t, env, "POST", "/tags/"+ktag+"/", "update_nodes", url.Values{"remove": {ids[kernelN]}}, nil)

	want := []string{fixedN + "/power", hostN + "/hostname", kernelN + "/kernel-options", ownerN + "/owner", powerN + "/power", tagN + "/tags"}
	slices.Sort(want)
	_, first := reconcile(t, e)
	if got := keys(first); !slices.Equal(got, want) {
		t.Fatalf("drift %v, want %v", got, want)
	}
	if r := first[hostN+"/hostname"]; r.Expected != hostN || r.Observed != "renamed-by-hand" || r.MachineID != ids[hostN] {
		t.Errorf("hostname drift %+v", r)
	}
	if r := first[powerN+"/power"]; r.Expected != "on" || r.Observed != "off" || r.Policy != "report" {
		t.Errorf("power drift %+v", r)
	}
	if r := first[tagN+"/tags"]; !strings.Contains(r.Observed, "missing: "+tag) {
		t.Errorf("tags drift %+v, want %s missing", r, tag)
	}
	if r := first[kernelN+"/kernel-options"]; !strings.Contains(r.Expected, "console=ttyS1") || r.Observed != "(none)" {
		t.Errorf("kernel-options drift %+v", r)
	}
	time.Sleep(5 * time.Millisecond)
	rep, second := reconcile(t, e)
	if got := keys(second); !slices.Equal(got, want) {
		t.Fatalf("second run: drift %v, want %v", got, want)
	}
	if len(rep.Detected) != 0 {
		t.Errorf("the second run detected %v again", rep.Detected)
	}
	for k, r := range second {
		if !r.FirstSeen.Equal(first[k].FirstSeen) || !r.LastSeen.After(first[k].LastSeen) {
			t.Errorf("%s: first seen %s → %s, last seen %s → %s; want the first kept, the last moved", k, first[k].FirstSeen, r.FirstSeen, first[k].LastSeen, r.LastSeen)
		}
	}
	for _, n := range []string{hostN, powerN, tagN, ownerN, kernelN} {
		if evs := typedEvents(t, e, n, record.EventDriftDetected); len(evs) != 1 {
			t.Errorf("%s: %d %s events after two runs, want 1", n, len(evs), record.EventDriftDetected)
		}
	}
	if rec := nodeRecord(t, e, powerN); rec.Observed != "Deployed" {
		t.Errorf("%s observed %q, want Deployed", powerN, rec.Observed)
	}

	// Fixed in the lab: the next run clears it, with a resolved event.
	labCall(t, env, "POST", "/machines/"+ids[fixedN]+"/", "power_on", url.Values{}, nil)
	rep, _ = reconcile(t, e)
	if !slices.Contains(rep.Cleared, fixedN+"/power") {
		t.Errorf("cleared %v, want %s/power", rep.Cleared, fixedN)
	}
	if evs := typedEvents(t, e, fixedN, record.EventDriftResolved); len(evs) != 1 {
		t.Errorf("%s: %d resolved events, want 1", fixedN, len(evs))
	}

	// Resolutions: repair puts the design back in the lab.
	for _, c := range []struct {
		node string
		kind record.DriftKind
		ok   func(labMachine) bool
	}{
		{hostN, record.DriftHostname, func(m labMachine) bool { return m.Hostname == hostN }},
		{powerN, record.DriftPower, func(m labMachine) bool { return m.PowerState == "on" }},
		{ownerN, record.DriftOwner, func(m labMachine) bool { return m.OwnerData["slipway_node"] == ownerN }},
		{kernelN, record.DriftKernelOptions, func(m labMachine) bool { return slices.Contains(m.TagNames, ktag) }},
	} {
		res, err := e.ResolveDrift(t.Context(), c.node, c.kind, record.ResolveRepair, "test", "req-1")
		if err != nil {
			t.Fatalf("repair %s of %s: %v", c.kind, c.node, err)
		}
		if m := labGet(t, env, ids[c.node]); !c.ok(m) {
			t.Errorf("after repairing %s of %s (%s), the lab has %+v", c.kind, c.node, res.Message, m)
		}
		evs := typedEvents(t, e, c.node, record.EventDriftResolved)
		if len(evs) != 1 || evs[0].Correlation != "req-1" {
			t.Errorf("%s: resolved events %+v, want one with correlation req-1", c.node, evs)
		}
	}
	// Accept: the tag stays off, and is not reported again while it is.
	if _, err := e.ResolveDrift(t.Context(), tagN, record.DriftTags, record.ResolveAccept, "test", ""); err != nil {
		t.Fatal(err)
	}
	if m := labGet(t, env, ids[tagN]); slices.Contains(m.TagNames, tag) {
		t.Errorf("accept changed the lab: %s has %s again", tagN, tag)
	}
	if _, open := reconcile(t, e); len(open) != 0 {
		t.Errorf("drift after the resolutions: %v", keys(open))
	}
	if _, err := e.ResolveDrift(t.Context(), tagN, record.DriftTags, record.ResolveAccept, "test", ""); err == nil {
		t.Error("resolving a drift that is not open succeeded")
	}
}

// TestReconcileOrphanAndPolicy: a node removed from the design keeps its
// deployed machine: it is orphan drift (never repaired automatically),
// and destroy without a revision releases it. A Site policy of repair
// powers a machine switched off behind the engine's back on again.
func TestReconcileOrphanAndPolicy(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	d.Site.Spec.Reconciliation = design.Reconciliation{Policy: map[string]string{"power": "repair", "orphan": "repair"}}
	env, e := prepared(t, d, nil)
	deployAll(t, e)
	ids := machines(t, e)
	const gone, off = "r02-cmp01", "r01-cmp01"
	if ids[gone] == "" || ids[off] == "" {
		t.Fatalf("machines %v lack %s or %s", ids, gone, off)
	}

	labCall(t, env, "POST", "/machines/"+ids[off]+"/", "power_off", url.Values{}, nil)
	rep, open := reconcile(t, e)
	if !slices.Contains(rep.Repaired, off+"/power") || len(open) != 0 {
		t.Fatalf("repaired %v, open %v; want %s/power repaired", rep.Repaired, keys(open), off)
	}
	if m := labGet(t, env, ids[off]); m.PowerState != "on" {
		t.Errorf("after the policy's repair %s is %s in the lab", off, m.PowerState)
	}

	smaller := designtest.Example(t)
	smaller.Site.Spec.Reconciliation = d.Site.Spec.Reconciliation
	delete(smaller.Nodes, gone)
	raw, id, err := smaller.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.PutRevision(t.Context(), statestore.Revision{ID: id, Design: raw, Counts: smaller.Counts(), Roots: []string{"(test)"}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, open = reconcile(t, e); !slices.Equal(keys(open), []string{gone + "/orphan"}) {
			t.Fatalf("drift %v, want %s/orphan only", keys(open), gone)
		}
	}
	if m := labGet(t, env, ids[gone]); m.StatusName != "Deployed" {
		t.Fatalf("the orphan's machine is %s: orphans are never repaired automatically", m.StatusName)
	}
	if _, err := e.ResolveDrift(t.Context(), gone, record.DriftOrphan, record.ResolveRepair, "test", ""); err == nil {
		t.Error("repairing an orphan succeeded")
	}

	one := record.Filter{Sets: []design.NodeFilter{{Names: []string{gone}}}}
	task, _ := run(t, e, record.Request{Action: record.ActionDestroyNodes, Filter: one, Requester: "test"}, record.TaskSucceeded)
	if task.Revision != id || !slices.Equal(task.Nodes, []string{gone}) {
		t.Errorf("destroy task on revision %s (current %s) of %v", short(task.Revision), short(id), task.Nodes)
	}
	eventually(t, 30*time.Second, "the orphan's machine to be released in the lab", func() bool {
		return labGet(t, env, ids[gone]).StatusName == "Ready"
	})
	if _, open = reconcile(t, e); len(open) != 0 {
		t.Errorf("drift after the orphan's destroy: %v", keys(open))
	}
	if evs := typedEvents(t, e, gone, record.EventDriftResolved); len(evs) != 1 {
		t.Errorf("%d resolved events for the orphan, want 1", len(evs))
	}
	// A destroy naming a node that neither design nor record knows is refused.
	bad := record.Filter{Sets: []design.NodeFilter{{Names: []string{"no-such-node"}}}}
	if _, err := e.Submit(t.Context(), record.Request{Action: record.ActionDestroyNodes, Filter: bad}); err == nil {
		t.Error("destroy of an unknown node was accepted")
	}
}

func short(id string) string { return id[:min(12, len(id))] }

// TestReconcileLeakAndStatusResolutions: machines an engine owns and has
// no record of are leak drift, one record each; release frees the
// machine in the lab and the next run clears nothing left behind. A
// machine released behind the engine's back is status drift; accept
// adopts it (the record takes the machine's state).
func TestReconcileLeakAndStatusResolutions(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	two := record.Filter{Sets: []design.NodeFilter{{Names: []string{"r01-cmp01", "r02-cmp01"}}}}
	run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: two, Requester: "test"}, record.TaskSucceeded)
	ids := machines(t, e)

	// status: released in the lab, then accepted.
	const released = "r02-cmp01"
	labCall(t, env, "POST", "/machines/"+ids[released]+"/", "release", url.Values{}, nil)
	eventually(t, 30*time.Second, "the machine to be Ready", func() bool { return labGet(t, env, ids[released]).StatusName == "Ready" })
	if _, open := reconcile(t, e); !slices.Equal(keys(open), []string{released + "/status"}) {
		t.Fatalf("drift %v, want %s/status", keys(open), released)
	}
	res, err := e.ResolveDrift(t.Context(), released, record.DriftStatus, record.ResolveAccept, "test", "")
	if err != nil {
		t.Fatal(err)
	}
	if rec := nodeRecord(t, e, released); rec.Stage != record.StageReady || rec.Observed != "Ready" {
		t.Errorf("accepted (%s): the record is %s, observed %q; want ready, Ready", res.Message, rec.Stage, rec.Observed)
	}
	if _, open := reconcile(t, e); len(open) != 0 {
		t.Errorf("drift after accepting the release: %v", keys(open))
	}

	// leak: a second engine on an empty store owns r01-cmp01's machine
	// without a record of it.
	fresh := emptyStoreEngine(t, env, nil)
	for range 2 {
		if _, open := reconcile(t, fresh); !slices.Equal(keys(open), []string{"r01-cmp01/leak"}) {
			t.Fatalf("drift %v, want r01-cmp01/leak", keys(open))
		}
	}
	if evs := typedEvents(t, fresh, "r01-cmp01", record.EventDriftDetected); len(evs) != 1 ||
		!strings.Contains(evs[0].Message, "adopt NODE --machine "+ids["r01-cmp01"]) {
		t.Errorf("leak detected events %+v, want one naming adopt --machine %s", evs, ids["r01-cmp01"])
	}
	if _, err := fresh.ResolveDrift(t.Context(), "r01-cmp01", record.DriftLeak, record.ResolveRelease, "test", ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the leaked machine to be released in the lab", func() bool {
		return labGet(t, env, ids["r01-cmp01"]).StatusName == "Ready"
	})
	if _, open := reconcile(t, fresh); len(open) != 0 {
		t.Errorf("drift after releasing the leak: %v", keys(open))
	}
}

// TestReconcileAfterPowerAndVerify: a power_cycle and a verify_nodes task
// leave a deployed node at stages powered and verified; its machine is
// still watched as a deployed one: a hostname changed in the lab is
// drift, and a machine released behind the engine's back ends the
// deployment (status drift). Before, neither was seen: the sweep looked
// only at nodes whose last stage was deployed.
func TestReconcileAfterPowerAndVerify(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	deployAll(t, e)
	ids := machines(t, e)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range ids {
			if !yield(n) {
				return
			}
		}
	})
	cycled, verified := names[0], names[1]
	only := func(n string) record.Filter {
		return record.Filter{Sets: []design.NodeFilter{{Names: []string{n}}}}
	}
	run(t, e, record.Request{Action: record.ActionPowerCycle, Filter: only(cycled), Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionVerifyNodes, Filter: only(verified), Requester: "test"}, record.TaskSucceeded)
	if _, open := reconcile(t, e); len(open) != 0 {
		t.Fatalf("drift after power_cycle and verify: %v", keys(open))
	}
	labCall(t, env, "PUT", "/machines/"+ids[cycled]+"/", "", url.Values{"hostname": {"renamed-by-hand"}}, nil)
	labCall(t, env, "POST", "/machines/"+ids[verified]+"/", "release", url.Values{}, nil)
	_, open := reconcile(t, e)
	want := []string{cycled + "/hostname", verified + "/status"}
	slices.Sort(want)
	if got := keys(open); !slices.Equal(got, want) {
		t.Fatalf("drift %v, want %v", got, want)
	}
	if r := open[verified+"/status"]; r.Expected != "Deployed" {
		t.Errorf("status drift of a verified deployed node expects %q, want Deployed", r.Expected)
	}
	if rec := nodeRecord(t, e, verified); !rec.DeploymentEnded {
		t.Errorf("%s: the machine was released in the lab but the record's deployment goes on", verified)
	}
}
