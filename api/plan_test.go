package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// deployed deploys the example's nodes (all when none are named)
// through the API and checks the lab's own MAAS says they are Deployed.
func deployed(t *testing.T, f *fixture, nodes ...string) {
	t.Helper()
	deploy := map[string]any{"action": "deploy_nodes"}
	if len(nodes) > 0 {
		deploy["node_filter"] = map[string]any{"sets": []map[string]any{{"names": nodes}}}
	} else {
		nodes = designtest.Example(t).NodeNames()
	}
	for _, body := range []map[string]any{{"action": "prepare_site"}, deploy} {
		var task record.Task
		if code := f.json(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], body, &task); code != http.StatusCreated {
			t.Fatalf("%v: %d", body["action"], code)
		}
		wait(t, f, task.ID)
	}
	for _, n := range nodes {
		if st, _ := labMachine(f, n); st != "Deployed" {
			t.Fatalf("the lab's MAAS says %s is %q, want Deployed", n, st)
		}
	}
}

// planOf POSTs an archive to /designs/plan as a viewer.
func planOf(t *testing.T, f *fixture, archive []byte) (int, apitypes.Plan, []byte) {
	t.Helper()
	code, b := f.do(t, "POST", "/api/v1/designs/plan", f.Token[api.RoleViewer], "application/gzip", archive)
	var p apitypes.Plan
	if code == http.StatusOK {
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("plan: %v: %s", err, b)
		}
	}
	return code, p, b
}

