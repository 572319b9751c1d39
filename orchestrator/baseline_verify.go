package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// needsReset reports whether anything applied waits for a system reset:
// an update of a component other than the BMC (which resets itself),
// staged BIOS settings, a volume built.
func needsReset(b *record.Baseline) bool {
	for _, u := range b.Updates {
		if u.Component != drivers.ComponentBMC {
			return true
		}
	}
	return b.Staged || len(b.Volumes) > 0
}

// baselineReset is step 4: one power cycle (a power-on when the machine
// is off); every update has ended by then (step 1 finished them all). The
// reset is recorded as asked before the BMC is asked, so it is asked at
// most once: a serve killed right after it does not cycle the machine
// again on its restart, in the boot that may be flashing the staged
// firmware. A machine still off baselineVerifyWait after it was asked is
// powered on (a serve killed before its power-on reached the BMC).
func (r *nodeRun) baselineReset(ctx context.Context) (step, error) {
	b := r.rec.Baseline
	if !needsReset(b) {
		return sub("no reset needed"), nil
	}
	state, err := r.baselinePower(ctx, nil)
	if st, ok := r.bmcResetting(err); ok {
		return st, nil
	}
	if err != nil {
		return step{}, err
	}
	switch {
	case b.ResetDone && state == drivers.PowerOn:
		return sub("reset: the machine restarted to apply its baseline"), nil
	case b.ResetDone && time.Since(b.ResetAt) < r.e.scaled(baselineVerifyWait):
		// Off during the cycle, or while the BMC flashes the system
		// firmware with the host off: waited for, not powered on.
		return waitFor(drivers.InProgress(time.Second, "reset: power is %s, waiting for on", state), false), nil
	}
	if !b.ResetDone {
		b.ResetAt, b.ResetDone = now(), true
		if err := r.saveErr("intent: reset the machine to apply its baseline (power %s; asked once, never again after a restart)", state); err != nil {
			return step{}, err
		}
	}
	var res drivers.Result
	_, err = r.baselinePower(ctx, func(ctx context.Context, oob drivers.OOB, bmc drivers.BMC) (err error) {
		if state == drivers.PowerOn {
			res, err = oob.PowerCycle(ctx, bmc)
		} else {
			res, err = oob.PowerOn(ctx, bmc)
		}
		return err
	})
	if st, ok := r.bmcResetting(err); ok {
		return st, nil
	}
	if err != nil {
		return step{}, err
	}
	return r.result(res, false, func() step { return sub("reset: the machine restarted to apply its baseline") })
}

// baselinePower reads the machine's power through its BMC, or runs act
// there when it is given.
func (r *nodeRun) baselinePower(ctx context.Context, act func(context.Context, drivers.OOB, drivers.BMC) error) (drivers.PowerState, error) {
	var state drivers.PowerState
	_, err := r.withOOB(ctx, func(ctx context.Context, oob drivers.OOB, bmc drivers.BMC) (err error) {
		if act != nil {
			return act(ctx, oob, bmc)
		}
		state, err = oob.PowerStatus(ctx, bmc)
		return err
	})
	return state, err
}

// baselineVerify is step 5: what was applied is read back. A BMC that
// does not answer, or reports the old values, right after the reset is
// waited for, up to baselineVerifyWait; then the node fails naming what
// did not take.
func (r *nodeRun) baselineVerify(ctx context.Context) (step, error) {
	b := r.rec.Baseline
	since := b.ResetAt
	for _, u := range b.Updates {
		since = later(since, u.Seen)
	}
	s, _, err := r.readBaseline(ctx)
	wait := time.Since(since) < r.e.scaled(baselineVerifyWait)
	if err != nil {
		if drivers.Classify(err) == drivers.Transient && wait {
			return waitFor(drivers.InProgress(2*time.Second, "verify: the BMC does not answer yet (%v)", err), false), nil
		}
		return step{}, err
	}
	missing := r.notTaken(s)
	if len(missing) > 0 {
		if wait {
			return waitFor(drivers.InProgress(2*time.Second, "verify: waiting for %s", strings.Join(missing, "; ")), false), nil
		}
		return failed("baseline not in effect after the reset: %s; the machine boots as it is; look at the BMC's logs, then `orchestrator retry %s`", strings.Join(missing, "; "), r.run.id), nil
	}
	b.Verified = now()
	return advance("baseline applied and verified after the reset: %s", b.Summary()), nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// notTaken lists what the BMC reports other than the plan wanted.
func (r *nodeRun) notTaken(s seen) []string {
	b := r.rec.Baseline
	var out []string
	for _, u := range b.Updates {
		for _, id := range u.Targets {
			for _, c := range s.inventory {
				if c.ID == id && c.Version != u.Version {
					out = append(out, fmt.Sprintf("firmware %s item %s reports version %s, want %s", u.Component, id, c.Version, u.Version))
				}
			}
		}
	}
	for k, want := range b.BIOS {
		if have := s.bios[k]; have != want {
			out = append(out, fmt.Sprintf("BIOS %s is %q, want %q (still pending?)", k, have, want))
		}
	}
	for _, vb := range b.Volumes {
		for _, v := range r.n.Spec.Hardware.RAID.Volumes {
			if v.Name != vb.Name {
				continue
			}
			want, err := r.wantVolume(v)
			if found, _ := matchVolume(want, s.volumes); err != nil || !found {
				out = append(out, fmt.Sprintf("RAID volume %s is absent", v.Name))
			}
		}
	}
	return out
}

// bmcResetting turns err into a wait when it is a BMC that does not
// answer while it may still reset itself after its own firmware update (a
// BMC update done less than baselineVerifyWait ago): the stage waits for
// it instead of spending its retries.
func (r *nodeRun) bmcResetting(err error) (step, bool) {
	b := r.rec.Baseline
	if err == nil || b == nil || drivers.Classify(err) != drivers.Transient {
		return step{}, false
	}
	for _, u := range b.Updates {
		if u.Component == drivers.ComponentBMC && u.Done && time.Since(u.Seen) < r.e.scaled(baselineVerifyWait) {
			return waitFor(drivers.InProgress(2*time.Second, "the BMC does not answer after its own update (it resets): waiting (%v)", err), false), true
		}
	}
	return step{}, false
}
