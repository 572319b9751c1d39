package lab

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/sim/maas"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

// The firmware and drives a lab machine's Redfish BMC reports when its
// hardware profile has a baseline (firmware or raid): the inventory of
// the machine's own hardware. Its BMC and BIOS run the versions its
// expect block's minimums give (the lab's defaults otherwise, as MAAS
// reports them), its NICs, GPUs and drives the versions the baseline
// names for them (the lab's otherwise); so a baseline whose BIOS or BMC
// version differs from those is an update, the rest is in place. The
// drives behind the RAID controller are the profile's bay aliases, with
// no volume built; the BIOS settings are the service's defaults.
const (
	labGPUFirmware   = "96.00.74.00.01"
	labDriveFirmware = "J004"
	labBayDriveModel = "Dell Ent NVMe P5600 MU U.2 1.6TB"
	labBayDriveBytes = 1600321314816
	maxLabBays       = 64
)

// redfishInventory is the firmware inventory and the bay drives of a
// node's machine, whose hardware hw is built; nil, nil when its hardware
// profile has no baseline (the service's defaults).
func redfishInventory(hw *maas.Hardware, n *design.Node) ([]simrf.FirmwareItem, []simrf.Drive) {
	h := n.Spec.Hardware
	if h == nil || (len(h.Firmware) == 0 && h.RAID == nil) {
		return nil, nil
	}
	fw := []simrf.FirmwareItem{
		{ID: "BMC", Kind: "bmc", Name: "Integrated Remote Access Controller", Version: hw.BMC(), Updateable: true},
		{ID: "BIOS", Kind: "bios", Name: "BIOS", Version: hw.BIOSVersion, Updateable: true},
	}
	for i, nic := range hw.NICs {
		dev := strings.ToLower(nic.PCI)
		fw = append(fw, simrf.FirmwareItem{ID: fmt.Sprintf("NIC.Slot.%d-1", i+1), Kind: "nic", Name: nic.Product,
			Version: wantedVersion(h, "nic", "pci", dev, nic.Firmware), Device: dev, Updateable: true})
	}
	for i, g := range hw.GPUs {
		dev := strings.ToLower(g.PCI)
		fw = append(fw, simrf.FirmwareItem{ID: fmt.Sprintf("GPU.SXM.%d", i+1), Kind: "gpu", Name: "NVIDIA " + g.Product,
			Version: wantedVersion(h, "gpu", "pci", dev, labGPUFirmware), Device: dev, Updateable: true})
	}
	drives := bayDrives(h)
	for _, d := range drives {
		bay := strconv.Itoa(d.Bay)
		fw = append(fw, simrf.FirmwareItem{ID: "Disk.Bay." + bay, Kind: "drive", Name: d.Model,
			Version: wantedVersion(h, "drive", "bay", bay, labDriveFirmware), Device: bay, Updateable: true})
	}
	return fw, drives
}

// bayDrives are the drives of the profile's bay aliases, in bay order;
// the service's default drives when it has none.
func bayDrives(h *design.HardwareProfileSpec) []simrf.Drive {
	var bays []int
	for _, a := range h.DeviceAliases {
		if b, err := strconv.Atoi(a.Address); a.Bus == "bay" && err == nil && b >= 0 && !slices.Contains(bays, b) && len(bays) < maxLabBays {
			bays = append(bays, b)
		}
	}
	if len(bays) == 0 {
		return simrf.DefaultDrives()
	}
	slices.Sort(bays)
	out := make([]simrf.Drive, len(bays))
	for i, b := range bays {
		out[i] = simrf.Drive{Bay: b, Model: labBayDriveModel, CapacityBytes: labBayDriveBytes}
	}
	return out
}

// wantedVersion is the version the profile's baseline names for the
// device of that kind at address (an alias of bus), else def.
func wantedVersion(h *design.HardwareProfileSpec, kind, bus, address, def string) string {
	for _, f := range h.Firmware {
		if f.Component != kind {
			continue
		}
		if len(f.Devices) == 0 {
			return f.Version
		}
		for _, alias := range f.Devices {
			if a, ok := h.DeviceAliases[alias]; ok && a.Bus == bus && strings.EqualFold(a.Address, address) {
				return f.Version
			}
		}
	}
	return def
}
