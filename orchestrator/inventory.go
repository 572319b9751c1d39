package orchestrator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	segjson "github.com/segmentio/encoding/json"

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
	if err := kindOf(collInventory).Decode(node, b, &inv); err != nil {
		return drivers.Inventory{}, false, err
	}
	return inv, true, nil
}

// InventoryOp is the write that stores a node's inventory.
func InventoryOp(node string, inv drivers.Inventory) (statestore.Op, error) {
	raw, err := kindOf(collInventory).Encode(inv)
	if err != nil {
		return statestore.Op{}, fmt.Errorf("inventory of node %s: %w", node, err)
	}
	return statestore.Put(collInventory, node, raw), nil
}

// recordInventory reads the machine's inventory from the provisioner and
// stores it. Commissioning ends with it; a deploy records it first when
// it is missing or belongs to another machine (an adopted node).
func (r *nodeRun) recordInventory(ctx context.Context, dn drivers.Node) error {
	op, err := r.inventoryOp(ctx, dn)
	if err != nil {
		return err
	}
	if _, err := r.e.rec.s.Write(ctx, op); err != nil {
		return drivers.Errorf(drivers.Transient, "store the inventory of node %s: %v", r.rec.Name, err)
	}
	return nil
}

// inventoryOp reads the machine's inventory and answers the write that
// records it.
func (r *nodeRun) inventoryOp(ctx context.Context, dn drivers.Node) (statestore.Op, error) {
	var inv drivers.Inventory
	err := r.e.callServer(ctx, func(ctx context.Context) (err error) {
		inv, err = r.e.cfg.Drivers.Server.Inventory(ctx, dn)
		return err
	})
	if err != nil {
		return statestore.Op{}, err
	}
	r.completeFirmware(ctx, &inv.Firmware)
	return InventoryOp(r.rec.Name, inv)
}

// ensureInventory records the inventory unless the stored one is of the
// node's current machine.
func (r *nodeRun) ensureInventory(ctx context.Context, dn drivers.Node) error {
	machine, ok, err := inventoryMachine(ctx, r.e.rec.s, r.rec.Name)
	if err != nil {
		return err
	}
	if ok && machine == dn.MachineID {
		return nil
	}
	return r.recordInventory(ctx, dn)
}

// inventoryMachine is the machine of a node's stored inventory, decoded
// alone (every deploy asks; the whole inventory is not needed); false
// when none was recorded.
func inventoryMachine(ctx context.Context, s Getter, node string) (string, bool, error) {
	b, err := s.Get(ctx, collInventory, node)
	if errors.Is(err, statestore.ErrNoRecord) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	up, err := kindOf(collInventory).Upgrade(node, b)
	if err != nil {
		return "", false, err
	}
	var inv struct {
		MachineID string `json:"machine_id"`
	}
	// segmentio's decoder skips the fields not asked for without
	// encoding/json's validating pass over the whole record.
	if err := segjson.Unmarshal(up, &inv); err != nil {
		return "", false, fmt.Errorf("inventory of node %s: %w", node, err)
	}
	return inv.MachineID, true, nil
}

// InventoryOddity is one fact in which a node differs from the majority
// of the nodes it is compared with (those of its hardware profile).
type InventoryOddity struct {
	Node     string `json:"node"`
	Field    string `json:"field"`    // e.g. gpus.count, nic[nic0].firmware, disk[data].model
	Value    string `json:"value"`    // the node's ("" when it has none)
	Majority string `json:"majority"` // the value most nodes have ("" when none)
	Of       string `json:"of"`       // how many nodes have it, e.g. "7/8"
}

