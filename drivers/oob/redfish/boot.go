package redfish

import (
	"context"
	"fmt"

	gfredfish "github.com/stmcginnis/gofish/redfish"

	"github.com/slipway-dev/slipway/drivers"
)

// targets maps the engine's boot devices to Redfish override targets.
var targets = map[string]gfredfish.BootSourceOverrideTarget{
	"pxe": gfredfish.PxeBootSourceOverrideTarget, "disk": gfredfish.HddBootSourceOverrideTarget,
	"cdrom": gfredfish.CdBootSourceOverrideTarget, drivers.BootCD: gfredfish.CdBootSourceOverrideTarget, // the virtual CD (InsertMedia)
	"bios": gfredfish.BiosSetupBootSourceOverrideTarget,
	"http": gfredfish.UefiHTTPBootSourceOverrideTarget, "none": gfredfish.NoneBootSourceOverrideTarget,
}

// SetBootDevice sets the boot override (Once, or Continuous when
// persistent; UEFI or Legacy) and reads it back: a BMC that answers
// success and keeps another setting fails the call, naming the field.
func (d *Driver) SetBootDevice(ctx context.Context, b drivers.BMC, dev drivers.BootDevice) (drivers.Result, error) {
	target, ok := targets[dev.Device]
	if !ok {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "redfish: boot device %q is not one of pxe, disk, cd, cdrom, bios, http, none", dev.Device)
	}
	want := gfredfish.Boot{BootSourceOverrideTarget: target, BootSourceOverrideEnabled: gfredfish.OnceBootSourceOverrideEnabled,
		BootSourceOverrideMode: gfredfish.LegacyBootSourceOverrideMode}
	if dev.Persistent {
		want.BootSourceOverrideEnabled = gfredfish.ContinuousBootSourceOverrideEnabled
	}
	if dev.EFI {
		want.BootSourceOverrideMode = gfredfish.UEFIBootSourceOverrideMode
	}
	if target == gfredfish.NoneBootSourceOverrideTarget {
		want.BootSourceOverrideEnabled, want.BootSourceOverrideMode = gfredfish.DisabledBootSourceOverrideEnabled, ""
	}
	var res drivers.Result
	err := d.with(ctx, b, func(s session) error {
		if err := s.sys.SetBoot(want); err != nil {
			return err
		}
		got, err := gfredfish.GetComputerSystem(s.c, s.sys.ODataID)
		if err != nil {
			return err
		}
		if field, ok := bootDiffers(want, got.Boot); ok {
			return drivers.NewError(drivers.Transient, fmt.Errorf("the BMC accepted the boot override %s but reads back %s: %w",
				target, field, drivers.ErrBootNotKept))
		}
		res = drivers.Done("next boot from %s (%s, %s)", target, want.BootSourceOverrideEnabled, orLegacy(want.BootSourceOverrideMode))
		return nil
	})
	return res, err
}

// bootDiffers names the first field of the override the BMC did not
// take (a Once override of "none" reads back Disabled, whatever mode).
func bootDiffers(want, got gfredfish.Boot) (string, bool) {
	switch {
	case got.BootSourceOverrideTarget != want.BootSourceOverrideTarget && !(want.BootSourceOverrideTarget == gfredfish.NoneBootSourceOverrideTarget && got.BootSourceOverrideEnabled == gfredfish.DisabledBootSourceOverrideEnabled):
		return "BootSourceOverrideTarget " + string(got.BootSourceOverrideTarget), true
	case got.BootSourceOverrideEnabled != want.BootSourceOverrideEnabled:
		return "BootSourceOverrideEnabled " + string(got.BootSourceOverrideEnabled), true
	case want.BootSourceOverrideMode != "" && got.BootSourceOverrideMode != "" && got.BootSourceOverrideMode != want.BootSourceOverrideMode:
		return "BootSourceOverrideMode " + string(got.BootSourceOverrideMode), true
	}
	return "", false
}

func orLegacy(m gfredfish.BootSourceOverrideMode) string {
	if m == "" {
		return "no mode"
	}
	return string(m)
}
