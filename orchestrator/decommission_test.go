package orchestrator_test

import (
	"fmt"
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
	"github.com/slipway-dev/slipway/sim/maas"
)

// dcLabWatch reads the statuses the lab's machines passed through since
// it began from the lab's MAAS event log, where every
// status change is a "Node changed status" event (as MAAS logs it):
// what MAAS itself recorded, not what the engine says, and not a
// sampling that a short phase can slip through.
type dcLabWatch struct {
	t     *testing.T
	env   *labrun.Env
	after int // the newest event when it began
}

type dcLabEvent struct {
	ID          int    `json:"id"`
	Type        string `json:"type"`
	Description string `json:"description"`
}

// dcWatchLab begins a watch at the lab's newest event.
func dcWatchLab(t *testing.T, env *labrun.Env) *dcLabWatch {
	t.Helper()
	var evs struct{ Events []dcLabEvent }
	labCall(t, env, "GET", "/events/", "query&limit=1&level=DEBUG", nil, &evs)
	w := &dcLabWatch{t: t, env: env}
	if len(evs.Events) > 0 {
		w.after = evs.Events[0].ID
	}
	return w
}

// statuses returns the statuses a machine went through since the watch
// began, the one it had then first; its current one alone when it did
// not move.
func (w *dcLabWatch) statuses(host string) []string {
	w.t.Helper()
	var evs struct{ Events []dcLabEvent }
	labCall(w.t, w.env, "GET", "/events/", fmt.Sprintf("query&level=DEBUG&limit=1000&after=%d&hostname=%s", w.after, url.QueryEscape(host)), nil, &evs)
	slices.SortFunc(evs.Events, func(a, b dcLabEvent) int { return a.ID - b.ID })
	var out []string
	for _, ev := range evs.Events {
		if ev.Type != "Node changed status" {
			continue
		}
		rest, ok := strings.CutPrefix(ev.Description, "From '")
		from, to, ok2 := strings.Cut(rest, "' to '")
		to, _, ok3 := strings.Cut(to, "'")
		if !ok || !ok2 || !ok3 {
			w.t.Fatalf("%s: a status change described %q", host, ev.Description)
		}
		if len(out) == 0 {
			out = append(out, from)
		}
		out = append(out, to)
	}
	if len(out) == 0 {
		if m, ok := dcMachine(w.env, host); ok {
			out = append(out, m.Status)
		}
	}
	return out
}

// dcMachine is the lab's machine of a hostname; ok is false when the
// lab has none (deleted).
func dcMachine(env *labrun.Env, host string) (maas.MachineState, bool) {
	for _, m := range env.Lab.MAAS.Machines() {
		if m.Hostname == host {
			return m, true
		}
	}
	return maas.MachineState{}, false
}

// dcCheckEraseModes checks, in the lab's MAAS event log, how each
// machine's disks were erased ("" for not at all): the lab records the
// release's quick_erase and secure_erase parameters there as MAAS
// chose from them.
func dcCheckEraseModes(t *testing.T, env *labrun.Env, want map[string]string) {
	t.Helper()
	for host, mode := range want {
		var evs struct {
			Events []struct {
				Type        string `json:"type"`
				Description string `json:"description"`
			} `json:"events"`
		}
		labCall(t, env, "GET", "/events/", "query&limit=100&hostname="+url.QueryEscape(host), nil, &evs)
		got := ""
		for _, ev := range evs.Events {
			if ev.Type == "Erasing disks" {
				_, m, _ := strings.Cut(ev.Description, "(")
				got = strings.TrimSuffix(m, ")")
				break // newest first
			}
		}
		if got != mode {
			t.Errorf("%s: the lab erased its disks %q, want %q", host, got, mode)
		}
	}
}

func dcNodes(ns ...string) record.Filter {
	return record.Filter{Sets: []design.NodeFilter{{Names: ns}}}
}

// dcTypedEvents returns the typed events of a task by node.
func dcTypedEvents(t *testing.T, e *orchestrator.Engine, task string) map[string][]record.Event {
	t.Helper()
	evs, err := e.Events(t.Context(), 0, 0, task, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]record.Event{}
	for _, ev := range evs {
		if ev.Type != "" {
			out[ev.Node] = append(out[ev.Node], ev)
		}
	}
	return out
}

