package orchestrator

import (
	"context"
	"slices"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// settleUpdate ends the firmware update of a node cancelled while its BMC
// runs it: a BMC cannot stop an update, so the cancel follows it to its
// end (bounded by the stage's timeout; the machine is not reset), records
// how it ended, and frees the node's update slot then. Without it the slot
// of a cancelled node counted against the Site's maxParallel until it
// went stale (slotStale), long after the update ended, and the Site's
// other nodes waited for nothing.
func (r *nodeRun) settleUpdate(ctx context.Context) {
	defer r.e.updates.give(r.rec.Name)
	b := r.rec.Baseline
	if r.rec.Stage != record.StageBaseline || b == nil || b.Task != r.run.id {
		return
	}
	i := slices.IndexFunc(b.Updates, func(u record.FirmwareUpdate) bool { return u.Handle != "" && !u.Done })
	if i < 0 {
		return
	}
	u := &b.Updates[i]
	ts, err := r.e.oobTargets(ctx, r.d, r.n)
	if err != nil {
		return
	}
	fu, ok := ts[0].drv.(drivers.OOBFirmwareUpdate)
	if !ok {
		return
	}
	r.save(r.event("warn", "firmware", "cancelled while BMC %s:%d runs the update of %s to %s, which it cannot stop: the cancel waits for it to end; the machine is not reset",
		ts[0].bmc.Address, ts[0].bmc.Port, u.Component, u.Version))
	// Bounded as the stage is: past its timeout the update would have
	// failed the node anyway.
	deadline := r.rec.StageStart.Add(r.stageTimeout())
	for time.Now().Before(deadline) {
		st, err := r.followUpdate(ctx, ts[0], fu, u)
		if err != nil || st.kind != stepWait {
			if st.kind == stepFail {
				r.save(r.event("warn", "firmware", "%s", st.msg))
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(r.e.scaled(max(st.wait, time.Second)), r.e.cfg.MaxWait)):
		}
	}
}
