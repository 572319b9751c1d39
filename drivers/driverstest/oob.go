package driverstest

import (
	"context"
	"fmt"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

// WrongPassword is the password of the WrongPassword check: distinctive,
// so that a message revealing it is told from one saying "wrong password".
// It starts with "wrong", which the fake BMCs refuse.
const WrongPassword = "wrong-conformance-7f3c9a"

// RunOOB runs the OOB conformance suite. open returns a driver and a BMC
// it reaches with good credentials; it is called once per subtest. The
// BMC's password should be distinctive (4 characters or more): the suite
// fails any message that contains it. The suite powers the machine on,
// cycles it and leaves it off.
//
// Subtests: Probe, PowerSequence, Idempotent, WrongPassword, Concurrent,
// CancelledContext, ExpiredDeadline, CancelDuringCall.
func RunOOB(t *testing.T, open func(t *testing.T) (drivers.OOB, drivers.BMC)) {
	t.Helper()
	runOOB(realT{t}, func(h tb) (drivers.OOB, drivers.BMC) { return open(testingT(h)) })
}

func runOOB(h tb, open func(tb) (drivers.OOB, drivers.BMC)) {
	h.Run("Probe", func(h tb) { oobProbe(h, open) })
	h.Run("PowerSequence", func(h tb) { oobPowerSequence(h, open) })
	h.Run("Idempotent", func(h tb) { oobIdempotent(h, open) })
	h.Run("WrongPassword", func(h tb) { oobWrongPassword(h, open) })
	h.Run("Concurrent", func(h tb) { oobConcurrent(h, open) })
	runContextChecks(h, func(h tb) ([]ctxCall, []string) {
		d, bmc := open(h)
		return oobCtxCalls(d, bmc), []string{bmc.Password.Reveal()}
	})
}

// oobProbe: the driver reaches and authorizes with good credentials.
func oobProbe(h tb, open func(tb) (drivers.OOB, drivers.BMC)) {
	d, bmc := open(h)
	c := newChecker(h, bmc.Password.Reveal())
	ctx, cancel := ctxFor()
	defer cancel()
	info, err := d.Probe(ctx, bmc)
	c.checkErr("Probe", err)
	if err != nil {
		h.Fatalf("Probe: %v", err)
	}
	if !info.Reachable || !info.Authorized {
		h.Errorf("Probe: %+v, want reachable and authorized", info)
	}
	c.noLeak("Probe", fmt.Sprintf("%+v", info))
}

// oobPowerSequence: the driver takes the machine through boot device, on,
// cycle and off.
func oobPowerSequence(h tb, open func(tb) (drivers.OOB, drivers.BMC)) {
	d, bmc := open(h)
	c := newChecker(h, bmc.Password.Reveal())
	c.mustPoll("SetBootDevice(pxe)", func(ctx context.Context) (drivers.Result, error) {
		return d.SetBootDevice(ctx, bmc, drivers.BootDevice{Device: "pxe"})
	})
	c.mustPoll("PowerOn", func(ctx context.Context) (drivers.Result, error) { return d.PowerOn(ctx, bmc) })
	c.wantPower(d, bmc, drivers.PowerOn, "after PowerOn")
	c.mustPoll("PowerCycle", func(ctx context.Context) (drivers.Result, error) { return d.PowerCycle(ctx, bmc) })
	c.wantPower(d, bmc, drivers.PowerOn, "after PowerCycle")
	c.mustPoll("PowerOff", func(ctx context.Context) (drivers.Result, error) { return d.PowerOff(ctx, bmc) })
	c.wantPower(d, bmc, drivers.PowerOff, "after PowerOff")
	c.mustPoll("SetBootDevice(disk)", func(ctx context.Context) (drivers.Result, error) {
		return d.SetBootDevice(ctx, bmc, drivers.BootDevice{Device: "disk", Persistent: true})
	})
}

// oobIdempotent: the driver answers Done when asked again.
func oobIdempotent(h tb, open func(tb) (drivers.OOB, drivers.BMC)) {
	d, bmc := open(h)
	c := newChecker(h, bmc.Password.Reveal())
	on := func(ctx context.Context) (drivers.Result, error) { return d.PowerOn(ctx, bmc) }
	off := func(ctx context.Context) (drivers.Result, error) { return d.PowerOff(ctx, bmc) }
	pxe := func(ctx context.Context) (drivers.Result, error) {
		return d.SetBootDevice(ctx, bmc, drivers.BootDevice{Device: "pxe"})
	}
	c.mustPoll("PowerOn", on)
	c.done("PowerOn after Done", on)
	c.mustPoll("SetBootDevice(pxe)", pxe)
	c.done("SetBootDevice(pxe) after Done", pxe)
	c.mustPoll("PowerOff", off)
	c.done("PowerOff after Done", off)
	c.wantPower(d, bmc, drivers.PowerOff, "after PowerOff twice")
}

// oobWrongPassword: the driver refuses every call with a wrong password
// without showing it.
func oobWrongPassword(h tb, open func(tb) (drivers.OOB, drivers.BMC)) {
	d, bmc := open(h)
	bad := bmc
	bad.Password = drivers.NewSecret(WrongPassword)
	c := newChecker(h, bmc.Password.Reveal(), WrongPassword)
	ctx, cancel := ctxFor()
	defer cancel()
	info, err := d.Probe(ctx, bad)
	if err == nil && info.Authorized {
		h.Errorf("Probe with a wrong password: %+v, want unauthorized or an error", info)
	}
	c.checkErr("Probe with a wrong password", err)
	c.noLeak("Probe with a wrong password", fmt.Sprintf("%+v", info))
	p, err := d.PowerStatus(ctx, bad)
	if err == nil {
		h.Errorf("PowerStatus with a wrong password: %q and no error", p)
	}
	c.checkErr("PowerStatus with a wrong password", err)
	for _, m := range []struct {
		name string
		call func() (drivers.Result, error)
	}{
		{"PowerOn", func() (drivers.Result, error) { return d.PowerOn(ctx, bad) }},
		{"PowerOff", func() (drivers.Result, error) { return d.PowerOff(ctx, bad) }},
		{"PowerCycle", func() (drivers.Result, error) { return d.PowerCycle(ctx, bad) }},
		{"SetBootDevice", func() (drivers.Result, error) {
			return d.SetBootDevice(ctx, bad, drivers.BootDevice{Device: "pxe"})
		}},
	} {
		r, err := m.call()
		c.fails(m.name+" with a wrong password", r, err)
	}
}

// oobConcurrent: the driver serves concurrent calls on one BMC.
func oobConcurrent(h tb, open func(tb) (drivers.OOB, drivers.BMC)) {
	d, bmc := open(h)
	c := newChecker(h, bmc.Password.Reveal())
	concurrently(concurrency, func(int) {
		ctx, cancel := ctxFor()
		defer cancel()
		info, err := d.Probe(ctx, bmc)
		if !c.checkErr("concurrent Probe", err) || err != nil || !info.Authorized {
			h.Errorf("concurrent Probe: %+v, %v", info, err)
		}
		p, err := d.PowerStatus(ctx, bmc)
		c.checkErr("concurrent PowerStatus", err)
		if err != nil || (p != drivers.PowerOn && p != drivers.PowerOff && p != drivers.PowerUnknown) {
			h.Errorf("concurrent PowerStatus: %q, %v", p, err)
		}
		c.poll("concurrent SetBootDevice(pxe)", func(ctx context.Context) (drivers.Result, error) {
			return d.SetBootDevice(ctx, bmc, drivers.BootDevice{Device: "pxe"})
		})
		c.poll("concurrent PowerOn", func(ctx context.Context) (drivers.Result, error) { return d.PowerOn(ctx, bmc) })
	})
	c.wantPower(d, bmc, drivers.PowerOn, "after concurrent PowerOn")
	c.mustPoll("PowerOff", func(ctx context.Context) (drivers.Result, error) { return d.PowerOff(ctx, bmc) })
}

// oobCtxCalls are the calls of the context checks.
func oobCtxCalls(d drivers.OOB, bmc drivers.BMC) []ctxCall {
	pxe := drivers.BootDevice{Device: "pxe"}
	return []ctxCall{
		{name: "Probe", readOnly: true, call: func(ctx context.Context) (drivers.Result, error) {
			_, err := d.Probe(ctx, bmc)
			return noResult(err)
		}},
		{name: "PowerStatus", readOnly: true, call: func(ctx context.Context) (drivers.Result, error) {
			_, err := d.PowerStatus(ctx, bmc)
			return noResult(err)
		}},
		{name: "PowerOn", call: func(ctx context.Context) (drivers.Result, error) { return d.PowerOn(ctx, bmc) }},
		{name: "PowerOff", call: func(ctx context.Context) (drivers.Result, error) { return d.PowerOff(ctx, bmc) }},
		{name: "PowerCycle", call: func(ctx context.Context) (drivers.Result, error) { return d.PowerCycle(ctx, bmc) }},
		{name: "SetBootDevice", call: func(ctx context.Context) (drivers.Result, error) { return d.SetBootDevice(ctx, bmc, pxe) }},
	}
}

// wantPower checks the BMC's power state.
func (c *checker) wantPower(d drivers.OOB, bmc drivers.BMC, want drivers.PowerState, when string) {
	c.h.Helper()
	ctx, cancel := ctxFor()
	defer cancel()
	p, err := d.PowerStatus(ctx, bmc)
	c.checkErr("PowerStatus "+when, err)
	if err != nil || p != want {
		c.h.Fatalf("PowerStatus %s: %q, %v; want %q", when, p, err, want)
	}
}
