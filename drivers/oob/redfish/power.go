package redfish

import (
	"context"
	"slices"
	"strings"
	"time"

	gfredfish "github.com/stmcginnis/gofish/redfish"

	"github.com/slipway-dev/slipway/drivers"
)

// Probe logs in and reads the system and its BMC. A BMC that does not
// answer is not Reachable; one that refuses the credentials is reachable
// and not Authorized (neither is an error).
func (d *Driver) Probe(ctx context.Context, b drivers.BMC) (drivers.BMCInfo, error) {
	var info drivers.BMCInfo
	err := d.with(ctx, b, func(s session) error {
		info = drivers.BMCInfo{Reachable: true, Authorized: true, Vendor: s.sys.Manufacturer, GUID: s.sys.UUID,
			Description: describe(s.sys)}
		if ms, err := s.c.Service.Managers(); err == nil && len(ms) > 0 {
			info.Firmware = ms[0].FirmwareVersion
		}
		return nil
	})
	switch drivers.Classify(err) {
	case "":
		return info, nil
	case drivers.Transient:
		if ctx.Err() != nil {
			return drivers.BMCInfo{}, err
		}
		return drivers.BMCInfo{Description: err.Error()}, nil
	}
	if ctx.Err() == nil && isCredentials(err) {
		return drivers.BMCInfo{Reachable: true, Description: err.Error()}, nil
	}
	return drivers.BMCInfo{}, err
}

func describe(s *gfredfish.ComputerSystem) string {
	out := "redfish system " + s.ID
	if s.Model != "" {
		out += ", model " + s.Model
	}
	if s.SerialNumber != "" {
		out += ", serial " + s.SerialNumber
	}
	return out
}

// PowerStatus reads the system's power state.
func (d *Driver) PowerStatus(ctx context.Context, b drivers.BMC) (drivers.PowerState, error) {
	var p drivers.PowerState
	err := d.with(ctx, b, func(s session) error {
		p = powerOf(s.sys.PowerState)
		return nil
	})
	return p, err
}

func powerOf(p gfredfish.PowerState) drivers.PowerState {
	switch p {
	case gfredfish.OnPowerState, gfredfish.PoweringOffPowerState:
		return drivers.PowerOn
	case gfredfish.OffPowerState, gfredfish.PoweringOnPowerState:
		return drivers.PowerOff
	}
	return drivers.PowerUnknown
}

// PowerOn turns the system on: Done once it reads back on.
func (d *Driver) PowerOn(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	var res drivers.Result
	err := d.with(ctx, b, func(s session) error {
		if powerOf(s.sys.PowerState) == drivers.PowerOn {
			res = drivers.Done("already on")
			return nil
		}
		if err := s.sys.Reset(pick(s.sys, gfredfish.OnResetType, gfredfish.ForceOnResetType, gfredfish.PushPowerButtonResetType)); err != nil {
			return err
		}
		res = d.confirm(ctx, s, drivers.PowerOn, "powered on")
		return nil
	})
	return res, err
}

// PowerOff shuts the system down gracefully, and forces it off when it
// is still on after gracefulWait (or when the system offers no graceful
// shutdown).
func (d *Driver) PowerOff(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	var res drivers.Result
	err := d.with(ctx, b, func(s session) error {
		if powerOf(s.sys.PowerState) == drivers.PowerOff {
			res = drivers.Done("already off")
			return nil
		}
		if allows(s.sys, gfredfish.GracefulShutdownResetType) {
			if err := s.sys.Reset(gfredfish.GracefulShutdownResetType); err != nil {
				return err
			}
			if d.waitPower(ctx, s, drivers.PowerOff, d.s.gracefulWait) {
				res = drivers.Done("shut down gracefully")
				return nil
			}
		}
		if err := s.sys.Reset(pick(s.sys, gfredfish.ForceOffResetType, gfredfish.PushPowerButtonResetType)); err != nil {
			return err
		}
		res = d.confirm(ctx, s, drivers.PowerOff, "forced off (no graceful shutdown in time)")
		return nil
	})
	return res, err
}

// PowerCycle restarts the system hard (ForceRestart, else PowerCycle,
// else off then on), or turns it on when it is off.
func (d *Driver) PowerCycle(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	var res drivers.Result
	err := d.with(ctx, b, func(s session) error {
		if powerOf(s.sys.PowerState) == drivers.PowerOff {
			if err := s.sys.Reset(pick(s.sys, gfredfish.OnResetType, gfredfish.ForceOnResetType)); err != nil {
				return err
			}
			res = d.confirm(ctx, s, drivers.PowerOn, "was off: powered on")
			return nil
		}
		return d.restart(ctx, s, &res)
	})
	return res, err
}

func (d *Driver) restart(ctx context.Context, s session, res *drivers.Result) error {
	for _, rt := range []gfredfish.ResetType{gfredfish.ForceRestartResetType, gfredfish.PowerCycleResetType} {
		if allows(s.sys, rt) {
			if err := s.sys.Reset(rt); err != nil {
				return err
			}
			*res = d.confirm(ctx, s, drivers.PowerOn, "restarted ("+string(rt)+")")
			return nil
		}
	}
	if err := s.sys.Reset(gfredfish.ForceOffResetType); err != nil {
		return err
	}
	if !d.waitPower(ctx, s, drivers.PowerOff, d.s.gracefulWait) {
		*res = drivers.InProgress(d.s.pollInterval, "forced off, waiting for the system to be off before powering on")
		return nil
	}
	if err := s.sys.Reset(pick(s.sys, gfredfish.OnResetType, gfredfish.ForceOnResetType)); err != nil {
		return err
	}
	*res = d.confirm(ctx, s, drivers.PowerOn, "cycled (off, then on)")
	return nil
}

// confirm reads the power state back: Done with msg when it is want,
// InProgress when not yet (the engine asks again).
func (d *Driver) confirm(ctx context.Context, s session, want drivers.PowerState, msg string) drivers.Result {
	if d.waitPower(ctx, s, want, 2*d.s.pollInterval) {
		return drivers.Done("%s", msg)
	}
	return drivers.InProgress(d.s.pollInterval, "power change requested; the system is not %s yet", want)
}

// waitPower polls the system's power state until it is want or wait has
// passed (or the context ends).
func (d *Driver) waitPower(ctx context.Context, s session, want drivers.PowerState, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-d.s.pollInterval).Before(deadline) {
		deadline = dl.Add(-d.s.pollInterval)
	}
	for {
		if sys, err := gfredfish.GetComputerSystem(s.c, s.sys.ODataID); err == nil && powerOf(sys.PowerState) == want {
			return true
		}
		if time.Now().Add(d.s.pollInterval).After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d.s.pollInterval):
		}
	}
}

// allows reports whether the system lists rt among its reset types (a
// system that lists none is taken to allow the standard ones).
func allows(sys *gfredfish.ComputerSystem, rt gfredfish.ResetType) bool {
	return len(sys.SupportedResetTypes) == 0 || slices.Contains(sys.SupportedResetTypes, rt)
}

// pick is the first of the reset types the system allows (the first
// when it allows none of them: the BMC's answer then says why).
func pick(sys *gfredfish.ComputerSystem, rts ...gfredfish.ResetType) gfredfish.ResetType {
	for _, rt := range rts {
		if allows(sys, rt) {
			return rt
		}
	}
	return rts[0]
}

// isCredentials: the error says the BMC refused the credentials.
func isCredentials(err error) bool {
	return strings.Contains(err.Error(), credentialsRefused)
}