// TestPlanAndApprove: with a node deployed in the lab, a design without
// it plans a release of its machine, destructive and first (a viewer may
// plan; the lab's MAAS still says Deployed after). Applying it is
// refused with a 409 naming the release and the revision to approve,
// also when the approval names another revision, and nothing is stored;
// a viewer may not apply at all. Approved, it is stored with its plan,
// which GET /designs/{rev}/plan and GET /designs show.
func TestPlanAndApprove(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const node = "r01-cmp01"
	deployed(t, f, node)
	archive := exampleWithout(t, node)

	code, plan, b := planOf(t, f, archive)
	if code != http.StatusOK || !plan.Changed || plan.Counts["release"] != 1 || len(plan.Nodes) == 0 ||
		plan.Nodes[0].Node != node || plan.Nodes[0].Action != "release" || len(plan.Destructive) != 1 ||
		!strings.Contains(plan.Destructive[0], node) || len(plan.To) != 64 {
		t.Fatalf("plan: %d %s; want the release of %s first", code, b, node)
	}
	if st, _ := labMachine(f, node); st != "Deployed" {
		t.Fatalf("after the plan the lab says %s is %q: planning changed the machine", node, st)
	}
	before, err := f.Store.History(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	if code, b := f.do(t, "POST", "/api/v1/designs", f.Token[api.RoleViewer], "application/gzip", archive); code != http.StatusForbidden {
		t.Fatalf("a viewer applied: %d %s", code, b)
	}
	op := f.Token[api.RoleOperator]
	for _, q := range []string{"", "?approve=" + strings.Repeat("0", 64)} {
		code, b := f.do(t, "POST", "/api/v1/designs"+q, op, "application/gzip", archive)
		var p api.Problem
		if err := json.Unmarshal(b, &p); err != nil || code != http.StatusConflict || !strings.Contains(p.Detail, "release "+node) ||
			p.Approve != plan.Approve || len(plan.Approve) != 64 || len(p.Destructive) != 1 || !strings.Contains(p.Detail, "approve="+plan.Approve) {
			t.Fatalf("apply%s: %d %s; want 409 naming the release and %s", q, code, b, plan.Approve)
		}
	}
	if code, b := f.do(t, "POST", "/api/v1/designs?approve=abc", op, "application/gzip", archive); code != http.StatusBadRequest {
		t.Fatalf("approve=abc: %d %s; want 400", code, b)
	}
	if h, err := f.Store.History(t.Context()); err != nil || len(h) != len(before) {
		t.Fatalf("a refused apply was stored: %d → %d applies (%v)", len(before), len(h), err)
	}

	var applied apitypes.Applied
	if code, b := f.do(t, "POST", "/api/v1/designs?approve="+plan.To, op, "application/gzip", archive); code != http.StatusConflict {
		t.Fatalf("approve=the revision: %d %s; want 409 (an approval is of the plan's destructive actions)", code, b)
	}
	code, b = f.do(t, "POST", "/api/v1/designs?approve="+plan.Approve, op, "application/gzip", archive)
	if err := json.Unmarshal(b, &applied); err != nil || code != http.StatusCreated || applied.Revision != plan.To ||
		applied.Plan == nil || applied.Plan.Counts["release"] != 1 {
		t.Fatalf("approved: %d %s", code, b)
	}
	var stored apitypes.Plan
	if code := f.json(t, "GET", "/api/v1/designs/"+plan.To+"/plan", f.Token[api.RoleViewer], nil, &stored); code != http.StatusOK ||
		stored.To != plan.To || stored.Approve != "" || len(stored.Nodes) == 0 || stored.Nodes[0].Node != node || stored.Nodes[0].Action != "release" {
		t.Fatalf("the stored plan: %d %+v", code, stored)
	}
	sum, info := lastApply(t, f)
	if sum.ID != plan.To || sum.Plan == nil || sum.Plan.Destructive != 1 || sum.Plan.Counts["release"] != 1 || !sum.Plan.Changed ||
		info.Plan == nil || info.Plan.Destructive != 1 {
		t.Fatalf("the history's plan summary: %+v / %+v", sum.Plan, info.Plan)
	}
	// Applied again, unchanged: nothing to approve (the release is still
	// to come, as the plan stored says).
	if code, b := f.do(t, "POST", "/api/v1/designs", op, "application/gzip", archive); code != http.StatusOK {
		t.Fatalf("the current design again, unapproved: %d %s; want 200 unchanged", code, b)
	}
	// A revision applied before plans were kept (the harness's) has none.
	if code, b := f.do(t, "GET", "/api/v1/designs/"+before[0].ID+"/plan", f.Token[api.RoleViewer], "", nil); code != http.StatusNotFound {
		t.Fatalf("the plan of a revision stored without one: %d %s", code, b)
	}
	refusals := 0
	for _, r := range auditOf(t, f, "/api/v1/designs") {
		if r.Status == http.StatusConflict && r.Outcome == "failed" && strings.Contains(r.Detail, "release "+node) {
			refusals++
		}
	}
	if refusals != 3 {
		t.Errorf("%d audit records of the refusals, want 3", refusals)
	}
}

// TestPlanNoChange: with every node deployed, the current design plans
// no change (every node none, changed false); before, each node is new.
func TestPlanNoChange(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, plan, _ := planOf(t, f, exampleTar(t, func(s string) string { return s }))
	if !plan.Changed || plan.Counts["new"] != len(plan.Nodes) {
		t.Fatalf("before any deploy: %+v; want every node new", plan.Counts)
	}
	deployed(t, f)
	code, plan, b := planOf(t, f, exampleTar(t, func(s string) string { return s }))
	if code != http.StatusOK || plan.Changed || len(plan.Destructive) != 0 || plan.Counts["none"] != len(plan.Nodes) || len(plan.Nodes) == 0 {
		t.Fatalf("plan of the current design: %d %s", code, b)
	}
	if plan.From != plan.To {
		t.Errorf("plan from %s to %s: the same design should plan from and to the same revision", plan.From, plan.To)
	}
}

// TestPlanInvalid: a design with errors plans nothing: 422 with its
// findings, as apply.
func TestPlanInvalid(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	code, _, b := planOf(t, f, exampleArchive(t, "address: 10.13.0.101", "address: 10.13.0.999"))
	var p api.Problem
	if err := json.Unmarshal(b, &p); err != nil || code != http.StatusUnprocessableEntity || p.Findings == nil {
		t.Fatalf("plan of an invalid design: %d %s; want 422 with findings", code, b)
	}
}

// TestApplyDirHeldDestructive: git sync's apply of a design whose plan
// releases a deployed machine is held (nothing stored) until the
// approval names its revision; then stored with its plan.
func TestApplyDirHeldDestructive(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	const node = "r01-cmp02"
	deployed(t, f, node)
	dir := exampleDir(t)
	removeNode(t, dir, node)
	req := api.DirApply{Dir: dir, Actor: "git-sync", Roots: []string{"git:file:///srv/site.git#main:"}}
	out, err := f.API.ApplyDir(ctx, req)
	if err != nil || out.Result != "held" || out.Plan == nil || len(out.Held) != 1 || !strings.Contains(out.Held[0], "release "+node) {
		t.Fatalf("ApplyDir: %+v, %v; want held naming the release of %s", out, err, node)
	}
	if cur, err := f.Store.Current(ctx); err != nil || cur.ID == out.Revision {
		t.Fatalf("a held design is current (%v)", err)
	}
	if st, _ := labMachine(f, node); st != "Deployed" {
		t.Fatalf("held, yet the lab says %s is %q", node, st)
	}
	req.Approve = out.Approve
	done, err := f.API.ApplyDir(ctx, req)
	if err != nil || done.Result != "created" {
		t.Fatalf("approved: %+v, %v", done, err)
	}
	var stored apitypes.Plan
	if code := f.json(t, "GET", "/api/v1/designs/"+out.Revision+"/plan", f.Token[api.RoleViewer], nil, &stored); code != http.StatusOK ||
		!slices.ContainsFunc(stored.Nodes, func(n apitypes.NodePlan) bool { return n.Node == node && n.Action == "release" }) {
		t.Fatalf("the stored plan: %d %+v", code, stored)
	}
}