func dcTypes(evs []record.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return out
}

// TestDecommissionEraseModes: decommission without delete (the
// storage-only cleanup) releases each machine with its node's erase
// policy, the Site's unless a profile or node says otherwise: the lab
// shows Disk erasing then Ready for quick and secure, Ready without
// erasing for none. The machines stay in the lab; the records end at
// released (stage and lifecycle) with the machine kept, and each node's decommission is
// announced by typed events carrying the request's correlation ID.
func TestDecommissionEraseModes(t *testing.T) {
	t.Parallel()
	quick, secure, none := "r01-cmp01", "r01-cmp02", "r01-cmp03"
	d := designtest.Example(t)
	d.Site.Spec.Lifecycle.Erase = design.EraseQuick
	d.Nodes[secure].Spec.Erase = design.EraseSecure
	d.Nodes[none].Spec.Erase = design.EraseNone
	env, e := prepared(t, d, nil)
	sel := dcNodes(quick, secure, none)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: sel, Requester: "test"}, record.TaskSucceeded)
	ids := machines(t, e)
	for _, n := range []string{quick, secure, none} { // the power MAAS reports, as the lab holds it
		if m, _ := dcMachine(env, n); nodeRecord(t, e, n).ObservedPower != m.Power || m.Power != "on" {
			t.Errorf("%s deployed: the record's power %q, the lab's %q", n, nodeRecord(t, e, n).ObservedPower, m.Power)
		}
	}
	w := dcWatchLab(t, env)

	task, res := run(t, e, record.Request{Action: record.ActionDecommissionNodes, Filter: sel, Requester: "test",
		Correlation: "req-decommission-1"}, record.TaskSucceeded)
	for _, r := range res {
		if r.Stage != record.StageReleased || r.Outcome != record.OutcomeSucceeded {
			t.Errorf("%s: %s at %s: %s", r.Node, r.Outcome, r.Stage, r.Reason)
		}
	}
	// The lab logs each move as it makes it: the last is to Ready.
	eventually(t, 5*time.Second, "the lab's log to show the machines Ready", func() bool {
		for _, n := range []string{quick, secure, none} {
			if s := w.statuses(n); len(s) == 0 || s[len(s)-1] != "Ready" {
				return false
			}
		}
		return true
	})
	for _, n := range []string{quick, secure, none} {
		m, ok := dcMachine(env, n)
		if !ok || m.Status != "Ready" || m.SystemID != ids[n] {
			t.Errorf("%s: lab machine %+v (present %v), want %s Ready", n, m, ok, ids[n])
		}
		seen := w.statuses(n)
		erased := slices.Contains(seen, "Disk erasing")
		if want := n != none; erased != want {
			t.Errorf("%s: the lab showed %v; Disk erasing seen %v, want %v", n, seen, erased, want)
		}
		if i := slices.Index(seen, "Disk erasing"); erased && !slices.Contains(seen[i:], "Ready") {
			t.Errorf("%s: the lab showed %v, want Ready after Disk erasing", n, seen)
		}
		rec := nodeRecord(t, e, n)
		if rec.MachineID != ids[n] || rec.Observed != "Ready" || rec.Stage != record.StageReleased || rec.LifecycleState() != record.LifecycleReleased {
			t.Errorf("%s: record machine %q observed %q stage %s lifecycle %s, want %s Ready released released", n, rec.MachineID, rec.Observed, rec.Stage, rec.LifecycleState(), ids[n])
		}
		if !rec.DeploymentEnded {
			t.Errorf("%s: the deployment did not end with the release", n)
		}
		if rec.ObservedPower != m.Power || m.Power != "off" {
			t.Errorf("%s released: the record's power %q, the lab's %q", n, rec.ObservedPower, m.Power)
		}
	}
	dcCheckEraseModes(t, env, map[string]string{quick: "quick", secure: "secure", none: ""})
	evs := dcTypedEvents(t, e, task.ID)
	for _, n := range []string{quick, secure, none} {
		want := []string{record.EventDecommissionStarted, record.EventDecommissionCompleted}
		if got := dcTypes(evs[n]); !slices.Equal(got, want) {
			t.Errorf("%s: typed events %v, want %v", n, got, want)
		}
		for _, ev := range evs[n] {
			if ev.Correlation != "req-decommission-1" {
				t.Errorf("%s: event %s has correlation %q", n, ev.Type, ev.Correlation)
			}
		}
	}
	audit(t, env, e, 0)
}

