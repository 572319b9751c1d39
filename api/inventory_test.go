package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
)

// TestNodeInventory: a viewer reads the recorded inventory of a node with
// its hardware profile; a node not commissioned yet is a 404 that names it.
func TestNodeInventory(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	c, err := client.New(f.URL, f.Token[api.RoleViewer])
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Inventory(ctx, f.Node)
	if !client.IsStatus(err, http.StatusNotFound) || !strings.Contains(err.Error(), f.Node) || !strings.Contains(err.Error(), "not commissioned yet") {
		t.Fatalf("inventory before commissioning: %v, want a 404 naming %s and 'not commissioned yet'", err, f.Node)
	}
	inv := drivers.Inventory{MachineID: "abc123", NICs: []drivers.NIC{{Alias: "nic0", Name: "ens3f0", MAC: "0c:c4:7a:00:00:01", Driver: "ice", SpeedMbps: 25000, LinkUp: true,
		Neighbor: &drivers.Neighbor{Switch: "leaf-a", Port: "Ethernet1"}}},
		CPU: drivers.CPU{Model: "Xeon", Sockets: 2, Cores: 64, Threads: 128}, MemoryMiB: 524288,
		GPUs:  []drivers.PCIDevice{{Vendor: "NVIDIA Corporation", Model: "H100", Address: "0000:ca:00.0", NUMANode: 1}},
		Disks: []drivers.Disk{{Name: "nvme0n1", SizeBytes: 3840755982336, Model: "CM6"}}}
	op, err := orchestrator.InventoryOp(f.Node, inv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Store.Write(ctx, op); err != nil {
		t.Fatal(err)
	}
	got, err := c.Inventory(ctx, f.Node)
	if err != nil {
		t.Fatal(err)
	}
	if got.Node != f.Node || got.Inventory.MachineID != "abc123" || len(got.Inventory.GPUs) != 1 || got.Inventory.NICs[0].Neighbor.Port != "Ethernet1" || got.Inventory.MemoryMiB != 524288 {
		t.Errorf("inventory %+v", got)
	}
	if got.HardwareProfile == "" {
		t.Errorf("no hardware profile for node %s of the current design: %+v", f.Node, got)
	}
	if code := f.json(t, "GET", "/api/v1/nodes/"+f.Node+"/inventory", "", nil, nil); code != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401", code)
	}
}
