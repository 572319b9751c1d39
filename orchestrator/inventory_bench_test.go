package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// bigInventory inflates a fake server's inventories to a large GPU
// server's: 8 GPUs, 16 more NICs with LLDP neighbours, 24 disks (about
// 9 KB of JSON each), so that what the engine keeps of them shows.
type bigInventory struct{ *fake.Server }

func (b bigInventory) Inventory(ctx context.Context, n drivers.Node) (drivers.Inventory, error) {
	inv, err := b.Server.Inventory(ctx, n)
	if err != nil {
		return inv, err
	}
	inv.System = drivers.System{Vendor: "Dell Inc.", Product: "PowerEdge XE9680 (SKU=0AFF;ModelName=PowerEdge XE9680)", Serial: "SN-" + inv.MachineID}
	for i := range 8 {
		inv.GPUs = append(inv.GPUs, drivers.PCIDevice{Vendor: "NVIDIA Corporation", Model: "GH100 [H100 SXM5 80GB]", VendorID: "10de", ProductID: "2330",
			Address: fmt.Sprintf("0000:%02x:00.0", 0x18+i*0x10), NUMANode: i / 4})
	}
	for i := range 16 {
		inv.NICs = append(inv.NICs, drivers.NIC{Name: fmt.Sprintf("enp%ds0np0", 24+i), MAC: fmt.Sprintf("a0:88:c2:%02x:%02x:%02x", i, len(n.Name), i*7),
			PCIAddress: fmt.Sprintf("0000:%02x:00.0", 0x19+i*0x10), Driver: "mlx5_core", Vendor: "Mellanox Technologies", Product: "MT2910 Family [ConnectX-7]",
			Firmware: "28.39.1002 (DEL0000000031)", SpeedMbps: 400000, LinkUp: true,
			Neighbor: &drivers.Neighbor{Switch: fmt.Sprintf("leaf-%s-%d", n.Name, i/8), Port: fmt.Sprintf("Ethernet%d", i*4), ChassisID: "0c:42:a1:5e:00:01"}})
	}
	for i := range 24 {
		inv.Disks = append(inv.Disks, drivers.Disk{Name: fmt.Sprintf("nvme%dn1", i), Model: "Dell Ent NVMe CM6 RI 3.84TB", Serial: fmt.Sprintf("S%s%03d", inv.MachineID, i),
			SizeBytes: 3840755982336, BusAddress: fmt.Sprintf("0000:%02x:00.0", 0x5e+i)})
	}
	return inv, nil
}

// prepareFake prepares n generated nodes with the fake drivers on a bbolt
// store (big: inflated inventories) and answers the heap in use after GC
// with the engine still open, less the heap before it started, and the
// bytes of one stored inventory.
func prepareFake(b *testing.B, n int, big bool, control *float64) (heap int64, stored int) {
	ctx := b.Context()
	d, err := labrun.Generated(ctx, b.TempDir(), n)
	if err != nil {
		b.Fatal(err)
	}
	st, err := bolt.Open(filepath.Join(b.TempDir(), "state.db"), bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	raw, id, err := d.Canonical()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.PutRevision(ctx, statestore.Revision{ID: id, Design: raw, Counts: d.Counts(), Roots: []string{"(bench)"}}); err != nil {
		b.Fatal(err)
	}
	var srv drivers.Server = fake.NewServer(fake.Script{})
	if big {
		srv = bigInventory{srv.(*fake.Server)}
	}
	cfg := orchestrator.Config{Store: st, Drivers: orchestrator.Drivers{OOB: fake.NewOOB(fake.Script{}), Server: srv, Network: fake.NewNetwork(fake.Script{})},
		Secrets: func(context.Context, string) (drivers.Secret, error) { return drivers.NewSecret("bench"), nil }, TimeScale: 0.001}
	before := heapInUse()
	e, err := orchestrator.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	if err := e.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for _, action := range []record.Action{record.ActionPrepareSite, record.ActionPrepareNodes} {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		task, err := e.Submit(wctx, record.Request{Action: action, Requester: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		t, err := e.Wait(wctx, task.ID)
		cancel()
		if err != nil || t.Status != record.TaskSucceeded {
			b.Fatalf("%s: %+v %v", action, t, err)
		}
	}
	heap = heapInUse() - before
	// The control: what holding every inventory in memory would cost,
	// measured the same way (the method sees it).
	held := make([]drivers.Inventory, 0, n)
	h0 := heapInUse()
	for _, name := range d.NodeNames() {
		inv, ok, err := orchestrator.NodeInventory(ctx, st, name)
		if err != nil || !ok {
			b.Fatalf("no inventory stored for %s: %v", name, err)
		}
		held = append(held, inv)
	}
	*control = float64(heapInUse()-h0) / float64(len(held))
	raw, _ = json.Marshal(held[0])
	runtime.KeepAlive(held)
	return heap, len(raw)
}

func heapInUse() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// BenchmarkInventoryMemory: the inventories of 1,000 commissioned nodes
// are the store's (bbolt on disk), not the engine's: the engine's heap
// after preparing nodes whose inventories are a large GPU server's
// (~9 KB of JSON each) exceeds that after preparing nodes with small ones
// by at most 16 KiB per node, and by less than half of what holding
// them decoded costs (measured the same way, as a control).
func BenchmarkInventoryMemory(b *testing.B) {
	const nodes = 1000
	for b.Loop() {
		var ctlSmall, ctlBig float64
		small, smallBytes := prepareFake(b, nodes, false, &ctlSmall)
		big, bigBytes := prepareFake(b, nodes, true, &ctlBig)
		perNode := float64(big-small) / nodes
		b.ReportMetric(perNode, "heap-B/node")
		b.ReportMetric(float64(bigBytes), "stored-B/node")
		b.ReportMetric(ctlBig, "held-B/node")
		b.Logf("%d nodes: engine heap in use after prepare_nodes %d KiB with %d-byte inventories, %d KiB with %d-byte ones: %+.0f B per node; "+
			"holding them decoded would cost %.0f B per node (%.0f for the small ones)",
			nodes, small>>10, smallBytes, big>>10, bigBytes, perNode, ctlBig, ctlSmall)
		// The bound, and half of what holding them would cost (which is
		// below 16 KiB here: the bound alone would not see them kept).
		if perNode > 16<<10 || perNode > ctlBig/2 {
			b.Fatalf("the stored inventories grow the engine by %.0f B per node: more than 16 KiB or half of holding them (%.0f B)", perNode, ctlBig)
		}
	}
}
