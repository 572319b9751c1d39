package maas

import (
	"reflect"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

// TestResolveByNodeDevicesThenLSHW: node devices resolve NICs by PCI and
// disks by any bus but SCSI; what they leave goes to lshw's bus
// addresses, and what neither has is named in the error's list.
func TestResolveByNodeDevicesThenLSHW(t *testing.T) {
	nds := []nodeDevice{
		{PCIAddress: "0000:3B:00.0", Interface: &mInterface{ID: 4, Name: "enp59s0f0", MAC: "AA:BB:CC:00:00:01"}},
		{PCIAddress: "0000:5e:00.0", Disk: &mBlockDevice{ID: 9, Name: "nvme0n1"}},
	}
	hw := map[string]lshwEntry{
		"pci@0000:3b:00.1": {name: "enp59s0f1", serial: "AA:BB:CC:00:00:02"},
		"scsi@2:0.0.0":     {name: "/dev/sda"},
	}
	for _, tc := range []struct {
		name    string
		disks   bool
		devs    []drivers.Device
		want    map[string]resolved
		missing []string
	}{
		{"nics", false, []drivers.Device{
			{Alias: "nic0", Bus: "pci", Address: "0000:3b:00.0"},
			{Alias: "nic1", Bus: "pci", Address: "0000:3b:00.1"},
			{Alias: "nic9", Bus: "pci", Address: "0000:99:00.0"},
		}, map[string]resolved{
			"nic0": {Name: "enp59s0f0", ID: 4, MAC: "aa:bb:cc:00:00:01"},
			"nic1": {Name: "enp59s0f1", MAC: "aa:bb:cc:00:00:02"},
		}, []string{"nic9 (pci 0000:99:00.0)"}},
		{"disks", true, []drivers.Device{
			{Alias: "os", Bus: "nvme", Address: "0000:5e:00.0"},
			{Alias: "data", Bus: "scsi", Address: "2:0.0.0"},
		}, map[string]resolved{
			"os":   {Name: "nvme0n1", ID: 9},
			"data": {Name: "sda"},
		}, nil},
	} {
		out := map[string]resolved{}
		left := byNodeDevices(tc.devs, nds, tc.disks, out)
		missing := byLSHW(left, hw, tc.disks, out)
		if !reflect.DeepEqual(out, tc.want) || !reflect.DeepEqual(missing, tc.missing) {
			t.Errorf("%s: resolved %+v missing %q, want %+v %q", tc.name, out, missing, tc.want, tc.missing)
		}
	}
}
