package redfish

import (
	"context"
	"errors"
	"strings"

	gfredfish "github.com/stmcginnis/gofish/redfish"

	"github.com/slipway-dev/slipway/drivers"
)

// InsertMedia inserts the ISO at url in the system's virtual CD (its
// first medium that takes a CD or DVD), ejecting what was there. With
// boot, the next boot (once) is from it.
func (d *Driver) InsertMedia(ctx context.Context, b drivers.BMC, url string, boot bool) (drivers.Result, error) {
	err := d.with(ctx, b, func(s session) error {
		vm, err := cdrom(s)
		if err != nil {
			return err
		}
		if vm.Inserted {
			if vm.Image == url {
				return nil
			}
			if err := vm.EjectMedia(); err != nil {
				return err
			}
		}
		return vm.InsertMedia(url, true, true)
	})
	if err != nil || !boot {
		return drivers.Done("virtual media inserted"), err
	}
	return d.SetBootDevice(ctx, b, drivers.BootDevice{Device: "cdrom", EFI: true})
}

// EjectMedia ejects the system's virtual CD.
func (d *Driver) EjectMedia(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	err := d.with(ctx, b, func(s session) error {
		vm, err := cdrom(s)
		if err != nil || !vm.Inserted {
			return err
		}
		return vm.EjectMedia()
	})
	return drivers.Done("virtual media ejected"), err
}

// cdrom is the system's (else its manager's) virtual medium for a CD.
func cdrom(s session) (*gfredfish.VirtualMedia, error) {
	media, err := s.sys.VirtualMedia()
	if err != nil || len(media) == 0 {
		if ms, merr := s.c.Service.Managers(); merr == nil && len(ms) > 0 {
			media, err = ms[0].VirtualMedia()
		}
	}
	if err != nil {
		return nil, err
	}
	for _, vm := range media {
		for _, t := range vm.MediaTypes {
			if t == gfredfish.CDMediaType || t == gfredfish.DVDMediaType {
				return vm, nil
			}
		}
	}
	return nil, drivers.NewError(drivers.Permanent, errors.New("the BMC has no virtual CD or DVD"))
}

// Firmware is the BIOS and BMC firmware versions the BMC reports: its
// firmware inventory's BIOS and BMC entries, else the system's
// BiosVersion and the manager's FirmwareVersion (drivers.OOBFirmware).
func (d *Driver) Firmware(ctx context.Context, b drivers.BMC) (drivers.Firmware, error) {
	var fw drivers.Firmware
	err := d.with(ctx, b, func(s session) error {
		fw.BIOSVersion = s.sys.BIOSVersion
		if ms, err := s.c.Service.Managers(); err == nil && len(ms) > 0 {
			fw.BMCVersion = ms[0].FirmwareVersion
		}
		us, err := s.c.Service.UpdateService()
		if err != nil {
			return nil //nolint:nilerr // no update service: the system's and manager's versions stand
		}
		inv, _ := us.FirmwareInventories()
		for _, f := range inv {
			switch up := strings.ToUpper(f.ID + " " + f.Name); {
			case strings.Contains(up, "BIOS") && f.Version != "":
				fw.BIOSVersion = f.Version
			case strings.Contains(up, "BMC") && f.Version != "":
				fw.BMCVersion = f.Version
			}
		}
		return nil
	})
	return fw, err
}
