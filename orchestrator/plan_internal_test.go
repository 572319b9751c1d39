package orchestrator

import (
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// TestPlanTwoSites: with two Sites, a node moved to the other site and
// one removed are released, the others (no machine yet) are new; a node
// an earlier revision had, whose machine is still held, is released with
// the erase that revision gives it; a node a task holds says so; a Site
// document's change goes to its own site, a shared network's to both;
// without a planner the plan says it was not observed.
func TestPlanTwoSites(t *testing.T) {
	store := memory.New()
	cur := designtest.TwoSites(t)
	raw, curID, err := cur.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	older, err := design.DecodeRevision(raw)
	if err != nil {
		t.Fatal(err)
	}
	gone := *older.Nodes["r01-cmp02"]
	gone.Metadata.Name, gone.Spec.Erase = "r09-gone", "secure"
	older.Nodes["r09-gone"] = &gone
	for _, d := range []*design.Design{older, cur} {
		raw, id, err := d.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.PutRevision(t.Context(), statestore.Revision{ID: id, Design: raw, Counts: d.Counts()}); err != nil {
			t.Fatal(err)
		}
	}
	e, err := New(Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var b batch
	for _, n := range []string{"r02-cmp01", "r01-cmp01", "r09-gone"} {
		b.node(record.NodeRecord{Name: n, MachineID: "m-" + n, Observed: "Deployed", Lifecycle: record.LifecycleDeployed,
			Stage: record.StageDeployed, Outcome: record.OutcomeSucceeded})
	}
	b.node(record.NodeRecord{Name: "r01-gpu01", Task: "T1", Stage: record.StageCommission, Outcome: record.OutcomeRunning})
	if err := e.rec.write(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	next, err := design.DecodeRevision(raw)
	if err != nil {
		t.Fatal(err)
	}
	next.Nodes["r02-cmp01"].Spec.Site = "lab"
	next.Nodes["r02-cmp01"].SiteName = "lab"
	delete(next.Nodes, "r01-cmp01")
	next.Sites["lab-east"].Spec.Domain = "east2.lab.example.net"
	next.Networks["storage"].Spec.Routes[0].Metric = 50
	p, err := e.Plan(t.Context(), next, "next")
	if err != nil {
		t.Fatal(err)
	}
	if p.From != curID || p.To != "next" || p.Observed || !slices.Contains(p.Notes, noPlanner) {
		t.Fatalf("from %s to %s, observed %v, notes %q", p.From, p.To, p.Observed, p.Notes)
	}
	want := map[string]string{"r02-cmp01": "release: moved from site lab-east to site lab", "r01-cmp01": "release: removed from the design",
		"r09-gone":  "release: removed from the design | its machine stays as it is, reported as orphan drift, until `orchestrator destroy --node r09-gone` releases it (erase secure)",
		"r01-gpu01": "new: no machine yet: deploy allocates, commissions, configures and deploys one | task T1 drives the node now (commission): the plan is as of its last checkpoint"}
	for _, n := range p.Nodes {
		got := string(n.Action) + ": " + strings.Join(n.Reasons, " | ")
		if w, ok := want[n.Node]; ok && !strings.HasPrefix(got, w) || !ok && n.Action != record.PlanNew {
			t.Errorf("%s: %s", n.Node, got)
		}
	}
	if len(p.Nodes) != len(cur.Nodes)+1 || p.Counts[record.PlanRelease] != 3 || len(p.Destructive) != 3 || p.Nodes[0].Action != record.PlanRelease {
		t.Errorf("%d nodes, counts %v, destructive %q", len(p.Nodes), p.Counts, p.Destructive)
	}
	sites := map[string]string{}
	for _, s := range p.Sites {
		sites[s.Site] = strings.Join(s.Records, "; ")
	}
	if sites["lab-east"] != "Site lab-east: changed spec.domain; Network storage: changed spec.routes" || sites["lab"] != "Network storage: changed spec.routes" {
		t.Errorf("site records %q", sites)
	}
}
