package orchestrator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/oob/ipmi"
	"github.com/slipway-dev/slipway/internal/ipmisim"
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

// ipmiSimBootOOB is the lab's OOB driver whose boot overrides go, through
// the real IPMI driver, to an OpenIPMI ipmi_sim (which reads them back
// with the valid bit clear); power still goes to the lab's machine.
type ipmiSimBootOOB struct {
	drivers.OOB
	ipmi   *ipmi.Driver
	target drivers.BMC
	sets   atomic.Int64
}

func (o *ipmiSimBootOOB) SetBootDevice(ctx context.Context, b drivers.BMC, d drivers.BootDevice) (drivers.Result, error) {
	o.sets.Add(1)
	if _, err := o.OOB.SetBootDevice(ctx, b, d); err != nil { // the lab machine boots as told
		return drivers.Result{}, err
	}
	return o.ipmi.SetBootDevice(ctx, o.target, d)
}

// TestBootOverrideValidBitClearIPMISim: the IPMI driver against ipmi_sim
// answers Done with the valid bit read back clear; the engine records an
// event saying so, sets PXE again right before the power change (twice
// in all, counted where they reach the driver), and the node deploys;
// ipmi_sim's own state holds the PXE boot.
func TestBootOverrideValidBitClearIPMISim(t *testing.T) {
	t.Parallel()
	ipmisim.RequireOrSkip(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := ipmisim.Start(ctx, 1, ipmisim.Options{Username: "admin", Password: "engine-sim-pw-4"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("ipmisim: %v", err)
		}
	})
	sim := c.BMCs[0]
	drv, err := ipmi.NewDriver(drivers.Config{Settings: map[string]string{ipmi.SettingTimeout: "1s", ipmi.SettingRetries: "2"}})
	if err != nil {
		t.Fatal(err)
	}
	target := drivers.BMC{Node: sim.Name, Address: sim.Address, Port: sim.Port, Protocol: "lanplus", CipherSuite: 3,
		Privilege: "administrator", Username: sim.Username, Password: drivers.NewSecret(sim.Password)}
	d := designtest.Example(t)
	node := d.NodeNames()[0]
	var oob *ipmiSimBootOOB
	env := startEnv(t, d, nil, nil, func(c *orchestrator.Config) {
		oob = &ipmiSimBootOOB{OOB: c.Drivers.OOB, ipmi: drv, target: target}
		c.Drivers.OOB = oob
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
		return ev.Kind == "boot-flags" && strings.Contains(ev.Message, drivers.BootFlagsCleared) && strings.Contains(ev.Message, "right before")
	}) {
		t.Errorf("no boot-flags event says the valid bit reads back clear; events: %+v", evs)
	}
	if n := oob.sets.Load(); n != 2 {
		t.Errorf("%d boot overrides set: want 2 (PXE next, then again right before the power change)", n)
	}
	if dev, err := sim.BootDevice(); err != nil || dev != "pxe" {
		t.Errorf("ipmi_sim's boot device: %q %v, want pxe", dev, err)
	}
}
