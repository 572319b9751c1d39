package orchestrator_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
)

func gpuNode(serial string, gpus int, fw string) drivers.Inventory {
	inv := drivers.Inventory{MachineID: "m-" + serial, System: drivers.System{Vendor: "Dell Inc.", Product: "PowerEdge XE9680", Serial: serial},
		Firmware: drivers.Firmware{BIOSVersion: "2.2.8"}, CPU: drivers.CPU{Model: "Xeon 8480+", Sockets: 2, Cores: 112, Threads: 224}, MemoryMiB: 2 << 20,
		NICs:  []drivers.NIC{{Alias: "nic0", Name: "ens3f0", MAC: "0c:c4:7a:00:00:" + serial[len(serial)-2:], Driver: "mlx5_core", Firmware: fw, SpeedMbps: 400000, LinkUp: true, Neighbor: &drivers.Neighbor{Switch: "leaf", Port: "Ethernet" + serial}}},
		Disks: []drivers.Disk{{Alias: "data", Name: "nvme0n1", Model: "CM6", SizeBytes: 3840755982336, Serial: serial}}}
	for i := 0; i < gpus; i++ {
		inv.GPUs = append(inv.GPUs, drivers.PCIDevice{Vendor: "NVIDIA Corporation", Model: "H100", Address: "0000:1b:00." + string(rune('0'+i))})
	}
	return inv
}

func TestInventoryDiff(t *testing.T) {
	invs := map[string]drivers.Inventory{
		"gpu-01": gpuNode("01", 8, "28.39.1002"),
		"gpu-02": gpuNode("02", 8, "28.39.1002"),
		"gpu-03": gpuNode("03", 7, "28.39.1002"), // a GPU missing
		"gpu-04": gpuNode("04", 8, "28.35.2000"), // old NIC firmware
	}
	got := orchestrator.InventoryDiff(invs)
	want := []orchestrator.InventoryOddity{
		{Node: "gpu-03", Field: "gpus.count", Value: "7", Majority: "8", Of: "3/4"},
		{Node: "gpu-03", Field: "gpus.models", Value: "7 x H100", Majority: "8 x H100", Of: "3/4"},
		{Node: "gpu-04", Field: "nic[nic0].firmware", Value: "28.35.2000", Majority: "28.39.1002", Of: "3/4"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("InventoryDiff (-want +got):\n%s", d)
	}
	// Serials, MACs and neighbours differ on every node: never reported.
	if got := orchestrator.InventoryDiff(map[string]drivers.Inventory{"a": gpuNode("01", 8, "x"), "b": gpuNode("02", 8, "x")}); len(got) != 0 {
		t.Errorf("identical models: %+v", got)
	}
	// Two nodes that disagree: no majority, both reported.
	tie := orchestrator.InventoryDiff(map[string]drivers.Inventory{"a": gpuNode("01", 8, "x"), "b": gpuNode("02", 8, "y")})
	if len(tie) != 2 || tie[0].Majority != "" || tie[0].Of != "0/2" {
		t.Errorf("tie: %+v", tie)
	}
	if got := orchestrator.InventoryDiff(map[string]drivers.Inventory{"a": gpuNode("01", 1, "x")}); got != nil {
		t.Errorf("one node: %+v", got)
	}
}

// TestDiffProfiles: nodes are compared within their hardware profile
// only, those without an inventory listed as not commissioned; only
// keeps one profile, and a profile no node has gives none.
func TestDiffProfiles(t *testing.T) {
	inv := func(serial string, gpus int, fw string) *drivers.Inventory { i := gpuNode(serial, gpus, fw); return &i }
	nodes := []orchestrator.ProfileNode{
		{Node: "gpu-01", Profile: "gpu", Inventory: inv("01", 8, "x")},
		{Node: "gpu-02", Profile: "gpu", Inventory: inv("02", 8, "x")},
		{Node: "gpu-03", Profile: "gpu", Inventory: inv("03", 7, "x")},
		{Node: "gpu-04", Profile: "gpu"},
		// The same 7 GPUs in another profile: its majority, not an oddity.
		{Node: "cmp-01", Profile: "compute", Inventory: inv("11", 7, "x")},
		{Node: "cmp-02", Profile: "compute", Inventory: inv("12", 7, "x")},
	}
	got := orchestrator.DiffProfiles(nodes, "")
	if len(got) != 2 || got[0].Profile != "compute" || got[1].Profile != "gpu" {
		t.Fatalf("profiles: %+v", got)
	}
	if c := got[0]; c.Nodes != 2 || len(c.NotInventoried) != 0 || len(c.OddOnesOut) != 0 {
		t.Errorf("compute: %+v", c)
	}
	g := got[1]
	if g.Nodes != 3 || !cmp.Equal(g.NotInventoried, []string{"gpu-04"}) || len(g.OddOnesOut) != 2 || g.OddOnesOut[0].Node != "gpu-03" || g.OddOnesOut[0].Of != "2/3" {
		t.Errorf("gpu: %+v", g)
	}
	if only := orchestrator.DiffProfiles(nodes, "gpu"); len(only) != 1 || !cmp.Equal(only[0], g) {
		t.Errorf("only gpu: %+v", only)
	}
	if none := orchestrator.DiffProfiles(nodes, "storage"); len(none) != 0 {
		t.Errorf("only storage: %+v", none)
	}
}
