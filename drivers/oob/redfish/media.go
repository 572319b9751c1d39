package redfish

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"

	gfredfish "github.com/stmcginnis/gofish/redfish"

	"github.com/slipway-dev/slipway/drivers"
)

// InsertMedia inserts the ISO at url in the BMC's virtual CD (the
// Manager's, else the System's), ejecting another image first; Done once
// the BMC reads it back inserted, InProgress while it has not yet
// (drivers.OOBVirtualMedia). Booting from it is SetBootDevice(cd).
func (d *Driver) InsertMedia(ctx context.Context, b drivers.BMC, url string) (drivers.Result, error) {
	var res drivers.Result
	err := d.with(ctx, b, func(s session) error {
		vm, err := cdrom(s)
		if err != nil {
			return err
		}
		if vm.Inserted && vm.Image == url {
			res = drivers.Done("virtual CD %s holds %s", vm.ID, isoText(url))
			return nil
		}
		if vm.Inserted {
			if err := vm.EjectMedia(); err != nil {
				return fmt.Errorf("eject %s from the virtual CD: %w", isoText(vm.Image), err)
			}
		}
		if err := vm.InsertMedia(url, true, true); err != nil {
			return err
		}
		got, err := gfredfish.GetVirtualMedia(s.c, vm.ODataID)
		switch {
		case err != nil:
			return err
		case got.Inserted && got.Image == url:
			res = drivers.Done("virtual CD %s holds %s", vm.ID, isoText(url))
		default:
			res = drivers.InProgress(d.s.pollInterval, "the BMC accepted the image for virtual CD %s and does not show it inserted yet", vm.ID)
		}
		return nil
	})
	return res, err
}

// EjectMedia ejects the BMC's virtual CD: Done once it reads back empty.
func (d *Driver) EjectMedia(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	var res drivers.Result
	err := d.with(ctx, b, func(s session) error {
		vm, err := cdrom(s)
		if err != nil {
			return err
		}
		if vm.Inserted {
			if err := vm.EjectMedia(); err != nil {
				return err
			}
			if vm, err = gfredfish.GetVirtualMedia(s.c, vm.ODataID); err != nil {
				return err
			}
		}
		res = drivers.Done("virtual CD %s is empty", vm.ID)
		if vm.Inserted {
			res = drivers.InProgress(d.s.pollInterval, "the BMC accepted the eject and still shows virtual CD %s inserted", vm.ID)
		}
		return nil
	})
	return res, err
}

// isoText is an image URL as messages show it: scheme, host and path,
// without user info or query (a presigned URL's token), bounded.
func isoText(image string) string {
	u, err := neturl.Parse(image)
	if err != nil || u.Host == "" {
		return "the image"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return drivers.PeerText(u.String())
}

// cdrom is the BMC's virtual medium for a CD or DVD: the Manager's first
// (where the standard puts it, and sushy, Ironic and Metal3 look), else
// the System's (as older BMCs and DMTF's mockup have it).
func cdrom(s session) (*gfredfish.VirtualMedia, error) {
	var errs []error
	if ms, err := s.c.Service.Managers(); err != nil {
		errs = append(errs, err)
	} else {
		for _, m := range ms {
			media, err := m.VirtualMedia()
			if vm := cdOf(media); err == nil && vm != nil {
				return vm, nil
			}
		}
	}
	media, err := s.sys.VirtualMedia()
	if vm := cdOf(media); err == nil && vm != nil {
		return vm, nil
	}
	if err != nil && len(errs) > 0 {
		return nil, errors.Join(append(errs, err)...)
	}
	return nil, drivers.NewError(drivers.Permanent, errors.New("the BMC has no virtual CD or DVD under its Manager or its System: boot this node by PXE, or enable the BMC's virtual media (licence or setting)"))
}

// cdOf is the first medium that takes a CD or DVD.
func cdOf(media []*gfredfish.VirtualMedia) *gfredfish.VirtualMedia {
	for _, vm := range media {
		for _, t := range vm.MediaTypes {
			if t == gfredfish.CDMediaType || t == gfredfish.DVDMediaType {
				return vm
			}
		}
	}
	return nil
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
