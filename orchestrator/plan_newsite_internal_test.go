package orchestrator

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// sitesPlanner is a server driver built from a design's Sites, as serve
// builds it (a MAAS driver per Site, behind sitemux): it plans the sites
// it drives and refuses the others, as sitemux does.
type sitesPlanner struct {
	drivers.Server
	drives []string
	asked  []string
}

func (p *sitesPlanner) PlanNodes(_ context.Context, nodes []drivers.Node) ([]drivers.MachinePlan, error) {
	out := make([]drivers.MachinePlan, len(nodes))
	for i, n := range nodes {
		out[i] = drivers.MachinePlan{Node: n.Name}
	}
	return out, nil
}

func (p *sitesPlanner) PlanSite(_ context.Context, s drivers.SiteSpec) ([]drivers.PlannedChange, error) {
	if !slices.Contains(p.drives, s.Name) {
		return nil, drivers.Errorf(drivers.Permanent, "plan of site %q: this server drives sites %v", s.Name, p.drives)
	}
	p.asked = append(p.asked, s.Name)
	return []drivers.PlannedChange{{Part: drivers.PartFabric, Op: "create", Object: s.Name}}, nil
}

// TestPlanAddsASite: the server driver is built from the current
// design's Sites, so a design that adds a Site is planned without asking
// the provisioner about the new one (it is not bound until the design is
// applied: asked, the driver refused, the plan failed and the design
// could never be applied); the plan says so, and the Site's document
// shows added. The current Site is still read.
func TestPlanAddsASite(t *testing.T) {
	store := memory.New()
	cur := designtest.Example(t)
	raw, _, err := cur.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.PutRevision(t.Context(), statestore.Revision{ID: mustID(t, cur), Design: raw, Counts: cur.Counts()}); err != nil {
		t.Fatal(err)
	}
	drv := &sitesPlanner{drives: cur.SiteNames()}
	e, err := New(Config{Store: store, Drivers: Drivers{Server: drv}})
	if err != nil {
		t.Fatal(err)
	}
	next := designtest.TwoSites(t)
	added := ""
	for _, s := range next.SiteNames() {
		if !slices.Contains(cur.SiteNames(), s) {
			added = s
		}
	}
	if added == "" {
		t.Fatalf("the two-site design adds no site to %v", cur.SiteNames())
	}
	p, err := e.Plan(t.Context(), next, "next")
	if err != nil {
		t.Fatalf("plan of a design adding site %s: %v", added, err)
	}
	if !p.Observed || !slices.Equal(drv.asked, cur.SiteNames()) {
		t.Errorf("observed %v, sites asked %v, want %v", p.Observed, drv.asked, cur.SiteNames())
	}
	if !slices.ContainsFunc(p.Notes, func(n string) bool { return strings.Contains(n, "site "+added) }) {
		t.Errorf("notes %q: none says site %s was not read", p.Notes, added)
	}
	for _, s := range p.Sites {
		provisioner := slices.DeleteFunc(slices.Clone(s.Changes), func(c drivers.PlannedChange) bool { return c.Part == "image" }) // images: the design's (plan_images.go)
		if s.Site == added && (len(provisioner) != 0 || !slices.Contains(s.Records, "Site "+added+": added")) {
			t.Errorf("site %s: %+v", added, s)
		}
	}
}

func mustID(t *testing.T, d *design.Design) string {
	t.Helper()
	_, id, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return id
}
