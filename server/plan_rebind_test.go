package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
)

type planningDriver struct{ drivers.Server }

func (planningDriver) PlanNodes(_ context.Context, nodes []drivers.Node) ([]drivers.MachinePlan, error) {
	return make([]drivers.MachinePlan, len(nodes)), nil
}

func (planningDriver) PlanSite(context.Context, drivers.SiteSpec) ([]drivers.PlannedChange, error) {
	return []drivers.PlannedChange{{Part: drivers.PartFabric, Op: "create", Object: "f"}}, nil
}

// TestRebindingPlans: the rebinding server driver plans through the
// driver there is now when it can, else answers drivers.ErrCannotPlan,
// and so does the driver of a serve with no design yet.
func TestRebindingPlans(t *testing.T) {
	ctx := t.Context()
	r := &rebinding{cur: planningDriver{fake.NewServer(fake.Script{})}, every: time.Hour, checked: time.Now()}
	if ps, err := r.PlanNodes(ctx, []drivers.Node{{}, {}}); err != nil || len(ps) != 2 {
		t.Errorf("PlanNodes through a planner: %v %v", ps, err)
	}
	if ch, err := r.PlanSite(ctx, drivers.SiteSpec{}); err != nil || len(ch) != 1 {
		t.Errorf("PlanSite through a planner: %v %v", ch, err)
	}
	r.cur = fake.NewServer(fake.Script{})
	if _, err := r.PlanNodes(ctx, nil); !errors.Is(err, drivers.ErrCannotPlan) {
		t.Errorf("PlanNodes through a driver that cannot plan: %v", err)
	}
	if _, err := r.PlanSite(ctx, drivers.SiteSpec{}); !errors.Is(err, drivers.ErrCannotPlan) {
		t.Errorf("PlanSite through a driver that cannot plan: %v", err)
	}
	if _, err := (noDesign{}).PlanNodes(ctx, nil); !errors.Is(err, drivers.ErrCannotPlan) || !strings.Contains(err.Error(), errNoDesign.Error()) {
		t.Errorf("PlanNodes with no design: %v", err)
	}
}
