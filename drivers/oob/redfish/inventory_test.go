package redfish_test

import (
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

// TestNVMeDriveFirmwareIsADrive: an NVMe drive's firmware item that
// belongs to its PCIe device (as BMCs list NVMe drives on the PCIe bus) is
// a drive at its PCI address, not a NIC, so a profile's drive baseline
// (an nvme alias) finds it. Read from the lab's inventory.
func TestNVMeDriveFirmwareIsADrive(t *testing.T) {
	fw := []simrf.FirmwareItem{
		{ID: "BIOS", Kind: "bios", Name: "BIOS", Version: "2.1.0", Updateable: true},
		{ID: "Disk.NVMe.1", Kind: "drive", Name: "Samsung PM1733 NVMe SSD", Version: "EPK9", Device: "0000:5e:00.0", Updateable: true},
		{ID: "NIC.Slot.1-1", Kind: "nic", Name: "Mellanox ConnectX-7", Version: "28.39.1002", Device: "0000:3b:00.0", Updateable: true},
	}
	d, b, _, _ := lab(t, simrf.Options{Firmware: fw})
	inv, err := d.FirmwareInventory(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]drivers.FirmwareComponent{}
	for _, c := range inv {
		got[c.ID] = c
	}
	if c := got["Disk.NVMe.1"]; c.Kind != drivers.ComponentDrive || c.Device != "0000:5e:00.0" {
		t.Fatalf("the NVMe drive's firmware: %+v (want kind drive at 0000:5e:00.0)", c)
	}
	if c := got["NIC.Slot.1-1"]; c.Kind != drivers.ComponentNIC || c.Device != "0000:3b:00.0" {
		t.Fatalf("the NIC's firmware: %+v", c)
	}
}