// TestDecommissionDelete: with options.delete the released machine is
// removed from the lab; the record keeps no machine and says it was
// deleted. The task's erase option overrides the design's policy.
func TestDecommissionDelete(t *testing.T) {
	t.Parallel()
	node := "r02-cmp01"
	d := designtest.Example(t)
	d.Site.Spec.Lifecycle.Erase = design.EraseNone
	env, e := prepared(t, d, nil)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: dcNodes(node), Requester: "test"}, record.TaskSucceeded)
	id := nodeRecord(t, e, node).MachineID
	t0 := time.Now()

	_, res := run(t, e, record.Request{Action: record.ActionDecommissionNodes, Filter: dcNodes(node), Requester: "test",
		Options: &record.TaskOptions{Delete: true, Erase: "quick"}}, record.TaskSucceeded)
	if r := res[0]; r.Stage != record.StageDeleted || r.Outcome != record.OutcomeSucceeded {
		t.Fatalf("%s: %s at %s: %s", r.Node, r.Outcome, r.Stage, r.Reason)
	}
	if m, ok := dcMachine(env, node); ok {
		t.Errorf("%s: the lab still has machine %+v", node, m)
	}
	// MAAS answers no events of a deleted machine: the lab's machine
	// (its hardware, which stays) recorded the erase phase it waited.
	eventually(t, 5*time.Second, "the lab's machine to have waited an erase (the task's erase option)", func() bool {
		return slices.ContainsFunc(env.Lab.Machine(node).Timeline().Phases, func(p maas.Phase) bool {
			return p.Name == maas.PhaseErase && p.Start.After(t0)
		})
	})
	rec := nodeRecord(t, e, node)
	if rec.MachineID != "" || rec.Observed != orchestrator.ObservedDeleted || rec.LifecycleState() != record.LifecycleDeleted {
		t.Errorf("%s: record machine %q observed %q lifecycle %s, want none, %q, deleted", node, rec.MachineID, rec.Observed, rec.LifecycleState(), orchestrator.ObservedDeleted)
	}
	if !slices.ContainsFunc(rec.History, func(tr record.Transition) bool {
		return tr.To == record.StageDeleted && strings.Contains(tr.Message, id)
	}) {
		t.Errorf("%s: no transition to deleted naming machine %s: %v", node, id, rec.History)
	}
	// The sweep finds nothing to say: no record claims the machine, and
	// the lab has none left.
	rep, err := e.Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Leaks)+len(rep.Drift) != 0 {
		t.Errorf("sweep after the delete: leaks %v, drift %v", rep.Leaks, rep.Drift)
	}
}

