package orchestrator_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
)

var gpuAddrs = []string{"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
	"0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:ca:00.0"}

// asBuiltInv is a machine with everything asBuiltExpect asks for.
func asBuiltInv() drivers.Inventory {
	inv := drivers.Inventory{MachineID: "m1", CPU: drivers.CPU{Model: "AMD EPYC 9654 96-Core Processor", Sockets: 2, Cores: 96, Threads: 192},
		MemoryMiB: 1 << 20, Firmware: drivers.Firmware{BIOSVersion: "2.1.0", BMCVersion: "5.10"},
		NICs: []drivers.NIC{
			{Alias: "data0", Name: "enp65s0f0", MAC: "52:54:00:00:00:10", Driver: "mlx5_core", SpeedMbps: 100000, Neighbor: &drivers.Neighbor{Switch: "leaf-r01", Port: "Ethernet12"}},
			{Alias: "data1", Name: "enp65s0f1", MAC: "52:54:00:00:00:11", Driver: "mlx5_core", SpeedMbps: 100000, Neighbor: &drivers.Neighbor{Switch: "leaf-r01", Port: "Ethernet13"}},
		},
		Disks: []drivers.Disk{{Alias: "disk0", Name: "nvme0n1", Model: "SAMSUNG MZQL23T8HCLS-00A07", SizeBytes: 3840e9}},
	}
	for _, a := range gpuAddrs {
		inv.GPUs = append(inv.GPUs, drivers.PCIDevice{Vendor: "NVIDIA Corporation", Model: "GH100 [H100 SXM5 80GB]", Address: a})
	}
	return inv
}

var asBuiltExpect = &design.HardwareExpect{
	CPU:       &design.ExpectCPU{Count: 128, Model: "EPYC"},
	MemoryMin: "512gi",
	GPUs:      &design.ExpectGPUs{Count: 8, Model: "H100"},
	NICs:      map[string]design.ExpectNIC{"data0": {SpeedMinMbps: 25000, Driver: "mlx5_core"}, "data1": {SpeedMinMbps: 25000}},
	Disks:     map[string]design.ExpectDisk{"disk0": {SizeMin: "3t", Model: "SAMSUNG"}},
	Firmware:  &design.ExpectFirmware{BIOSMin: "2.1.0", BMCMin: "5.10"},
	LLDP:      true,
}

var asBuiltCabling = map[string]design.Cable{"data0": {Switch: "leaf-r01", Port: "Ethernet12"}, "data1": {Switch: "leaf-r01", Port: "Ethernet13"}}

func TestAsBuiltMismatches(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(inv *drivers.Inventory)
		peer  []string
		cable map[string]design.Cable
		want  []string
	}{
		{name: "as built", edit: func(*drivers.Inventory) {}},
		{name: "a GPU missing, named from a peer's layout", peer: gpuAddrs,
			edit: func(inv *drivers.Inventory) { inv.GPUs = inv.GPUs[:7] },
			want: []string{"expected 8 x GPU matching H100, found 7: missing 0000:ca:00.0"}},
		{name: "a GPU missing, no peer: the ones found are named",
			edit: func(inv *drivers.Inventory) { inv.GPUs = inv.GPUs[:2] },
			want: []string{"expected 8 x GPU matching H100, found 2 (0000:18:00.0, 0000:2a:00.0)"}},
		{name: "a GPU of another model",
			edit: func(inv *drivers.Inventory) { inv.GPUs[7].Model = "GA100 [A100 SXM4 80GB]" },
			want: []string{"expected 8 x GPU matching H100, found 7 (0000:18:00.0, 0000:2a:00.0, 0000:3a:00.0, 0000:5d:00.0, 0000:9a:00.0, 0000:ab:00.0, 0000:ba:00.0); 1 other accelerator(s): 0000:ca:00.0 GA100 [A100 SXM4 80GB]"}},
		{name: "cables swapped: both named",
			edit: func(inv *drivers.Inventory) {
				inv.NICs[0].Neighbor, inv.NICs[1].Neighbor = inv.NICs[1].Neighbor, inv.NICs[0].Neighbor
			},
			want: []string{"data0 cabled to leaf-r01:Ethernet13, expected leaf-r01:Ethernet12", "data1 cabled to leaf-r01:Ethernet12, expected leaf-r01:Ethernet13"}},
		{name: "cabling not checked without it",
			cable: map[string]design.Cable{},
			edit:  func(inv *drivers.Inventory) { inv.NICs[0].Neighbor = nil }},
		{name: "no LLDP neighbour",
			edit: func(inv *drivers.Inventory) { inv.NICs[1].Neighbor = nil },
			want: []string{"data1 sees no LLDP neighbour, expected leaf-r01:Ethernet13"}},
		{name: "slow NIC, wrong driver, link down",
			edit: func(inv *drivers.Inventory) {
				inv.NICs[0].SpeedMbps, inv.NICs[0].Driver = 10000, "i40e"
				inv.NICs[1].SpeedMbps = 0
			},
			want: []string{"data0 at 10000 Mb/s, expected at least 25000", "data0 driver i40e, expected mlx5_core",
				"data1 link down or speed unknown, expected at least 25000 Mb/s"}},
		{name: "old firmware, unknown BMC version",
			edit: func(inv *drivers.Inventory) { inv.Firmware.BIOSVersion, inv.Firmware.BMCVersion = "1.0", "" },
			want: []string{"BIOS 1.0 below 2.1.0", "BMC firmware version unknown, expected at least 5.10"}},
		{name: "CPU, memory and disk short",
			edit: func(inv *drivers.Inventory) {
				inv.CPU = drivers.CPU{Model: "Intel(R) Xeon(R) Gold 6430", Threads: 64}
				inv.MemoryMiB = 256 << 10
				inv.Disks[0].SizeBytes, inv.Disks[0].Model = 960e9, "Micron_7450"
			},
			want: []string{"64 logical CPUs, expected at least 128", `CPU model "Intel(R) Xeon(R) Gold 6430" does not match EPYC`,
				"memory 256 GiB, expected at least 512gi", "disk0 (nvme0n1) is 960 GB, expected at least 3t", `disk0 (nvme0n1) model "Micron_7450" does not match SAMSUNG`}},
		{name: "CPU count not reported",
			edit: func(inv *drivers.Inventory) { inv.CPU.Threads = 0 },
			want: []string{"CPU count unknown (commissioning reported none), expected at least 128"}},
		{name: "parts not found",
			edit: func(inv *drivers.Inventory) { inv.NICs, inv.Disks = inv.NICs[:1], nil },
			want: []string{"data1: no NIC found for the alias", "disk0: no disk found for the alias",
				"data1: no NIC found for the alias, expected cabled to leaf-r01:Ethernet13"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := asBuiltInv()
			tc.edit(&inv)
			cabling := asBuiltCabling
			if tc.cable != nil {
				cabling = tc.cable
			}
			got := orchestrator.AsBuiltMismatches(asBuiltExpect, cabling, inv, tc.peer)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("mismatches (-want +got):\n%s", diff)
			}
		})
	}
	if got := orchestrator.AsBuiltMismatches(nil, nil, drivers.Inventory{}, nil); got != nil {
		t.Errorf("no expectations: %v", got)
	}
}

