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
// is off), decided and saved before the BMC is asked; every update has
// ended by then (step 1 finished them all).
func (r *nodeRun) baselineReset(ctx context.Context) (step, error) {
	b := r.rec.Baseline
	if !needsReset(b) {
		return sub("no reset needed"), nil
	}
	if b.ResetAt.IsZero() {
		b.ResetAt = now()
		if err := r.saveErr("intent: reset the machine to apply its baseline"); err != nil {
			return step{}, err
		}
	}
	var res drivers.Result
	var state drivers.PowerState
	_, err := r.withOOB(ctx, func(ctx context.Context, oob drivers.OOB, bmc drivers.BMC) (err error) {
		if state, err = oob.PowerStatus(ctx, bmc); err != nil {
			return err
		}
		switch {
		case b.ResetDone && state == drivers.PowerOn:
			res = drivers.Done("powered on")
		case b.ResetDone:
			res = drivers.InProgress(time.Second, "power is %s, waiting for on", state)
		case state == drivers.PowerOn:
			res, err = oob.PowerCycle(ctx, bmc)
		default:
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
	if res.Status != drivers.StatusFailed && !b.ResetDone {
		b.ResetDone = true
		if err := r.saveErr("reset: power %s → cycle (%s)", state, orDefault(res.Message, "asked")); err != nil {
			return step{}, err
		}
	}
	return r.result(res, false, func() step { return sub("reset: the machine restarted to apply its baseline") })
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
