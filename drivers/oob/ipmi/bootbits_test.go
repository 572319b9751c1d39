package ipmi

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/bmc"
)

// legacyChassis keeps the device and the valid bit but drops the EFI bit of
// every override it is given, as a BMC that would boot the machine legacy;
// it counts the overrides set (the lab's own count, not the driver's).
type legacyChassis struct {
	*chassis
	sets *atomic.Int32
}

func (c legacyChassis) SetBootDevice(dev string, persistent, _ bool) {
	c.sets.Add(1)
	c.chassis.SetBootDevice(dev, persistent, false)
}

// TestWrongBootBitsFailSimBMC: an override read back valid, with the right
// device but without the EFI bit asked for, is a wrong override (the
// machine would boot legacy), not a cleared one: the driver sets it once
// more, then fails with ErrBootNotKept naming the bits, never Done saying
// the valid bit reads back clear.
func TestWrongBootBitsFailSimBMC(t *testing.T) {
	sets := &atomic.Int32{}
	ch := legacyChassis{newChassis(), sets}
	b, err := bmc.Start(context.Background(), ch, bmc.Options{Addr: "127.0.0.1:0", Username: simUser, Password: simPassword})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	d := newTestDriver(t, nil)
	for _, proto := range []string{"lanplus", "lan"} {
		sets.Store(0)
		res, err := d.SetBootDevice(ctxT(t, 10*time.Second), simTarget(b, proto, 3), drivers.BootDevice{Device: "pxe", EFI: true})
		if !errors.Is(err, drivers.ErrBootNotKept) || drivers.Classify(err) != drivers.Transient ||
			!strings.Contains(err.Error(), "reads back boot flags 8004") || !strings.Contains(err.Error(), "EFI bit clear") {
			t.Errorf("%s: %+v %v, want ErrBootNotKept naming the flags read back and the EFI bit", proto, res, err)
		}
		if err != nil && strings.Contains(err.Error(), drivers.BootFlagsCleared) {
			t.Errorf("%s: %v says the valid bit reads back clear; it reads back set", proto, err)
		}
		if n := sets.Load(); n != 2 {
			t.Errorf("%s: the BMC was given %d overrides, want 2 (once more after the wrong read-back)", proto, n)
		}
	}
}
