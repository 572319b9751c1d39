package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestBoundPlan: a stored plan keeps at most maxPlanNodes nodes and
// maxPlanBytes of JSON, the first ones (destructive first), and counts
// the rest; a small plan is kept whole.
func TestBoundPlan(t *testing.T) {
	big := func(nodes, changes int) record.Plan {
		p := record.Plan{To: strings.Repeat("a", 64), Counts: map[record.PlanAction]int{record.PlanRelease: 1, record.PlanConfigure: nodes - 1}}
		for i := range nodes {
			n := record.NodePlan{Node: fmt.Sprintf("n%05d", i), Action: record.PlanConfigure}
			if i == 0 {
				n.Action = record.PlanRelease
				p.Destructive = []string{"release n00000"}
			}
			for j := range changes {
				n.Changes = append(n.Changes, drivers.PlannedChange{Part: "interfaces", Op: "update", Object: fmt.Sprintf("eth%d", j), Detail: strings.Repeat("x", 100)})
			}
			p.Nodes = append(p.Nodes, n)
		}
		return p
	}
	for _, c := range []struct {
		name           string
		nodes, changes int
		kept           int // -1: fewer, by the byte bound
	}{{"small", 10, 1, 10}, {"many nodes", 3000, 0, maxPlanNodes}, {"large nodes", 900, 20, -1}} {
		sp := boundPlan(big(c.nodes, c.changes))
		b, _ := json.Marshal(sp)
		switch {
		case len(b) > maxPlanBytes:
			t.Errorf("%s: %d bytes stored, over %d", c.name, len(b), maxPlanBytes)
		case len(sp.Nodes)+sp.NodesOmitted != c.nodes:
			t.Errorf("%s: %d kept + %d omitted, want %d", c.name, len(sp.Nodes), sp.NodesOmitted, c.nodes)
		case c.kept >= 0 && len(sp.Nodes) != c.kept:
			t.Errorf("%s: kept %d, want %d", c.name, len(sp.Nodes), c.kept)
		case c.kept < 0 && (len(sp.Nodes) == 0 || len(sp.Nodes) >= c.nodes):
			t.Errorf("%s: kept %d of %d; want the byte bound to cut some", c.name, len(sp.Nodes), c.nodes)
		case sp.Nodes[0].Action != record.PlanRelease || sp.Counts[record.PlanConfigure] != c.nodes-1:
			t.Errorf("%s: the destructive node or the counts were lost: %+v %v", c.name, sp.Nodes[0], sp.Counts)
		}
	}
}
