package client_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
)

// TestInventories: the inventories of a served design's nodes, by name;
// the nodes without one (written to the server's store by the test, not
// by the client) come back not commissioned with their hardware profile
// from the example design; a refused request is an error, not a node
// without an inventory.
func TestInventories(t *testing.T) {
	srv := newFixture(t)
	ctx := t.Context()
	c := newClient(t, srv.URL, srv.Token[api.RoleViewer])
	rev, err := c.Design(ctx, "current")
	if err != nil || len(rev.Nodes) < 3 {
		t.Fatalf("current design: %v, nodes %v", err, rev.Nodes)
	}
	names := slices.Sorted(slices.Values(rev.Nodes))
	commissioned := map[string]bool{names[0]: true, names[2]: true}
	for n := range commissioned {
		op, err := orchestrator.InventoryOp(n, drivers.Inventory{MachineID: "m-" + n, MemoryMiB: 1024})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Store.Write(ctx, op); err != nil {
			t.Fatal(err)
		}
	}
	asked := slices.Clone(names)
	slices.Reverse(asked)
	res, err := c.Inventories(ctx, asked)
	if err != nil || len(res) != len(names) {
		t.Fatalf("Inventories: %d answers, %v; want %d", len(res), err, len(names))
	}
	d := designtest.Example(t)
	for i, r := range res {
		n := names[i]
		switch {
		case r.Inventory.Node != n || r.Commissioned != commissioned[n]:
			t.Errorf("answer %d: node %s commissioned %v, want %s %v", i, r.Inventory.Node, r.Commissioned, n, commissioned[n])
		case r.Commissioned && r.Inventory.Inventory.MachineID != "m-"+n:
			t.Errorf("%s: machine %q", n, r.Inventory.Inventory.MachineID)
		case r.Inventory.HardwareProfile != d.Nodes[n].Spec.HardwareProfile:
			t.Errorf("%s: hardware profile %q, want %q", n, r.Inventory.HardwareProfile, d.Nodes[n].Spec.HardwareProfile)
		}
	}
	bad := newClient(t, srv.URL, "tok-wrong-5d7e")
	if _, err := bad.Inventories(ctx, names); !client.IsStatus(err, http.StatusUnauthorized) {
		t.Errorf("a refused token: %v, want 401", err)
	}
}
