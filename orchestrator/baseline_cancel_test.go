package orchestrator_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// lagBMC answers a firmware update's start late: the BMC has accepted the
// update (its task runs) before its answer reaches the engine, so a
// cancel in between cuts the call, as a cancel mid-request does.
type lagBMC struct {
	*fwBMC
	lag      time.Duration
	accepted chan struct{}
	once     sync.Once
}

func (l *lagBMC) StartFirmwareUpdate(ctx context.Context, b drivers.BMC, u drivers.FirmwareUpdate) (string, error) {
	h, err := l.fwBMC.StartFirmwareUpdate(ctx, b, u)
	if err != nil {
		return h, err
	}
	l.once.Do(func() { close(l.accepted) })
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-time.After(l.lag):
		return h, nil
	}
}

// TestBaselineCancelWhileTheStartAnswers: a node is cancelled after its
// BMC accepted a firmware update but before the answer came back. The
// BMC runs the update whatever the engine does, so the engine must still
// learn its handle, follow it to its end and only then free the Site's
// update slot: with maxParallel 1, the next node's update must not run
// beside it (counted by the BMC). Before, the cancel cut the call, the
// handle was lost and the slot freed at once: two updates ran at once.
func TestBaselineCancelWhileTheStartAnswers(t *testing.T) {
	t.Parallel()
	nodes := []string{"r01-cmp01", "r01-cmp02"}
	d, st, _ := baselineSite(t, nodes...)
	one := 1
	d.Site.Spec.Lifecycle.Baseline.MaxParallel = &one
	fw := newFWBMC(nil, time.Second)
	lag := &lagBMC{fwBMC: fw, lag: 300 * time.Millisecond, accepted: make(chan struct{})}
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) {
		fw.OOB = c.Drivers.OOB
		c.Drivers.OOB = lag
		c.Firmware = st
	})
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	task, err := e.Submit(ctx, record.Request{Action: record.ActionPrepareNodes, Filter: only(nodes[0]), Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-lag.accepted:
	case <-ctx.Done():
		t.Fatal("no firmware update started")
	}
	if _, err := e.TaskVerb(ctx, task.ID, record.VerbCancel, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Wait(ctx, task.ID); err != nil {
		t.Fatal(err)
	}
	run(t, e, record.Request{Action: record.ActionPrepareNodes, Filter: only(nodes[1]), Requester: "test"}, record.TaskSucceeded)
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.maxRunning != 1 || fw.busyStarts != 0 {
		t.Errorf("%d updates ran at once by the BMCs' count (want 1: maxParallel), %d starts on a busy BMC", fw.maxRunning, fw.busyStarts)
	}
}
