package maas

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
)

// TestInventoryTakesStatusRead: the status poll that finds a machine
// Ready keeps it whole, so the inventory that follows reads neither the
// machine again nor anything else twice, and takes the same inventory
// as one that reads the machine itself. A write to the machine between
// them, or a second inventory, reads it again.
func TestInventoryTakesStatusRead(t *testing.T) {
	t.Parallel()
	d := genDesign(t, 2)
	l, drv := cfgLab(t, d)
	names := slices.Sorted(maps.Keys(d.Nodes))
	var nodes []drivers.Node
	for _, name := range names {
		n := driverspec.Node(d, d.Nodes[name], "")
		n.MachineID = identify(t, drv, n).MachineID
		nodes = append(nodes, n)
		pxeBoot(l.Machine(name))
	}
	for _, n := range nodes {
		mustDone(t, "Commission", func(ctx context.Context) (drivers.Result, error) { return drv.Commission(ctx, n.NodeRef) })
	}
	inventory := func(n drivers.Node) (drivers.Inventory, map[string]int) {
		t.Helper()
		before := settled(l)
		inv, err := drv.Inventory(t.Context(), n)
		if err != nil {
			t.Fatal(err)
		}
		return inv, delta(settled(l), before)
	}
	status := func(n drivers.Node) {
		t.Helper()
		ms, err := drv.Status(t.Context(), []drivers.NodeRef{n.NodeRef})
		if err != nil || len(ms) != 1 || ms[0].State != "Ready" {
			t.Fatalf("Status: %+v %v, want the machine Ready", ms, err)
		}
	}
	a, b := nodes[0], nodes[1]
	status(a)
	fromStatus, got := inventory(a)
	want := map[string]int{"GET /nodes/{node}/devices/": 1, "GET /machines/{machine}/?op=details": 1}
	if !maps.Equal(got, want) {
		t.Errorf("inventory after the status read: requests %v, want %v", got, want)
	}
	fromRead, got := inventory(a) // the facts were taken: read again
	if got["GET /machines/{machine}/"] != 1 {
		t.Errorf("a second inventory: requests %v, want the machine read", got)
	}
	if !reflect.DeepEqual(fromStatus, fromRead) {
		t.Errorf("the inventory from the status read differs from the machine's own read:\n%+v\n%+v", fromStatus, fromRead)
	}
	status(b)
	var iface []mInterface
	cfgCall(t, drv, "GET", "nodes/"+b.MachineID+"/interfaces/", "", nil, &iface)
	cfgCall(t, drv, "PUT", "nodes/"+b.MachineID+"/interfaces/"+itoa(iface[0].ID)+"/", "", map[string][]string{"mtu": {"1500"}}, nil)
	if _, got := inventory(b); got["GET /machines/{machine}/"] != 1 {
		t.Errorf("inventory after a write of the interfaces: requests %v, want the machine read", got)
	}
}

// TestStatusReadKeepsReadyOnly: a status read keeps the JSON of Ready
// machines alone.
func TestStatusReadKeepsReadyOnly(t *testing.T) {
	for status, keep := range map[int]bool{stReady: true, 6: false, 1: false} {
		var s statusRead
		doc := []byte(`{"system_id":"abc","status":` + itoa(status) + `,"interface_set":[]}`)
		if err := s.UnmarshalJSON(doc); err != nil {
			t.Fatal(err)
		}
		if s.SystemID != "abc" || s.Status != status || (s.ready != nil) != keep {
			t.Errorf("status %d: %+v, kept %t, want %t", status, s.mMachineState, s.ready != nil, keep)
		}
	}
}
