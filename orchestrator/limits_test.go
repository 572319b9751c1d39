package orchestrator_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// countingOOB counts the OOB calls in flight; each probe takes 20 ms.
type countingOOB struct {
	drivers.OOB
	mu        sync.Mutex
	now, peak int
}

func (c *countingOOB) Probe(ctx context.Context, b drivers.BMC) (drivers.BMCInfo, error) {
	c.mu.Lock()
	c.now++
	c.peak = max(c.peak, c.now)
	c.mu.Unlock()
	defer func() { c.mu.Lock(); c.now--; c.mu.Unlock() }()
	time.Sleep(20 * time.Millisecond)
	return c.OOB.Probe(ctx, b)
}

// TestOOBLimit: BMC calls in flight never exceed Limits.OOB, and reach it
// (the limit is what bounds them, not something else).
func TestOOBLimit(t *testing.T) {
	t.Parallel()
	var oob *countingOOB
	env := startEnv(t, designtest.Example(t), nil, nil, func(c *orchestrator.Config) {
		oob = &countingOOB{OOB: c.Drivers.OOB}
		c.Drivers.OOB = oob
		c.Limits.OOB = 2
	})
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionVerifyNodes, Requester: "test"}, record.TaskSucceeded)
	if oob.peak != 2 {
		t.Errorf("%d BMC calls in flight at most, want the limit, 2", oob.peak)
	}
}
