package maas

import (
	"context"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
)

// TestInventoryHardware: after commissioning, Inventory reports what the
// lab machine really has, read from MAAS's machine, node devices and
// commissioning details (lshw, lldp).
func TestInventoryHardware(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{Machines: 1})
	d := newTestDriver(t, l, nil)
	lm := l.Machines()[0]
	hw := &lm.Hardware
	hw.Vendor, hw.Product, hw.Serial = "Supermicro", "SYS-421GE-TNRT", "S4219X01"
	hw.BIOSVendor, hw.BIOSVersion, hw.BIOSDate = "American Megatrends International, LLC.", "2.1", "05/10/2024"
	hw.CPUs, hw.CPUModel, hw.CPUSockets, hw.MemoryMiB = 128, "Intel(R) Xeon(R) Gold 6430", 2, 1048576
	hw.GPUs = []maas.PCIDevice{
		{PCI: "0000:1b:00.0", Vendor: "NVIDIA Corporation", Product: "GH100 [H100 SXM5 80GB]", VendorID: "10de", ProductID: "2330", Driver: "nvidia", NUMANode: 0},
		{PCI: "0000:ca:00.0", Vendor: "NVIDIA Corporation", Product: "GH100 [H100 SXM5 80GB]", VendorID: "10de", ProductID: "2330", Driver: "nvidia", NUMANode: 1},
	}
	nic := &hw.NICs[0]
	nic.Vendor, nic.Product, nic.Driver, nic.Firmware, nic.SpeedMbps = "Intel Corporation", "Ethernet Controller E810-C for QSFP", "ice", "4.40 0x8001c967 1.3534.0", 100000
	nic.Neighbor = &maas.LLDPNeighbor{ChassisID: "0c:42:a1:5e:00:01", SysName: "leaf-r07-a", PortID: "Ethernet12", PortDescr: "Ethernet12"}

	n := enlistAndIdentify(t, d, lm)
	mustDone(t, "Commission", func(ctx context.Context) (drivers.Result, error) { return d.Commission(ctx, n.NodeRef) })
	inv, err := d.Inventory(testCtx(t), n)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inventory: %+v", inv)
	if inv.System != (drivers.System{Vendor: "Supermicro", Product: "SYS-421GE-TNRT", Serial: "S4219X01"}) {
		t.Errorf("system %+v", inv.System)
	}
	if inv.Firmware.BIOSVersion != "2.1" || inv.Firmware.BIOSDate != "05/10/2024" {
		t.Errorf("firmware %+v", inv.Firmware)
	}
	if inv.CPU.Threads != 128 || inv.CPU.Model != "Intel(R) Xeon(R) Gold 6430" || inv.CPU.Sockets != 2 {
		t.Errorf("cpu %+v", inv.CPU)
	}
	if inv.MemoryMiB != 1048576 {
		t.Errorf("memory %d MiB", inv.MemoryMiB)
	}
	if len(inv.GPUs) != 2 || inv.GPUs[1] != (drivers.PCIDevice{Vendor: "NVIDIA Corporation", Model: "GH100 [H100 SXM5 80GB]", VendorID: "10de", ProductID: "2330", Address: "0000:ca:00.0", NUMANode: 1}) {
		t.Errorf("gpus %+v", inv.GPUs)
	}
	var got *drivers.NIC
	for i := range inv.NICs {
		if inv.NICs[i].MAC == nic.MAC {
			got = &inv.NICs[i]
		}
	}
	if got == nil {
		t.Fatalf("no NIC with MAC %s in %+v", nic.MAC, inv.NICs)
	}
	want := drivers.NIC{Name: got.Name, MAC: nic.MAC, PCIAddress: nic.PCI, Driver: "ice", Vendor: "Intel Corporation", Product: "Ethernet Controller E810-C for QSFP",
		Firmware: "4.40 0x8001c967 1.3534.0", SpeedMbps: 100000, LinkUp: true, Neighbor: &drivers.Neighbor{Switch: "leaf-r07-a", Port: "Ethernet12", ChassisID: "0c:42:a1:5e:00:01"}}
	if got.Neighbor == nil || *got.Neighbor != *want.Neighbor {
		t.Errorf("neighbour %+v, want %+v", got.Neighbor, want.Neighbor)
	}
	got.Neighbor, want.Neighbor = nil, nil
	if *got != want {
		t.Errorf("nic\n got %+v\nwant %+v", *got, want)
	}
	if len(inv.Disks) != len(hw.Disks) || len(inv.Disks) == 0 {
		t.Fatalf("disks %+v, want %d", inv.Disks, len(hw.Disks))
	}
	for i, dk := range inv.Disks {
		w := hw.Disks[i]
		if dk.Name != w.Name || dk.SizeBytes != w.Size || dk.Model != w.Model || dk.Serial != w.Serial || dk.Rotational != w.Rotational || dk.BusAddress == "" {
			t.Errorf("disk %d: %+v, want %+v", i, dk, w)
		}
	}
}