// TestDecommissionRetry: a node whose machine is in rescue mode cannot
// be released: the decommission stops it for manual intervention at
// releasing, naming the machine's state (typed event: manual
// intervention required). The operator brings the machine out of rescue
// (release-manual, then rescue_exit), retries the task, and the
// decommission completes from releasing: the lab shows Disk erasing,
// then Ready.
func TestDecommissionRetry(t *testing.T) {
	t.Parallel()
	node := "r02-cmp02"
	d := designtest.Example(t)
	d.Site.Spec.Lifecycle.Erase = design.EraseQuick
	env, e := prepared(t, d, nil)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: dcNodes(node), Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionRescueEnter, Filter: dcNodes(node), Requester: "test"}, record.TaskSucceeded)

	task, res := run(t, e, record.Request{Action: record.ActionDecommissionNodes, Filter: dcNodes(node), Requester: "test"}, record.TaskFailed)
	if r := res[0]; r.Outcome != record.OutcomeManual || r.Stage != record.StageReleasing || !strings.Contains(r.Reason, "Rescue mode") {
		t.Fatalf("%s: %s at %s (%q), want manual-intervention at releasing naming Rescue mode", node, r.Outcome, r.Stage, r.Reason)
	}
	if m, _ := dcMachine(env, node); m.Status != "Rescue mode" {
		t.Fatalf("%s: lab status %q, want Rescue mode (untouched)", node, m.Status)
	}
	if _, err := e.ReleaseManual(t.Context(), node, "test"); err != nil {
		t.Fatal(err)
	}
	run(t, e, record.Request{Action: record.ActionRescueExit, Filter: dcNodes(node), Requester: "test"}, record.TaskSucceeded)
	w := dcWatchLab(t, env)

	t0 := time.Now().UTC()
	after := applyVerb(t, e, task.ID, record.VerbRetry, record.TaskSucceeded)
	if r := after[node]; r.Outcome != record.OutcomeSucceeded || r.Stage != record.StageReleased {
		t.Fatalf("%s after retry: %s at %s: %s", node, r.Outcome, r.Stage, r.Reason)
	}
	if m, _ := dcMachine(env, node); m.Status != "Ready" {
		t.Errorf("%s: lab status %q after the retry, want Ready", node, m.Status)
	}
	if seen := w.statuses(node); !slices.Contains(seen, "Disk erasing") {
		t.Errorf("%s: the lab showed %v during the retry, want Disk erasing", node, seen)
	}
	if trs := since(nodeRecord(t, e, node), t0); len(trs) == 0 || trs[0].From != record.StageReleasing {
		t.Errorf("%s: transitions of the retry %v, want the first from releasing", node, trs)
	}
	want := []string{record.EventDecommissionStarted, record.EventDecommissionManual, record.EventDecommissionCompleted}
	if got := dcTypes(dcTypedEvents(t, e, task.ID)[node]); !slices.Equal(got, want) {
		t.Errorf("%s: typed events %v, want %v", node, got, want)
	}
}

// TestRescueEnterExit: rescue_enter takes a deployed node's machine into
// rescue mode (the lab shows Rescue mode), the sweep does not count it as
// lost (its deployment goes on), and rescue_exit brings it back to
// Deployed.
func TestRescueEnterExit(t *testing.T) {
	t.Parallel()
	node := "r01-gpu01"
	d := designtest.Example(t)
	env, e := prepared(t, d, nil)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Filter: dcNodes(node), Requester: "test"}, record.TaskSucceeded)
	dep := nodeRecord(t, e, node).Deployment

	_, res := run(t, e, record.Request{Action: record.ActionRescueEnter, Filter: dcNodes(node), Requester: "test"}, record.TaskSucceeded)
	if r := res[0]; r.Stage != record.StageRescueMode || r.Outcome != record.OutcomeSucceeded {
		t.Fatalf("%s: %s at %s: %s", node, r.Outcome, r.Stage, r.Reason)
	}
	if m, _ := dcMachine(env, node); m.Status != "Rescue mode" {
		t.Fatalf("%s: lab status %q, want Rescue mode", node, m.Status)
	}
	rec := nodeRecord(t, e, node)
	if !rec.InRescue() || rec.Observed != "Rescue mode" {
		t.Errorf("%s: record stage %s observed %q, want rescue-mode, Rescue mode", node, rec.Stage, rec.Observed)
	}
	rep, err := e.Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, dr := range rep.Drift {
		if dr.Node == node {
			t.Errorf("sweep reports %s in rescue mode as drift: %+v", node, dr)
		}
	}
	if rec := nodeRecord(t, e, node); rec.DeploymentEnded || rec.Deployment != dep {
		t.Errorf("%s: deployment %d ended %v after the sweep, want %d going on", node, rec.Deployment, rec.DeploymentEnded, dep)
	}

	_, res = run(t, e, record.Request{Action: record.ActionRescueExit, Filter: dcNodes(node), Requester: "test"}, record.TaskSucceeded)
	if r := res[0]; r.Stage != record.StageDeployed || r.Outcome != record.OutcomeSucceeded {
		t.Fatalf("%s: %s at %s: %s", node, r.Outcome, r.Stage, r.Reason)
	}
	if m, _ := dcMachine(env, node); m.Status != "Deployed" {
		t.Errorf("%s: lab status %q after rescue_exit, want Deployed", node, m.Status)
	}
	audit(t, env, e, 1)

	// destroy_nodes is a decommission too (typed events); its erase
	// option overrides the design's (the lab's default erases).
	w := dcWatchLab(t, env)
	task, _ := run(t, e, record.Request{Action: record.ActionDestroyNodes, Filter: dcNodes(node), Requester: "test",
		Options: &record.TaskOptions{Erase: "none"}}, record.TaskSucceeded)
	if m, _ := dcMachine(env, node); m.Status != "Ready" || slices.Contains(w.statuses(node), "Disk erasing") {
		t.Errorf("%s: the lab showed %v, want Ready without Disk erasing", node, w.statuses(node))
	}
	want := []string{record.EventDecommissionStarted, record.EventDecommissionCompleted}
	if got := dcTypes(dcTypedEvents(t, e, task.ID)[node]); !slices.Equal(got, want) {
		t.Errorf("%s: destroy's typed events %v, want %v", node, got, want)
	}
}

