package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Firmware and bios drift: a deployed node whose BMC reports firmware
// versions other than its hardware profile's firmware baseline, or BIOS
// settings in effect other than its bios.attributes. A run reads each
// such node's BMC once (its firmware inventory and its BIOS settings in
// one visit, through callBMC: the engine's per-BMC lock and OOB
// concurrency bound it), baselineReaders nodes at a time. A BMC that does
// not answer leaves the node's stored drift of both kinds as it was.

// baselineReaders bounds the BMCs one reconciliation run reads at once
// (the engine's OOB concurrency limit bounds them too).
const baselineReaders = 16

// baselineRead is what one node's BMC reported.
type baselineRead struct {
	rec      record.NodeRecord
	hw       *design.HardwareProfileSpec
	profile  string
	firmware []drivers.FirmwareComponent
	bios     map[string]string
	err      error
}

// baselines records the firmware and bios drift of the deployed nodes
// the run examined whose hardware profile has a baseline.
func (p *reconcilePass) baselines(ctx context.Context) {
	if p.d == nil {
		return
	}
	var todo []baselineRead
	for _, r := range p.ported {
		n := p.d.Nodes[r.Name]
		if n == nil || settledStage(r) != record.StageDeployed || n.Spec.Hardware == nil || !hasBaseline(n.Spec.Hardware) {
			continue
		}
		todo = append(todo, baselineRead{rec: r, hw: n.Spec.Hardware, profile: n.Spec.HardwareProfile})
	}
	reads := p.e.readBaselines(ctx, p.d, todo)
	for _, rd := range reads {
		if rd.err != nil {
			p.e.log.Warn().Str("node", rd.rec.Name).Err(rd.err).Msg("reconcile: reading the BMC's firmware and BIOS failed; its firmware and bios drift are looked at again next run")
			p.keepBaseline(rd.rec.Name)
			continue
		}
		p.baselineDrift(rd)
	}
}

// hasBaseline: the profile declares firmware or BIOS settings.
func hasBaseline(hw *design.HardwareProfileSpec) bool {
	return len(hw.Firmware) > 0 || (hw.BIOS != nil && len(hw.BIOS.Attributes) > 0)
}

// readBaselines reads the nodes' BMCs, baselineReaders at a time.
func (e *Engine) readBaselines(ctx context.Context, d *design.Design, todo []baselineRead) []baselineRead {
	sem := make(chan struct{}, baselineReaders)
	var wg sync.WaitGroup
	for i := range todo {
		wg.Add(1)
		sem <- struct{}{}
		go func(rd *baselineRead) {
			defer func() { <-sem; wg.Done() }()
			rd.firmware, rd.bios, rd.err = e.readBaseline(ctx, d, d.Nodes[rd.rec.Name], rd.hw)
		}(&todo[i])
	}
	wg.Wait()
	return todo
}

