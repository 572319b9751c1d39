package orchestrator

import (
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// TestInventoryMachine: the machine of a stored inventory, decoded alone,
// is the one NodeInventory decodes, from a record written today and from
// one in the camelCase names of version 1; no record answers false, and
// a record cut short is an error.
func TestInventoryMachine(t *testing.T) {
	st := memory.New()
	op, err := InventoryOp("n1", drivers.Inventory{MachineID: "abc123", NICs: []drivers.NIC{{Name: "eth0", MAC: "52:54:00:00:00:01"}}, MemoryMiB: 4096})
	if err != nil {
		t.Fatal(err)
	}
	legacy := statestore.Put(collInventory, "n2", []byte(`{"machineId":"def456","nics":[],"memoryMib":8}`))
	cut := statestore.Put(collInventory, "n4", []byte(`{"v":2,"machine_id":"abc123","nics":[{"name":"eth0"`))
	if _, err := st.Write(t.Context(), op, legacy, cut); err != nil {
		t.Fatal(err)
	}
	_, _, wantErr := NodeInventory(t.Context(), st, "n4")
	if _, _, err := inventoryMachine(t.Context(), st, "n4"); err == nil || wantErr == nil {
		t.Errorf("a record cut short: error %v (NodeInventory's %v), want one from both", err, wantErr)
	}
	for _, node := range []string{"n1", "n2", "n3"} {
		want, wantOK, err := NodeInventory(t.Context(), st, node)
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := inventoryMachine(t.Context(), st, node)
		if err != nil || ok != wantOK || got != want.MachineID {
			t.Errorf("node %s: machine %q %v %v; NodeInventory's is %q %v", node, got, ok, err, want.MachineID, wantOK)
		}
	}
	if got, _, _ := inventoryMachine(t.Context(), st, "n2"); got != "def456" {
		t.Errorf("the version 1 record's machine is %q, want def456", got)
	}
}