// TestHardwareTests: test_nodes on Ready machines: the node whose tests
// pass ends at tested, the machine Ready again; the node whose tests the
// lab fails fails with MAAS's reason, its machine left Failed testing.
func TestHardwareTests(t *testing.T) {
	t.Parallel()
	good, bad := "r02-gpu01", "r02-gpu02"
	d := designtest.Example(t)
	env, e := prepared(t, d, &maas.Faults{Machines: map[string]maas.MachineFaults{bad: {FailTesting: 1}}})
	sel := dcNodes(good, bad)
	run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: sel, Requester: "test"}, record.TaskSucceeded)
	w := dcWatchLab(t, env)

	_, res := run(t, e, record.Request{Action: record.ActionTestNodes, Filter: sel, Requester: "test"}, record.TaskPartiallySucceeded)
	r := byNode(res)
	if g := r[good]; g.Outcome != record.OutcomeSucceeded || g.Stage != record.StageTested {
		t.Errorf("%s: %s at %s: %s", good, g.Outcome, g.Stage, g.Reason)
	}
	if seen := w.statuses(good); !slices.Contains(seen, "Testing") {
		t.Errorf("%s: the lab showed %v, want Testing", good, seen)
	}
	if m, _ := dcMachine(env, good); m.Status != "Ready" {
		t.Errorf("%s: lab status %q after its tests, want Ready", good, m.Status)
	}
	b := r[bad]
	if b.Outcome != record.OutcomeFailed || b.Stage != record.StageTesting || !strings.Contains(b.Reason, "hardware tests") ||
		!strings.Contains(b.Reason, "Failed testing") {
		t.Errorf("%s: %s at %s (%q), want failed at testing with MAAS's reason", bad, b.Outcome, b.Stage, b.Reason)
	}
	if m, _ := dcMachine(env, bad); m.Status != "Failed testing" {
		t.Errorf("%s: lab status %q, want Failed testing", bad, m.Status)
	}
	// Rescue mode is for deployed nodes: a Ready one is refused, untouched.
	_, res = run(t, e, record.Request{Action: record.ActionRescueEnter, Filter: dcNodes(good), Requester: "test"}, record.TaskFailed)
	if r := res[0]; r.Stage != record.StageRescue || !strings.Contains(r.Reason, "not deployed") {
		t.Errorf("%s: rescue_enter of a ready node: %s at %s (%q), want failed at rescue saying it is not deployed", good, r.Outcome, r.Stage, r.Reason)
	}
	if m, _ := dcMachine(env, good); m.Status != "Ready" {
		t.Errorf("%s: lab status %q after a refused rescue, want Ready", good, m.Status)
	}
}

// The task options are checked before anything is stored.
func TestTaskOptionsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		action record.Action
		opt    record.TaskOptions
		want   string // "" for accepted
	}{
		{record.ActionDecommissionNodes, record.TaskOptions{Erase: "secure", Delete: true}, ""},
		{record.ActionDestroyNodes, record.TaskOptions{Erase: "none"}, ""},
		{record.ActionDecommissionNodes, record.TaskOptions{Erase: "wipe"}, "use none, quick or secure"},
		{record.ActionDestroyNodes, record.TaskOptions{Delete: true}, "applies to decommission_nodes only"},
		{record.ActionDeployNodes, record.TaskOptions{Erase: "quick"}, "applies to decommission_nodes and destroy_nodes only"},
	} {
		err := tc.opt.Check(tc.action)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %+v: %v, want accepted", tc.action, tc.opt, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %+v: %v, want an error saying %q", tc.action, tc.opt, err, tc.want)
		}
	}
}