// The summary of many differences is bounded.
func TestMismatchSummaryBounded(t *testing.T) {
	var m []string
	for i := range 40 {
		m = append(m, fmt.Sprintf("difference %d", i))
	}
	s := orchestrator.MismatchSummary(m)
	if !strings.HasSuffix(s, "; … and 28 more") || strings.Contains(s, "difference 12;") {
		t.Errorf("summary not bounded: %s", s)
	}
}

// The digest is the inventory's, whatever order its parts were listed
// in; a part changed or another machine changes it.
func TestInventoryDigest(t *testing.T) {
	a, b := asBuiltInv(), asBuiltInv()
	b.NICs[0], b.NICs[1] = b.NICs[1], b.NICs[0]
	b.GPUs[0], b.GPUs[3] = b.GPUs[3], b.GPUs[0]
	if orchestrator.InventoryDigest(a) != orchestrator.InventoryDigest(b) {
		t.Error("digest depends on the order of the parts")
	}
	b.GPUs = b.GPUs[:7]
	if orchestrator.InventoryDigest(a) == orchestrator.InventoryDigest(b) {
		t.Error("digest unchanged by a missing GPU")
	}
	c := asBuiltInv()
	c.MachineID = "m2"
	if orchestrator.InventoryDigest(a) == orchestrator.InventoryDigest(c) {
		t.Error("digest unchanged by another machine")
	}
}

func TestHardwareTagsOf(t *testing.T) {
	tags := []design.HardwareTag{
		{Name: "gpu-h100x8", GPUs: &design.ExpectGPUs{Count: 8, Model: "H100"}},
		{Name: "gpu-a100", GPUs: &design.ExpectGPUs{Count: 1, Model: "A100"}},
		{Name: "nic-100g", NICSpeedMinMbps: 100000},
		{Name: "nic-400g", NICSpeedMinMbps: 400000},
		{Name: "big-epyc", CPU: &design.ExpectCPU{Count: 128, Model: "EPYC"}, MemoryMin: "1ti"},
		{Name: "huge", MemoryMin: "2ti"},
	}
	inv := asBuiltInv()
	if got, want := orchestrator.HardwareTagsOf(tags, inv), []string{"gpu-h100x8", "nic-100g", "big-epyc"}; !cmp.Equal(got, want) {
		t.Errorf("tags = %v, want %v", got, want)
	}
	inv.GPUs = inv.GPUs[:7]
	inv.NICs[0].SpeedMbps, inv.NICs[1].SpeedMbps = 25000, 25000
	if got, want := orchestrator.HardwareTagsOf(tags, inv), []string{"big-epyc"}; !cmp.Equal(got, want) {
		t.Errorf("tags of a machine with 7 GPUs, 25G NICs = %v, want %v", got, want)
	}
}
