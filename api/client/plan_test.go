package client_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestPlanApprove: PlanDesign answers the plan (a viewer may); with a
// node deployed, ApplyDesignWith of a design without it is a
// *ProblemError 409 whose Destructive names the release and whose
// Approve is the plan's, also when approving something else; with
// Approve it is stored, its plan in the answer and from DesignPlan.
func TestPlanApprove(t *testing.T) {
	s := newFixture(t)
	ctx := t.Context()
	op, viewer := newClient(t, s.URL, s.Token[api.RoleOperator]), newClient(t, s.URL, s.Token[api.RoleViewer])
	const node = "r01-cmp01"
	for _, req := range []client.TaskRequest{{Action: record.ActionPrepareSite},
		{Action: record.ActionDeployNodes, NodeFilter: apitypes.Filter{Sets: []apitypes.NodeFilter{{Names: []string{node}}}}}} {
		task, err := op.CreateTask(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		waitTask(t, op, task.ID)
	}
	site := copyExample(t)
	p := filepath.Join(site, "nodes-r01.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, doc := range strings.Split(string(b), "\n---\n") {
		if !strings.Contains(doc, "name: "+node+"\n") {
			keep = append(keep, doc)
		}
	}
	writeFiles(t, site, map[string]string{"nodes-r01.yaml": strings.Join(keep, "\n---\n")})

	plan, err := viewer.PlanDesign(ctx, []string{site})
	if err != nil || len(plan.Destructive) != 1 || plan.Nodes[0].Node != node || plan.Nodes[0].Action != "release" || !plan.Changed {
		t.Fatalf("plan: %+v %v", plan, err)
	}
	for _, approve := range []string{"", strings.Repeat("f", 64)} {
		_, err = op.ApplyDesignWith(ctx, []string{site}, client.ApplyOptions{Approve: approve})
		var pe *client.ProblemError
		if !errors.As(err, &pe) || pe.Status != http.StatusConflict || pe.Approve != plan.Approve || len(plan.Approve) != 64 || len(pe.Destructive) != 1 ||
			!strings.HasPrefix(pe.Destructive[0], "release "+node) {
			t.Fatalf("apply approving %q: %v (%+v)", approve, err, pe)
		}
	}
	res, err := op.ApplyDesignWith(ctx, []string{site}, client.ApplyOptions{Approve: plan.Approve})
	if err != nil || res.Result != "created" || res.Revision != plan.To || res.Plan == nil || res.Plan.Counts["release"] != 1 {
		t.Fatalf("approved: %+v %v", res, err)
	}
	stored, err := viewer.DesignPlan(ctx, plan.To[:12])
	if err != nil || stored.To != plan.To || stored.Nodes[0].Node != node {
		t.Fatalf("stored plan: %+v %v", stored, err)
	}
}
