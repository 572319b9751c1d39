package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestBoundPlanLongParts: the stored plan stays within maxPlanBytes when
// what makes it large is not its nodes: 1,500 destructive actions of
// 2 KiB each in words (a redeploy names every interface change) and a
// site with 20,000 changes. What is cut is said in a note; the counts
// stay whole. The refusal of its apply lists the same bounded words, its
// approval of the whole list.
func TestBoundPlanLongParts(t *testing.T) {
	p := record.Plan{To: strings.Repeat("a", 64), Counts: map[record.PlanAction]int{record.PlanRedeploy: 1500}}
	for i := range 1500 {
		p.Nodes = append(p.Nodes, record.NodePlan{Node: fmt.Sprintf("n%05d", i), Action: record.PlanRedeploy})
		p.Destructive = append(p.Destructive, fmt.Sprintf("redeploy n%05d (interfaces changed: %s)", i, strings.Repeat("x", 2048)))
	}
	site := record.SitePlan{Site: "lab"}
	for i := range 20000 {
		site.Changes = append(site.Changes, drivers.PlannedChange{Part: "subnets", Op: "create", Object: fmt.Sprintf("10.%d.%d.0/24", i/256, i%256)})
	}
	p.Sites = []record.SitePlan{site}
	sp := boundPlan(p)
	b, err := json.Marshal(sp)
	if err != nil || len(b) > maxPlanBytes {
		t.Fatalf("%d bytes stored, over %d (%v)", len(b), maxPlanBytes, err)
	}
	if sp.Counts[record.PlanRedeploy] != 1500 || len(sp.Destructive) == 0 || !strings.HasPrefix(sp.Destructive[0], "redeploy n00000") || len(sp.Notes) == 0 {
		t.Errorf("counts %v, %d destructive (first %.40q), notes %q", sp.Counts, len(sp.Destructive), sp.Destructive[0], sp.Notes)
	}
	var pe *problemError
	if !errors.As(destructiveRefusal(p.To, p.Destructive), &pe) || pe.approve != approvalOf(p.To, p.Destructive) ||
		len(pe.destructive) != maxPlanNodes || len(pe.destructive[0]) > maxPlanWordBytes+4 || len(pe.detail) > 4096 {
		t.Errorf("the refusal: %d destructive, the first %d bytes, detail %d bytes", len(pe.destructive), len(pe.destructive[0]), len(pe.detail))
	}
}
