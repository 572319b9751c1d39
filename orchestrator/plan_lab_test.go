package orchestrator_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/server/sitemux"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore"
)

// planMachine is a machine as the lab's MAAS answers it (read with the
// lab's key, not through the driver under test).
type planMachine struct {
	SystemID    string   `json:"system_id"`
	Hostname    string   `json:"hostname"`
	Status      string   `json:"status_name"`
	Series      string   `json:"distro_series"`
	Tags        []string `json:"tag_names"`
	IPAddresses []string `json:"ip_addresses"`
	lifecycle   maas.MachineLifecycle
	volumes     map[string]int64 // its logical volumes' sizes, by name
}

// planLabState reads every machine of the lab's MAAS, by hostname, with its
// lifecycle counters and the space its volume groups use.
func planLabState(t *testing.T, env *labrun.Env) map[string]planMachine {
	t.Helper()
	raw, err := env.MAASCall(t.Context(), "GET", "/machines/", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ms []planMachine
	if err := json.Unmarshal(raw, &ms); err != nil {
		t.Fatal(err)
	}
	lc := env.Lab.MAAS.Lifecycle()
	out := map[string]planMachine{}
	for _, m := range ms {
		m.lifecycle = lc[m.SystemID]
		m.lifecycle.Hostname = ""
		raw, err := env.MAASCall(t.Context(), "GET", "/nodes/"+m.SystemID+"/volume-groups/", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		var vgs []struct {
			LVs []struct {
				Name string `json:"name"`
				Size int64  `json:"size"`
			} `json:"logical_volumes"`
		}
		if err := json.Unmarshal(raw, &vgs); err != nil {
			t.Fatal(err)
		}
		m.volumes = map[string]int64{}
		for _, vg := range vgs {
			for _, lv := range vg.LVs {
				m.volumes[lv.Name] = lv.Size
			}
		}
		out[m.Hostname] = m
	}
	return out
}

// applyRevision stores d as the current revision, as apply does.
func applyRevision(t *testing.T, store statestore.Store, d *design.Design) string {
	t.Helper()
	raw, id, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.PutRevision(t.Context(), statestore.Revision{ID: id, Design: raw, Counts: d.Counts(), Roots: []string{"(plan test)"}}); err != nil {
		t.Fatal(err)
	}
	return id
}

// cloneDesign is a deep copy of d.
func cloneDesign(t *testing.T, d *design.Design) *design.Design {
	t.Helper()
	raw, _, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	c, err := design.DecodeRevision(raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func names(ns ...string) record.Filter {
	return record.Filter{Sets: []design.NodeFilter{{Names: ns}}}
}

// planStep is one change to the example site: what it does to the
// design, the actions the plan must give (every other node: none), and
// what the lab must show once the plan was followed (followPlan).
type planStep struct {
	name   string
	change func(d *design.Design)
	want   map[string]record.PlanAction
	site   bool // the plan lists site-level changes
	// sitePart: a provisioner change of this part is planned in the
	// site, when the server driver can plan.
	sitePart string
	check    func(t *testing.T, before, after map[string]planMachine)
}

// TestPlanAgainstTheLab: the example site is deployed in the lab (all but
// one node); then, change after change, the plan's actions are compared
// with what applying, deploying and running the action the plan names
// did to the lab's machines, read from the lab's MAAS: exactly the
// planned nodes changed, in the planned way.
//
// Each change is planned twice, and both plans are checked against the
// step and against the lab: by the engine, whose MAAS driver plans (it
// reads the provisioner), and by a second engine on the same store whose
// server driver cannot plan behind the site multiplexer (which answers
// drivers.ErrCannotPlan for it): that plan comes from the designs and the
// node records, and must be as right. (These were two tests with a lab
// and the same deploys each; planning changes nothing, so one lab serves
// both.)
func TestPlanAgainstTheLab(t *testing.T) {
	t.Parallel()
	full := designtest.Example(t)
	const extra, removed = "r02-cmp02", "r02-gpu02"
	// broken's first two deployments fail: the first deploy leaves its
	// machine in Failed deployment (one round, then the node fails).
	const broken = "r01-cmp02"
	env := startEnv(t, full, nil, &maas.Faults{Machines: map[string]maas.MachineFaults{broken: {FailDeploy: 2}}}, nil)
	_, canPlan := env.Drivers.Server.(drivers.ServerPlanner)
	d := cloneDesign(t, full)
	delete(d.Nodes, extra)
	applyRevision(t, env.Store, d)
	e := engine(t, env)
	planners := []labPlanner{{"driver", e, canPlan}, {"records", recordsPlanner(t, env), false}}
	// Before anything: every node new, the site to prepare (when the
	// planner reads the provisioner).
	_, id, _ := d.Canonical()
	for _, pl := range planners {
		p, err := pl.e.Plan(t.Context(), d, id)
		if err != nil {
			t.Fatal(err)
		}
		prep := slices.ContainsFunc(p.Sites, func(s record.SitePlan) bool { return len(s.Changes) > 0 })
		if p.Observed != pl.observed || p.Counts[record.PlanNew] != len(d.Nodes) || prep != pl.observed {
			t.Fatalf("first plan (%s): observed %v (notes %q), counts %v, site changes %v", pl.name, p.Observed, p.Notes, p.Counts, prep)
		}
	}
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test"}, record.TaskPartiallySucceeded)
	if m := planLabState(t, env)[broken]; m.Status != "Failed deployment" {
		t.Fatalf("lab: %s is %s after its failed deployments", broken, m.Status)
	}
	steps := append([]planStep{{name: "failed deployment", change: func(*design.Design) {}, want: map[string]record.PlanAction{broken: record.PlanRedeploy}}},
		planSteps(env, full, extra, removed)...)
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			next := cloneDesign(t, d)
			st.change(next)
			_, id, err := next.Canonical()
			if err != nil {
				t.Fatal(err)
			}
			var plans []record.Plan
			for _, pl := range planners {
				plans = append(plans, pl.plan(t, next, id, st))
			}
			before := planLabState(t, env)
			applyRevision(t, env.Store, next)
			d = next
			followPlan(t, e, plans[0])
			after := planLabState(t, env)
			for _, p := range plans {
				checkLab(t, p, before, after)
			}
			if st.check != nil {
				st.check(t, before, after)
			}
		})
	}
}

// labPlanner is an engine that plans: the one running the lab's tasks,
// or recordsPlanner's.
type labPlanner struct {
	name     string
	e        *orchestrator.Engine
	observed bool // its plans read the provisioner
}

// plan plans the change to d (whose canonical id is id) and checks the
// plan against the step.
func (pl labPlanner) plan(t *testing.T, d *design.Design, id string, st planStep) record.Plan {
	t.Helper()
	start := time.Now()
	p, err := pl.e.Plan(t.Context(), d, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: planned in %s (observed %v, notes %q): %v; destructive %q", pl.name, time.Since(start).Round(time.Millisecond), p.Observed, p.Notes, p.Counts, p.Destructive)
	if p.Observed != pl.observed || !pl.observed && !slices.Contains(p.Notes, "the server driver cannot plan: from designs and records only") {
		t.Errorf("%s plan: observed %v with notes %q, want observed %v", pl.name, p.Observed, p.Notes, pl.observed)
	}
	checkPlan(t, p, st)
	return p
}

// recordsPlanner is an engine on env's store and drivers, not started
// (it plans, it runs nothing), whose server driver is behind the site
// multiplexer without its planner: its plans come from the designs and
// the node records.
func recordsPlanner(t *testing.T, env *labrun.Env) *orchestrator.Engine {
	t.Helper()
	cfg := env.Config()
	mux, err := sitemux.New(map[string]sitemux.Site{"lab": {Driver: noPlanner{cfg.Drivers.Server}}}, func(string) (string, bool) { return "lab", true })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Drivers.Server = mux
	e, err := orchestrator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// noPlanner is a server driver without its planner (and with its
// repairs, which the reconciliation uses).
type noPlanner struct{ drivers.Server }

func (s noPlanner) RepairMachine(ctx context.Context, n drivers.Node, parts []string) (drivers.Result, error) {
	return s.Server.(interface {
		RepairMachine(ctx context.Context, n drivers.Node, parts []string) (drivers.Result, error)
	}).RepairMachine(ctx, n, parts)
}

// SiteImages: the images of the driver behind (it is no planner, it
// manages images).
func (s noPlanner) SiteImages(ctx context.Context, site string) (drivers.ServerImages, error) {
	return drivers.ImagesAt(ctx, s.Server, site)
}

// followPlan does what the applied plan says follows: prepare the site
// when it changes, deploy every node, then the command each node's
// reasons name (redeploy, destroy), and a reconciliation run when a
// node is to be configured.
func followPlan(t *testing.T, e *orchestrator.Engine, p record.Plan) {
	t.Helper()
	if slices.ContainsFunc(p.Sites, func(s record.SitePlan) bool { return len(s.Records)+len(s.Changes) > 0 }) {
		run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	}
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test"}, record.TaskSucceeded)
	named := func(cmd string) []string {
		var out []string
		for _, n := range p.Nodes {
			if slices.ContainsFunc(n.Reasons, func(r string) bool { return strings.Contains(r, "`orchestrator "+cmd+" --node "+n.Node+"`") }) {
				out = append(out, n.Node)
			}
		}
		return out
	}
	if ns := named("redeploy"); len(ns) > 0 {
		run(t, e, record.Request{Action: record.ActionRedeployNodes, Requester: "test", Filter: names(ns...)}, record.TaskSucceeded)
	}
	if ns := named("destroy"); len(ns) > 0 {
		run(t, e, record.Request{Action: record.ActionDestroyNodes, Requester: "test", Filter: names(ns...)}, record.TaskSucceeded)
	}
	if p.Counts[record.PlanConfigure] > 0 {
		if _, err := e.Reconcile(t.Context(), "test"); err != nil {
			t.Fatal(err)
		}
	}
}

// checkPlan compares the plan's actions with the step's.
func checkPlan(t *testing.T, p record.Plan, st planStep) {
	t.Helper()
	got := map[string]record.PlanAction{}
	for _, n := range p.Nodes {
		got[n.Node] = n.Action
		want, ok := st.want[n.Node]
		if !ok {
			want = record.PlanNone
		}
		if n.Action != want {
			t.Errorf("plan: %s %s (%q, changes %+v), want %s", n.Node, n.Action, n.Reasons, n.Changes, want)
		}
	}
	for n, a := range st.want {
		if _, ok := got[n]; !ok {
			t.Errorf("plan: %s missing (want %s)", n, a)
		}
	}
	destructive := 0
	for _, a := range st.want {
		if a.Destructive() {
			destructive++
		}
	}
	if len(p.Destructive) != destructive || len(p.Nodes) > 0 && destructive > 0 && !p.Nodes[0].Action.Destructive() {
		t.Errorf("plan: destructive %q, want %d listed first", p.Destructive, destructive)
	}
	siteChanged := slices.ContainsFunc(p.Sites, func(s record.SitePlan) bool { return len(s.Records) > 0 })
	if siteChanged != st.site {
		t.Errorf("plan: site records %+v, want changes %v", p.Sites, st.site)
	}
	planned := slices.ContainsFunc(p.Sites, func(s record.SitePlan) bool {
		return slices.ContainsFunc(s.Changes, func(c drivers.PlannedChange) bool { return c.Part == st.sitePart })
	})
	if p.Observed && st.sitePart != "" && !planned {
		t.Errorf("plan: no %s change planned in the site: %+v", st.sitePart, p.Sites)
	}
	if p.Changed() != (len(st.want) > 0 || st.site) {
		t.Errorf("plan: Changed %v", p.Changed())
	}
}

// checkLab checks that each machine changed as its node's action says:
// new: allocated and deployed; redeploy: released and deployed again;
// release: released, Ready; configure and none: neither.
func checkLab(t *testing.T, p record.Plan, before, after map[string]planMachine) {
	t.Helper()
	for _, n := range p.Nodes {
		b, a := before[n.Node], after[n.Node]
		d := maas.MachineLifecycle{Allocations: a.lifecycle.Allocations - b.lifecycle.Allocations,
			DeployStarts: a.lifecycle.DeployStarts - b.lifecycle.DeployStarts, Releases: a.lifecycle.Releases - b.lifecycle.Releases}
		var ok bool
		switch n.Action {
		case record.PlanNew:
			ok = d.Allocations == 1 && d.DeployStarts == 1 && d.Releases == 0 && a.Status == "Deployed"
		case record.PlanRedeploy:
			ok = d.Releases == 1 && d.DeployStarts == 1 && a.Status == "Deployed"
		case record.PlanRelease:
			ok = d.Releases == 1 && d.DeployStarts == 0 && a.Status == "Ready"
		default:
			ok = d == maas.MachineLifecycle{} && a.Status == b.Status
		}
		if !ok {
			t.Errorf("lab: %s planned %s, but its machine went %s → %s with %d allocation(s), %d deploy(s), %d release(s)",
				n.Node, n.Action, b.Status, a.Status, d.Allocations, d.DeployStarts, d.Releases)
		}
	}
}

func planSteps(env *labrun.Env, full *design.Design, extra, removed string) []planStep {
	return []planStep{
		{name: "none", change: func(*design.Design) {}},
		{name: "add a node", change: func(d *design.Design) { d.Nodes[extra] = full.Nodes[extra] },
			want: map[string]record.PlanAction{extra: record.PlanNew}},
		{name: "tags and kernel parameters", change: func(d *design.Design) {
			d.Nodes["r01-cmp01"].Spec.Tags = append(d.Nodes["r01-cmp01"].Spec.Tags, "plan-tag")
			d.Nodes["r01-cmp02"].Spec.Platform.KernelParams = map[string]string{"console": "ttyS1,115200n8", "quiet": "true"}
			d.Site.Spec.Reconciliation.Policy = map[string]string{"tags": design.PolicyRepair, "kernel-options": design.PolicyRepair}
		}, want: map[string]record.PlanAction{"r01-cmp01": record.PlanConfigure, "r01-cmp02": record.PlanConfigure}, site: true,
			check: func(t *testing.T, before, after map[string]planMachine) {
				if !slices.Contains(after["r01-cmp01"].Tags, "plan-tag") {
					t.Errorf("lab: r01-cmp01's tags %v lack plan-tag", after["r01-cmp01"].Tags)
				}
				if slices.Equal(before["r01-cmp02"].Tags, after["r01-cmp02"].Tags) {
					t.Errorf("lab: r01-cmp02's kernel tag did not change: %v", after["r01-cmp02"].Tags)
				}
			}},
		{name: "series", change: func(d *design.Design) {
			d.Nodes["r01-cmp03"].Spec.Platform.Image, d.Nodes["r01-cmp03"].Spec.Platform.Kernel = "noble", ""
		}, want: map[string]record.PlanAction{"r01-cmp03": record.PlanRedeploy},
			check: func(t *testing.T, _, after map[string]planMachine) {
				if s := after["r01-cmp03"].Series; s != "noble" {
					t.Errorf("lab: r01-cmp03 runs %s, want noble", s)
				}
			}},
		{name: "storage layout", change: func(d *design.Design) {
			vg := d.Nodes["r02-cmp01"].Spec.Storage.VolumeGroups["vg-root"]
			lv := vg.LogicalVolumes["log"]
			lv.Size = "30g"
			vg.LogicalVolumes = maps.Clone(vg.LogicalVolumes)
			vg.LogicalVolumes["log"] = lv
			d.Nodes["r02-cmp01"].Spec.Storage.VolumeGroups["vg-root"] = vg
		}, want: map[string]record.PlanAction{"r02-cmp01": record.PlanRedeploy},
			check: func(t *testing.T, before, after map[string]planMachine) {
				b, a := before["r02-cmp01"].volumes, after["r02-cmp01"].volumes
				if grew := a["vg-root-log"] - b["vg-root-log"]; grew < 9_900_000_000 || grew > 10_100_000_000 { // 10 GB, aligned
					t.Errorf("lab: r02-cmp01's logical volumes went from %v to %v, want vg-root-log 10 GB larger", b, a)
				}
			}},
		{name: "interface address", change: func(d *design.Design) { setAddress(d.Nodes["r01-gpu01"], "mgmt", "10.12.0.124") },
			want: map[string]record.PlanAction{"r01-gpu01": record.PlanRedeploy},
			check: func(t *testing.T, _, after map[string]planMachine) {
				if !slices.Contains(after["r01-gpu01"].IPAddresses, "10.12.0.124") {
					t.Errorf("lab: r01-gpu01's addresses %v lack 10.12.0.124", after["r01-gpu01"].IPAddresses)
				}
			}},
		{name: "remove a node", change: func(d *design.Design) { delete(d.Nodes, removed) },
			want: map[string]record.PlanAction{removed: record.PlanRelease}},
		{name: "network route", change: func(d *design.Design) { d.Networks["storage"].Spec.Routes[0].Metric = 50 }, site: true, sitePart: drivers.PartRoute,
			check: func(t *testing.T, _, _ map[string]planMachine) {
				if m := routeMetric(t, env, "10.113.0.0/24"); m != 50 { // 100 in the example
					t.Errorf("lab: the route's metric is %d after prepare_site, want 50", m)
				}
			}},
	}
}

func setAddress(n *design.Node, network, addr string) {
	n.Spec.Addressing = slices.Clone(n.Spec.Addressing)
	for i, a := range n.Spec.Addressing {
		if a.Network == network {
			n.Spec.Addressing[i].Address = addr
		}
	}
}

// routeMetric is the metric of the lab's static route to dest.
func routeMetric(t *testing.T, env *labrun.Env, dest string) int {
	t.Helper()
	raw, err := env.MAASCall(t.Context(), "GET", "/static-routes/", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var rs []struct {
		Dest struct {
			CIDR string `json:"cidr"`
		} `json:"destination"`
		Metric int `json:"metric"`
	}
	if err := json.Unmarshal(raw, &rs); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Dest.CIDR == dest {
			return r.Metric
		}
	}
	return -1
}
