package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/statestore"
)

// collInventory keeps what commissioning found on each node's machine:
// key node name → drivers.Inventory. The introspection API reads it to
// match the node's NICs by MAC, so it never asks the provisioner while a
// node boots.
const collInventory = "inventory"

// Getter reads one record of the state store.
type Getter interface {
	Get(ctx context.Context, coll, key string) ([]byte, error)
}

// NodeInventory returns the stored inventory of a node's machine; false
// when none was recorded (the node was never commissioned by this
// orchestrator, and not deployed since).
func NodeInventory(ctx context.Context, s Getter, node string) (drivers.Inventory, bool, error) {
	b, err := s.Get(ctx, collInventory, node)
	if errors.Is(err, statestore.ErrNoRecord) {
		return drivers.Inventory{}, false, nil
	}
	if err != nil {
		return drivers.Inventory{}, false, err
	}
	var inv drivers.Inventory
	if err := json.Unmarshal(b, &inv); err != nil {
		return drivers.Inventory{}, false, fmt.Errorf("inventory of node %s: %w", node, err)
	}
	return inv, true, nil
}

// InventoryOp is the write that stores a node's inventory.
func InventoryOp(node string, inv drivers.Inventory) (statestore.Op, error) {
	raw, err := json.Marshal(inv)
	if err != nil {
		return statestore.Op{}, fmt.Errorf("inventory of node %s: %w", node, err)
	}
	return statestore.Put(collInventory, node, raw), nil
}

// recordInventory reads the machine's inventory from the provisioner and
// stores it. Commissioning ends with it; a deploy records it first when
// it is missing or belongs to another machine (an adopted node).
func (r *nodeRun) recordInventory(ctx context.Context, dn drivers.Node) error {
	var inv drivers.Inventory
	err := r.e.callServer(ctx, func(ctx context.Context) (err error) {
		inv, err = r.e.cfg.Drivers.Server.Inventory(ctx, dn)
		return err
	})
	if err != nil {
		return err
	}
	op, err := InventoryOp(r.rec.Name, inv)
	if err != nil {
		return err
	}
	if _, err := r.e.rec.s.Write(ctx, op); err != nil {
		return drivers.Errorf(drivers.Transient, "store the inventory of node %s: %v", r.rec.Name, err)
	}
	return nil
}

// ensureInventory records the inventory unless the stored one is of the
// node's current machine.
func (r *nodeRun) ensureInventory(ctx context.Context, dn drivers.Node) error {
	inv, ok, err := NodeInventory(ctx, r.e.rec.s, r.rec.Name)
	if err != nil {
		return err
	}
	if ok && inv.MachineID == dn.MachineID {
		return nil
	}
	return r.recordInventory(ctx, dn)
}
