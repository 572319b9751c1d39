package fake

import (
	"context"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// WrongPasswordPrefix marks a password the fake BMCs reject: any password
// that starts with it ("wrong", "wrong-1", ...). Every other password is
// accepted.
const WrongPasswordPrefix = "wrong"

// OOB is a fake OOB driver. It keeps, per BMC address, the power state
// (initially off) and the boot device.
type OOB struct {
	core
	bmcs map[string]*bmcState
}

type bmcState struct {
	power   drivers.PowerState
	boot    drivers.BootDevice
	cycling bool // a PowerCycle is under way
	polls   int  // InProgress answers given for the cycle under way
}

var _ drivers.OOB = (*OOB)(nil)

// NewOOB returns a fake OOB driver following s.
func NewOOB(s Script) *OOB {
	return &OOB{core: core{script: s}, bmcs: map[string]*bmcState{}}
}

// Power returns the power state of the BMC at address (off if never used).
func (f *OOB) Power(address string) drivers.PowerState {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b := f.bmcs[address]; b != nil {
		return b.power
	}
	return drivers.PowerOff
}

// BootDevice returns the boot device last set on the BMC at address.
func (f *OOB) BootDevice(address string) drivers.BootDevice {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b := f.bmcs[address]; b != nil {
		return b.boot
	}
	return drivers.BootDevice{}
}

// bmc checks the address and credentials and returns the BMC's state.
// Called with f.mu held. Messages never include the password.
func (f *OOB) bmc(bmc drivers.BMC) (*bmcState, error) {
	if bmc.Address == "" {
		return nil, drivers.Errorf(drivers.Permanent, "fake: the BMC of node %q has no address", bmc.Node)
	}
	if strings.HasPrefix(bmc.Password.Reveal(), WrongPasswordPrefix) {
		return nil, drivers.Errorf(drivers.Permanent, "fake: BMC %s refused the credentials of user %q", bmc.Address, bmc.Username)
	}
	b := f.bmcs[bmc.Address]
	if b == nil {
		b = &bmcState{power: drivers.PowerOff}
		f.bmcs[bmc.Address] = b
	}
	return b, nil
}

// Probe reports the BMC reachable and, unless the password is a wrong one,
// authorized.
func (f *OOB) Probe(ctx context.Context, bmc drivers.BMC) (drivers.BMCInfo, error) {
	if _, stop, err := f.begin(ctx, "Probe", bmc.Node, false); stop {
		return drivers.BMCInfo{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.bmc(bmc); err != nil {
		if bmc.Address == "" {
			return drivers.BMCInfo{}, err
		}
		return drivers.BMCInfo{Reachable: true, Vendor: "fake", Description: "fake BMC " + bmc.Address}, err
	}
	return drivers.BMCInfo{Reachable: true, Authorized: true, Vendor: "fake", Firmware: "1.0",
		GUID: "fake-" + bmc.Address, Description: "fake BMC " + bmc.Address}, nil
}

// PowerStatus returns the BMC's power state.
func (f *OOB) PowerStatus(ctx context.Context, bmc drivers.BMC) (drivers.PowerState, error) {
	if _, stop, err := f.begin(ctx, "PowerStatus", bmc.Node, false); stop {
		return drivers.PowerUnknown, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.bmc(bmc)
	if err != nil {
		return drivers.PowerUnknown, err
	}
	return b.power, nil
}

// PowerOn turns the machine on; Done "already on" if it is.
func (f *OOB) PowerOn(ctx context.Context, bmc drivers.BMC) (drivers.Result, error) {
	return f.setPower(ctx, "PowerOn", bmc, drivers.PowerOn)
}

// PowerOff turns the machine off; Done "already off" if it is.
func (f *OOB) PowerOff(ctx context.Context, bmc drivers.BMC) (drivers.Result, error) {
	return f.setPower(ctx, "PowerOff", bmc, drivers.PowerOff)
}

func (f *OOB) setPower(ctx context.Context, method string, bmc drivers.BMC, want drivers.PowerState) (drivers.Result, error) {
	if r, stop, err := f.begin(ctx, method, bmc.Node, true); stop {
		return r, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.bmc(bmc)
	if err != nil {
		return drivers.Result{}, err
	}
	if b.power == want && !b.cycling {
		return drivers.Done("fake: %s already %s", bmc.Address, want), nil
	}
	b.power, b.cycling, b.polls = want, false, 0
	return drivers.Done("fake: powered %s %s", bmc.Address, want), nil
}

// PowerCycle turns the machine off and on: off and InProgress for
// Script.Polls calls, then on and Done.
func (f *OOB) PowerCycle(ctx context.Context, bmc drivers.BMC) (drivers.Result, error) {
	if r, stop, err := f.begin(ctx, "PowerCycle", bmc.Node, true); stop {
		return r, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.bmc(bmc)
	if err != nil {
		return drivers.Result{}, err
	}
	if !b.cycling {
		b.cycling, b.polls, b.power = true, 0, drivers.PowerOff
	}
	if b.polls < f.script.Polls {
		b.polls++
		return drivers.InProgress(RetryAfter, "fake: power cycling %s (%d/%d)", bmc.Address, b.polls, f.script.Polls), nil
	}
	b.cycling, b.polls, b.power = false, 0, drivers.PowerOn
	return drivers.Done("fake: power cycled %s", bmc.Address), nil
}

// SetBootDevice sets the next boot device: pxe or disk.
func (f *OOB) SetBootDevice(ctx context.Context, bmc drivers.BMC, dev drivers.BootDevice) (drivers.Result, error) {
	if r, stop, err := f.begin(ctx, "SetBootDevice", bmc.Node, true); stop {
		return r, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.bmc(bmc)
	if err != nil {
		return drivers.Result{}, err
	}
	if dev.Device != "pxe" && dev.Device != "disk" {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "fake: BMC %s: unsupported boot device %q (pxe or disk)", bmc.Address, dev.Device)
	}
	if b.boot == dev {
		return drivers.Done("fake: %s already boots from %s", bmc.Address, dev.Device), nil
	}
	b.boot = dev
	return drivers.Done("fake: %s boots from %s next", bmc.Address, dev.Device), nil
}
