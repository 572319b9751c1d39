package redfish_test

import (
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

// TestIDRACPCIeIdsRead: iDRAC names a PCIe device by its bus and device
// numbers in decimal ("59-0" for 0000:3b:00.0), not by its PCI address;
// the driver reads the address from that Id, so a profile's devices match
// the NIC and GPU items (the lab's inventory says where they are).
func TestIDRACPCIeIdsRead(t *testing.T) {
	d, b, s, _ := lab(t, simrf.Options{Vendor: "dell"})
	inv, err := d.FirmwareInventory(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, f := range s.Firmware() {
		if f.Kind == drivers.ComponentNIC || f.Kind == drivers.ComponentGPU {
			want[f.ID] = f.Device
		}
	}
	if len(want) != 2 {
		t.Fatalf("the lab lists %v", want)
	}
	for _, c := range inv {
		if dev, ok := want[c.ID]; ok && (c.Device != dev || c.Kind == "") {
			t.Errorf("%s (%s): device %q, want %q", c.ID, c.Kind, c.Device, dev)
		}
	}
}
