package sitemux

import (
	"context"
	"errors"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

// planning is a site's provisioner that plans: each node it is asked
// about answers its site's name as the change.
type planning struct {
	*stub
	asked [][]string // node names per PlanNodes call
	sites []string   // PlanSite's spec names
}

func (p *planning) PlanNodes(_ context.Context, nodes []drivers.Node) ([]drivers.MachinePlan, error) {
	var names []string
	out := make([]drivers.MachinePlan, len(nodes))
	for i, n := range nodes {
		names = append(names, n.Name)
		_, found := p.machines[n.MachineID]
		out[i] = drivers.MachinePlan{Node: n.Name, Found: found, Changes: []drivers.PlannedChange{{Part: drivers.PartTags, Op: "create", Object: p.name}}}
	}
	p.asked = append(p.asked, names)
	return out, nil
}

func (p *planning) PlanSite(_ context.Context, s drivers.SiteSpec) ([]drivers.PlannedChange, error) {
	p.sites = append(p.sites, s.Name)
	return []drivers.PlannedChange{{Part: drivers.PartFabric, Op: "create", Object: p.name}}, nil
}

// TestPlanRoutedBySite: PlanNodes asks each site once about its own
// nodes and answers in the order asked, the site on each machine; a new
// node of no site is not found; PlanSite goes to the site it names; a
// site whose driver cannot plan answers drivers.ErrCannotPlan.
func TestPlanRoutedBySite(t *testing.T) {
	s, a, b := twoSites(t)
	pa, pb := &planning{stub: a}, &planning{stub: b}
	s.sites["dc1"].drv, s.sites["dc2"].drv = pa, pb
	nodes := []drivers.Node{{NodeRef: drivers.NodeRef{Name: "n2", MachineID: "bbb222"}}, {NodeRef: drivers.NodeRef{Name: "new"}},
		{NodeRef: drivers.NodeRef{Name: "n1", MachineID: "aaa111"}}}
	ps, err := s.PlanNodes(t.Context(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(pa.asked) != 1 || len(pb.asked) != 1 || pa.asked[0][0] != "n1" || pb.asked[0][0] != "n2" {
		t.Fatalf("asked dc1 %v, dc2 %v", pa.asked, pb.asked)
	}
	for i, want := range []string{"dc2", "", "dc1"} {
		p := ps[i]
		if p.Node != nodes[i].Name || p.Found != (want != "") || (want != "" && (p.Now.Site != want || p.Changes[0].Object != want)) {
			t.Errorf("plan %d: %+v, want site %q", i, p, want)
		}
	}
	if ch, err := s.PlanSite(t.Context(), drivers.SiteSpec{Name: "dc2"}); err != nil || len(ch) != 1 || ch[0].Object != "dc2" || len(pa.sites) != 0 {
		t.Errorf("PlanSite dc2: %+v %v (dc1 asked %v)", ch, err, pa.sites)
	}
	s.sites["dc2"].drv = b // no planner
	if _, err := s.PlanSite(t.Context(), drivers.SiteSpec{Name: "dc2"}); !errors.Is(err, drivers.ErrCannotPlan) {
		t.Errorf("PlanSite of a site that cannot plan: %v", err)
	}
	if _, err := s.PlanNodes(t.Context(), nodes); !errors.Is(err, drivers.ErrCannotPlan) {
		t.Errorf("PlanNodes with a site that cannot plan: %v", err)
	}
}
