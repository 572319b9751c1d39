package redfish

import (
	"context"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

var _ = strings.ToUpper

// FirmwareInventory lists the firmware the BMC reports (BMC, BIOS, NICs,
// GPUs, drives) from its UpdateService (drivers.OOBFirmwareUpdate).
func (d *Driver) FirmwareInventory(ctx context.Context, b drivers.BMC) ([]drivers.FirmwareComponent, error) {
	var out []drivers.FirmwareComponent
	err := d.with(ctx, b, func(s session) error {
		us, err := s.c.Service.UpdateService()
		if err != nil {
			return err
		}
		inv, err := us.FirmwareInventories()
		for _, f := range inv {
			out = append(out, drivers.FirmwareComponent{ID: f.ID, Kind: kindOf(f.ID, f.Name), Name: f.Name, Version: f.Version, Updateable: f.Updateable})
		}
		return err
	})
	return out, err
}

// kindOf guesses a component's kind from its inventory Id and Name.
func kindOf(id, name string) string {
	switch up := strings.ToUpper(id + " " + name); {
	case strings.Contains(up, "BIOS"):
		return drivers.ComponentBIOS
	case strings.Contains(up, "BMC") || strings.Contains(up, "IDRAC") || strings.Contains(up, "ILO"):
		return drivers.ComponentBMC
	}
	return drivers.ComponentOther
}
