package record

import "time"

// AsBuiltRecord is a node's last as-built check.
type AsBuiltRecord struct {
	Node      string `json:"node"`
	MachineID string `json:"machine_id,omitempty"`
	// Inventory is the digest of the inventory checked (InventoryDigest).
	Inventory  string    `json:"inventory"`
	Checked    time.Time `json:"checked"`
	Mismatches []string  `json:"mismatches,omitempty"`
	// Accepted is an operator's acceptance of one inventory as built,
	// nil when none: a later check of the same inventory passes, one of
	// any other inventory (another machine, a part changed) does not.
	Accepted *HardwareAcceptance `json:"accepted,omitempty"`
}

// HardwareAcceptance is an operator's acceptance of a machine as built.
type HardwareAcceptance struct {
	Inventory  string    `json:"inventory"` // the digest accepted
	MachineID  string    `json:"machine_id,omitempty"`
	By         string    `json:"by"`
	At         time.Time `json:"at"`
	Mismatches []string  `json:"mismatches"` // what was accepted
}