// InventoryFacts flattens the facts of an inventory that machines of one
// model should share: not serials, MACs, machine IDs or LLDP neighbours,
// which differ by nature. NICs and disks are keyed by their design alias,
// else their kernel name.
func InventoryFacts(inv drivers.Inventory) map[string]string {
	f := map[string]string{
		"system.vendor":        inv.System.Vendor,
		"system.product":       inv.System.Product,
		"firmware.biosVendor":  inv.Firmware.BIOSVendor,
		"firmware.biosVersion": inv.Firmware.BIOSVersion,
		"firmware.bmcVersion":  inv.Firmware.BMCVersion,
		"cpu.model":            inv.CPU.Model,
		"cpu.sockets":          strconv.Itoa(inv.CPU.Sockets),
		"cpu.cores":            strconv.Itoa(inv.CPU.Cores),
		"cpu.threads":          strconv.Itoa(inv.CPU.Threads),
		"memoryMiB":            strconv.FormatInt(inv.MemoryMiB, 10),
		"gpus.count":           strconv.Itoa(len(inv.GPUs)),
		"nics.count":           strconv.Itoa(len(inv.NICs)),
		"disks.count":          strconv.Itoa(len(inv.Disks)),
	}
	models := map[string]int{}
	for _, g := range inv.GPUs {
		models[g.Model]++
	}
	var ms []string
	for m, n := range models {
		ms = append(ms, fmt.Sprintf("%d x %s", n, m))
	}
	slices.Sort(ms)
	f["gpus.models"] = strings.Join(ms, ", ")
	for _, n := range inv.NICs {
		k := "nic[" + cmp.Or(n.Alias, n.Name) + "]"
		f[k+".driver"], f[k+".firmware"], f[k+".product"] = n.Driver, n.Firmware, n.Product
		f[k+".speedMbps"], f[k+".linkUp"] = strconv.Itoa(n.SpeedMbps), strconv.FormatBool(n.LinkUp)
	}
	for _, d := range inv.Disks {
		k := "disk[" + cmp.Or(d.Alias, d.Name) + "]"
		f[k+".model"], f[k+".sizeBytes"], f[k+".rotational"] = d.Model, strconv.FormatInt(d.SizeBytes, 10), strconv.FormatBool(d.Rotational)
	}
	return f
}

// InventoryDiff compares the inventories of the nodes of one hardware
// profile and answers, per fact, the nodes whose value is not the
// majority's (all of them when no value has more nodes than every other),
// ordered by field then node. A fact a node lacks counts as "".
func InventoryDiff(invs map[string]drivers.Inventory) []InventoryOddity {
	if len(invs) < 2 {
		return nil
	}
	facts := make(map[string]map[string]string, len(invs))
	fields := map[string]bool{}
	for node, inv := range invs {
		facts[node] = InventoryFacts(inv)
		for k := range facts[node] {
			fields[k] = true
		}
	}
	nodes := slices.Sorted(maps.Keys(invs))
	var out []InventoryOddity
	for _, field := range slices.Sorted(maps.Keys(fields)) {
		count := map[string]int{}
		for _, n := range nodes {
			count[facts[n][field]]++
		}
		if len(count) < 2 {
			continue
		}
		major, best, tie := "", 0, false
		for _, v := range slices.Sorted(maps.Keys(count)) {
			switch c := count[v]; {
			case c > best:
				major, best, tie = v, c, false
			case c == best:
				tie = true
			}
		}
		if tie {
			major, best = "", 0
		}
		for _, n := range nodes {
			if v := facts[n][field]; tie || v != major {
				out = append(out, InventoryOddity{Node: n, Field: field, Value: v, Majority: major,
					Of: fmt.Sprintf("%d/%d", best, len(nodes))})
			}
		}
	}
	return out
}

// completeFirmware fills the BIOS and BMC versions commissioning did not
// report from the node's BMC, when its OOB driver reads them
// (drivers.OOBFirmware). A BMC that does not answer leaves them as they
// are: the inventory does not wait for it.
func (r *nodeRun) completeFirmware(ctx context.Context, fw *drivers.Firmware) {
	if r.n.Unpinned() || (fw.BIOSVersion != "" && fw.BMCVersion != "") {
		return
	}
	var got drivers.Firmware
	_, err := r.withOOB(ctx, func(ctx context.Context, drv drivers.OOB, b drivers.BMC) (err error) {
		if f, ok := drv.(drivers.OOBFirmware); ok {
			got, err = f.Firmware(ctx, b)
		}
		return err
	})
	if err != nil {
		r.log.Debug().Err(err).Msg("firmware versions from the BMC")
		return
	}
	fw.BIOSVersion = cmp.Or(fw.BIOSVersion, got.BIOSVersion)
	fw.BMCVersion = cmp.Or(fw.BMCVersion, got.BMCVersion)
}
