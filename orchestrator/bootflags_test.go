package orchestrator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// forgetfulOOB is the lab's OOB driver on a BMC that acts on a boot
// override but reads back none, as OpenIPMI's ipmi_sim does: the real
// driver sets it, then the read-back says it was not kept.
type forgetfulOOB struct {
	drivers.OOB
	sets atomic.Int64
}

func (f *forgetfulOOB) SetBootDevice(ctx context.Context, b drivers.BMC, d drivers.BootDevice) (drivers.Result, error) {
	f.sets.Add(1)
	if _, err := f.OOB.SetBootDevice(ctx, b, d); err != nil {
		return drivers.Result{}, err
	}
	return drivers.Result{}, drivers.NewError(drivers.Transient, fmt.Errorf("reads back boot flags 0004000000: %w", drivers.ErrBootNotKept))
}

// TestBootOverrideNotKept: a BMC that does not keep the boot override is
// tried twice, said so in a warning event, and the node still deploys,
// with a one-time PXE boot set right before its power change.
func TestBootOverrideNotKept(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	node := d.NodeNames()[0]
	var drv *forgetfulOOB
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) {
		drv = &forgetfulOOB{OOB: c.Drivers.OOB}
		c.Drivers.OOB = drv
	})
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	task, _ := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test",
		Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{node}}}}}, record.TaskSucceeded)
	evs, err := e.Events(t.Context(), 0, 0, task.ID, node)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(ev record.Event) bool {
		return ev.Kind == "boot-flags" && ev.Level == "warn" && strings.Contains(ev.Message, "0004000000")
	}) {
		t.Error("no warning event says the BMC does not keep the boot override")
	}
	if n := drv.sets.Load(); n != 3 {
		t.Errorf("%d boot overrides set: want 2 (the second try) and 1 right before the power change", n)
	}
	rec, err := e.Node(t.Context(), node)
	if err != nil || !rec.PXEBeforePower {
		t.Errorf("record %+v %v: want PXEBeforePower", rec, err)
	}
}