// readBaseline reads one node's firmware inventory (when its profile has
// a firmware baseline) and BIOS settings (when it has bios.attributes)
// through its first OOB method, in one visit to its BMC.
func (e *Engine) readBaseline(ctx context.Context, d *design.Design, n *design.Node, hw *design.HardwareProfileSpec) ([]drivers.FirmwareComponent, map[string]string, error) {
	ts, err := e.oobTargets(ctx, d, n)
	if err != nil {
		return nil, nil, err
	}
	t := ts[0]
	fw, canFW := t.drv.(drivers.OOBFirmwareUpdate)
	bd, canBIOS := t.drv.(drivers.OOBBIOS)
	wantFW, wantBIOS := len(hw.Firmware) > 0, hw.BIOS != nil && len(hw.BIOS.Attributes) > 0
	switch {
	case wantFW && !canFW:
		return nil, nil, fmt.Errorf("node %s: hardware profile %s has a firmware baseline and its OOB driver %s cannot read firmware inventory (use redfish)", n.Metadata.Name, n.Spec.HardwareProfile, t.typ)
	case wantBIOS && !canBIOS:
		return nil, nil, fmt.Errorf("node %s: hardware profile %s has bios.attributes and its OOB driver %s cannot read BIOS settings (use redfish)", n.Metadata.Name, n.Spec.HardwareProfile, t.typ)
	}
	var inv []drivers.FirmwareComponent
	var attrs map[string]string
	err = e.callBMC(ctx, t.bmc, func(ctx context.Context) (err error) {
		if wantFW {
			if inv, err = fw.FirmwareInventory(ctx, t.bmc); err != nil {
				return fmt.Errorf("firmware inventory: %w", err)
			}
		}
		if wantBIOS {
			if attrs, err = bd.BIOSAttributes(ctx, t.bmc); err != nil {
				return fmt.Errorf("BIOS settings: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("node %s: BMC %s:%d: %w", n.Metadata.Name, t.bmc.Address, t.bmc.Port, err)
	}
	return inv, attrs, nil
}

// baselineDrift adds the node's firmware and bios drift.
func (p *reconcilePass) baselineDrift(rd baselineRead) {
	base := record.DriftRecord{Node: rd.rec.Name, MachineID: rd.rec.MachineID, Stage: rd.rec.Stage}
	if len(rd.hw.Firmware) > 0 {
		if want, got := FirmwareDiff(rd.hw, rd.firmware); len(got) > 0 {
			f := found{DriftRecord: base, rec: rd.rec}
			f.Kind, f.Expected, f.Observed = record.DriftFirmware, bounded(strings.Join(want, "; ")), bounded(strings.Join(got, "; "))
			p.add(f)
		}
	}
	if rd.hw.BIOS != nil && len(rd.hw.BIOS.Attributes) > 0 {
		if want, got := BIOSDiff(rd.hw.BIOS.Attributes, rd.bios); len(got) > 0 {
			f := found{DriftRecord: base, rec: rd.rec}
			f.Kind, f.Expected, f.Observed = record.DriftBIOS, bounded(strings.Join(want, ", ")), bounded(strings.Join(got, "; "))
			p.add(f)
		}
	}
}

// FirmwareDiff compares a firmware inventory with a profile's firmware
// baseline: the baseline in words (component, devices, version), and
// each difference as "item: have X, want Y" (an item the baseline names
// and the inventory lacks: "absent").
func FirmwareDiff(hw *design.HardwareProfileSpec, inv []drivers.FirmwareComponent) (want, diffs []string) {
	for _, fb := range hw.Firmware {
		devs := fb.Devices
		want = append(want, fmt.Sprintf("%s%s %s", fb.Component, devicesWord(devs), fb.Version))
		items := baselineItems(hw, fb, inv)
		for _, a := range missingDevices(hw, fb, items) {
			diffs = append(diffs, fmt.Sprintf("%s %s: absent, want %s", fb.Component, a, fb.Version))
		}
		if len(items) == 0 && len(devs) == 0 {
			diffs = append(diffs, fmt.Sprintf("%s: absent from the BMC's firmware inventory, want %s", fb.Component, fb.Version))
		}
		for _, c := range items {
			if c.Version != fb.Version {
				diffs = append(diffs, fmt.Sprintf("%s %s: have %s, want %s", fb.Component, itemWord(c), orDefault(c.Version, "(no version)"), fb.Version))
			}
		}
	}
	return want, diffs
}

// baselineItems are the inventory items a baseline entry covers: those
// of its kind, and of its devices' addresses when it names devices.
func baselineItems(hw *design.HardwareProfileSpec, fb design.FirmwareBaseline, inv []drivers.FirmwareComponent) []drivers.FirmwareComponent {
	addrs := deviceAddresses(hw, fb.Devices)
	var out []drivers.FirmwareComponent
	for _, c := range inv {
		if c.Kind == fb.Component && (len(addrs) == 0 || slices.Contains(addrs, strings.ToLower(c.Device))) {
			out = append(out, c)
		}
	}
	return out
}

// missingDevices are the devices a baseline entry names that no item of
// the inventory is (alias and address).
func missingDevices(hw *design.HardwareProfileSpec, fb design.FirmwareBaseline, items []drivers.FirmwareComponent) []string {
	var out []string
	for _, alias := range fb.Devices {
		addr := strings.ToLower(hw.DeviceAliases[alias].Address)
		if !slices.ContainsFunc(items, func(c drivers.FirmwareComponent) bool { return strings.ToLower(c.Device) == addr }) {
			out = append(out, fmt.Sprintf("%s (%s)", alias, addr))
		}
	}
	return out
}

// deviceAddresses are the addresses of a profile's device aliases, lower
// case (PCI addresses as the BMC may spell them).
func deviceAddresses(hw *design.HardwareProfileSpec, aliases []string) []string {
	out := make([]string, 0, len(aliases))
	for _, a := range aliases {
		out = append(out, strings.ToLower(hw.DeviceAliases[a].Address))
	}
	return out
}

func devicesWord(devs []string) string {
	if len(devs) == 0 {
		return ""
	}
	return " [" + strings.Join(devs, ",") + "]"
}

func itemWord(c drivers.FirmwareComponent) string {
	w := c.ID
	if c.Device != "" {
		w += " (" + c.Device + ")"
	}
	return w
}

// BIOSDiff compares BIOS settings in effect with wanted ones: the wanted
// settings in words (sorted), and each difference as "attr: have X, want
// Y" (a setting the BMC does not report: "absent").
func BIOSDiff(want, have map[string]string) (wants, diffs []string) {
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		wants = append(wants, k+"="+want[k])
		got, ok := have[k]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: absent, want %s", k, want[k]))
		case !strings.EqualFold(got, want[k]): // true and True are one value
			diffs = append(diffs, fmt.Sprintf("%s: have %s, want %s", k, got, want[k]))
		}
	}
	return wants, diffs
}

// keepBaseline marks a node whose BMC was not read: its stored firmware
// and bios drift stay as they were.
func (p *reconcilePass) keepBaseline(node string) {
	if p.unreadBMC == nil {
		p.unreadBMC = map[string]bool{}
	}
	p.unreadBMC[node] = true
}

// baselineKind: firmware or bios drift.
func baselineKind(k record.DriftKind) bool {
	return k == record.DriftFirmware || k == record.DriftBIOS
}

// repairBaseline repairs firmware or bios drift with an apply_baseline
// task of the node (the Site's lifecycle.baseline.reboots decides whether
// it may reboot the machine; under deny a plan that needs a reboot stops
// before it changes anything). It submits none while a task holds the
// node, nor after the node's last apply_baseline failed (the failure is
// the operator's to look at: each run would fail the same way).
func (e *Engine) repairBaseline(ctx context.Context, d *design.Design, dr record.DriftRecord) (string, error) {
	if d == nil || d.Nodes[dr.Node] == nil {
		return "", fmt.Errorf("%w: node %s is not in the current design: no baseline to apply", ErrConflict, dr.Node)
	}
	if h := e.holder(record.NodeRecord{Name: dr.Node}); h != "" {
		return "", fmt.Errorf("%w: node %s is held by task %s; its %s drift is looked at again after it", ErrConflict, dr.Node, h, dr.Kind)
	}
	rec, _, err := e.rec.node(ctx, dr.Node)
	if err != nil {
		return "", err
	}
	if rec.Action == record.ActionApplyBaseline && rec.Outcome == record.OutcomeFailed {
		return "", fmt.Errorf("%w: node %s: its last apply_baseline (task %s) failed: %s; fix that, then run `orchestrator apply-baseline --node %s` (or accept the drift)",
			ErrConflict, dr.Node, rec.LastTask, rec.Reason, dr.Node)
	}
	t, err := e.Submit(ctx, record.Request{Action: record.ActionApplyBaseline, Requester: "reconciliation (" + string(dr.Kind) + " drift)",
		Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{dr.Node}}}}})
	if err != nil {
		return "", fmt.Errorf("node %s: submitting apply_baseline for its %s drift: %w", dr.Node, dr.Kind, err)
	}
	return fmt.Sprintf("apply_baseline task %s submitted for node %s", t.ID, dr.Node), nil
}
