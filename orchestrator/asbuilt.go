package orchestrator

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
)

// The as-built stage: after commissioning, the inventory the provisioner
// reported is compared with what the node's hardware profile expects
// (expect) and where the node's NICs are cabled (cabling, when the
// profile expects LLDP). A machine that differs fails the node, naming
// every difference, unless an operator accepted that very inventory
// (AcceptHardware). A machine that passes is then given the Site's
// hardware-fact tags its inventory has.

// collAsBuilt keeps each node's last as-built check and its acceptance:
// key node name → AsBuiltRecord.
const collAsBuilt = "as_built"

// maxMismatchesShown bounds the differences a failure message lists.
const maxMismatchesShown = 12

// asBuilt runs the as-built stage: (0) compare, (1) hardware tags.
func (r *nodeRun) asBuilt(ctx context.Context) (step, error) {
	if why, ok := r.asBuiltNothing(); ok {
		return advance("%s", why), nil
	}
	var exp *design.HardwareExpect
	if hw := r.n.Spec.Hardware; hw != nil {
		exp = hw.Expect
	}
	hwTags := siteHardwareTags(r.d)
	dn, err := r.e.serverNode(ctx, r.d, r.n, r.rec.MachineID)
	if err != nil {
		return step{}, err
	}
	// A check again after a failed one (a retry once the machine was
	// fixed and commissioned again) reads what the provisioner has now;
	// else the inventory commissioning just stored is the machine's.
	refresh := false
	if r.rec.Step == 0 {
		last, ok, err := r.e.asBuiltRecord(ctx, r.rec.Name)
		if err != nil {
			return step{}, err
		}
		refresh = ok && len(last.Mismatches) > 0 && last.MachineID == r.rec.MachineID
	}
	if refresh {
		err = r.recordInventory(ctx, dn)
	} else {
		err = r.ensureInventory(ctx, dn)
	}
	if err != nil {
		return step{}, err
	}
	inv, ok, err := NodeInventory(ctx, r.e.rec.s, r.rec.Name)
	if err != nil {
		return step{}, err
	}
	if !ok {
		return step{}, drivers.Errorf(drivers.Transient, "no inventory stored for machine %s", r.rec.MachineID)
	}
	if r.rec.Step == 0 {
		return r.asBuiltCheck(ctx, exp, inv, len(hwTags) > 0)
	}
	names := HardwareTagsOf(hwTags, inv)
	if len(names) == 0 {
		return advance("no hardware tag matches the machine's inventory"), nil
	}
	return r.applyHardwareTags(ctx, dn, names)
}

// asBuiltNothing answers why the node's as-built stage has nothing to
// check, when it has not: no hardware expectations, no hardware tags of
// its Site and no switch to read.
func (r *nodeRun) asBuiltNothing() (string, bool) {
	if hw := r.n.Spec.Hardware; hw != nil && hw.Expect != nil || len(siteHardwareTags(r.d)) > 0 || r.switchSideReader() != nil {
		return "", false
	}
	return fmt.Sprintf("no hardware expectations (hardware profile %s has no expect) and no hardware tags", orDefault(r.n.Spec.HardwareProfile, "none")), true
}

// asBuiltCheck compares and records the check.
func (r *nodeRun) asBuiltCheck(ctx context.Context, exp *design.HardwareExpect, inv drivers.Inventory, tags bool) (step, error) {
	var cabling map[string]design.Cable
	if exp != nil && exp.LLDP {
		cabling = r.n.Spec.Cabling
	}
	mism := AsBuiltMismatches(exp, cabling, inv, r.peerGPUs(ctx, exp, inv))
	sw, err := r.switchCabling(ctx, exp) // asbuilt_switch.go
	if err != nil {
		return step{}, err
	}
	mism = append(mism, sw.mism...)
	ab, _, err := r.e.asBuiltRecord(ctx, r.rec.Name)
	if err != nil {
		return step{}, err
	}
	ab.Node, ab.MachineID, ab.Inventory, ab.Checked, ab.Mismatches = r.rec.Name, inv.MachineID, InventoryDigest(inv), now(), mism
	var b batch
	b.put(collAsBuilt, r.rec.Name, ab)
	for _, ev := range sw.events {
		b.event(r.event(ev[0], "as-built", "%s", ev[1]))
	}
	accepted := ab.Accepted != nil && ab.Accepted.Inventory == ab.Inventory
	var msg string
	switch {
	case len(mism) == 0:
		msg = fmt.Sprintf("machine %s is as built: it has what hardware profile %s expects", inv.MachineID, r.n.Spec.HardwareProfile)
		if exp == nil {
			msg = fmt.Sprintf("machine %s: no hardware expectations to check", inv.MachineID)
		}
		msg += sw.note
	case accepted:
		msg = fmt.Sprintf("machine %s differs from hardware profile %s, accepted as built by %s at %s: %s", inv.MachineID, r.n.Spec.HardwareProfile,
			ab.Accepted.By, ab.Accepted.At.Format(time.RFC3339), MismatchSummary(mism))
		b.event(r.event("warn", "as-built", "%s", msg))
	default:
		reason := fmt.Sprintf("machine %s is not as built (hardware profile %s): %s; fix the hardware (or the design) and retry the task, or accept the machine as it is: `orchestrator accept-hardware %s`",
			inv.MachineID, r.n.Spec.HardwareProfile, MismatchSummary(mism), r.rec.Name)
		b.event(r.event("error", "as-built", "%d difference(s) from the design: %s", len(mism), MismatchSummary(mism)))
		if err := r.e.rec.write(ctx, &b); err != nil {
			return step{}, err
		}
		return failed("%s", reason), nil
	}
	if err := r.e.rec.write(ctx, &b); err != nil {
		return step{}, err
	}
	if !tags {
		return advance("%s", msg), nil
	}
	return sub("%s", msg), nil
}

// applyHardwareTags gives the machine its hardware tags (with the
// design's): through ApplyPlatform while it is Ready, through the
// repair of tags once deployed; a machine in another state keeps them
// for the configure stage or a later run.
func (r *nodeRun) applyHardwareTags(ctx context.Context, dn drivers.Node, names []string) (step, error) {
	for _, t := range names {
		if !slices.Contains(dn.Tags, t) {
			dn.Tags = append(slices.Clone(dn.Tags), t)
		}
	}
	ms, err := r.e.status(ctx, []drivers.NodeRef{r.ref()})
	if err != nil {
		return step{}, err
	}
	state := ""
	if len(ms) == 1 {
		state = ms[0].State
		if slices.Equal(intersect(ms[0].Tags, names), names) {
			return advance("hardware tags %s already on machine %s", strings.Join(names, ", "), r.rec.MachineID), nil
		}
	}
	var res drivers.Result
	switch state {
	case "Ready":
		err = r.e.callServer(ctx, func(ctx context.Context) (err error) {
			res, err = r.e.cfg.Drivers.Server.ApplyPlatform(ctx, dn)
			return err
		})
	case "Deployed":
		fix, ok := r.e.cfg.Drivers.Server.(machineRepairer)
		if !ok {
			return advance("hardware tags %s not applied: machine %s is Deployed and the server driver cannot tag it", strings.Join(names, ", "), r.rec.MachineID), nil
		}
		err = r.e.callServer(ctx, func(ctx context.Context) (err error) {
			res, err = fix.RepairMachine(ctx, dn, []string{string(record.DriftTags)})
			return err
		})
	default:
		return advance("hardware tags %s not applied: machine %s is %s", strings.Join(names, ", "), r.rec.MachineID, orDefault(state, "unknown")), nil
	}
	if err != nil {
		return step{}, err
	}
	return r.result(res, false, func() step {
		return advance("hardware tags %s: %s", strings.Join(names, ", "), res.Message)
	})
}

func intersect(have, want []string) []string {
	var out []string
	for _, w := range want {
		if slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// peerGPUs are the GPU addresses of another node of the same hardware
// profile whose machine has the expected GPUs: the layout a machine
// missing some is compared with to name the missing ones (nil when no
// such node has been inventoried).
func (r *nodeRun) peerGPUs(ctx context.Context, exp *design.HardwareExpect, inv drivers.Inventory) []string {
	if exp == nil || exp.GPUs == nil || exp.GPUs.Count <= 0 || len(matchingGPUs(exp.GPUs, inv)) >= exp.GPUs.Count {
		return nil
	}
	if len(exp.GPUs.Addresses) > 0 { // the design names the slots
		return normalPCI(exp.GPUs.Addresses)
	}
	for _, name := range r.d.NodeNames() {
		n := r.d.Nodes[name]
		if name == r.rec.Name || n.Spec.HardwareProfile != r.n.Spec.HardwareProfile {
			continue
		}
		other, ok, err := NodeInventory(ctx, r.e.rec.s, name)
		if err != nil || !ok || other.MachineID == inv.MachineID {
			continue
		}
		if g := matchingGPUs(exp.GPUs, other); len(g) == exp.GPUs.Count {
			out := make([]string, len(g))
			for i, d := range g {
				out[i] = d.Address
			}
			return out
		}
	}
	return nil
}

// asBuiltRecord reads a node's as-built record (false: none yet).
func (e *Engine) asBuiltRecord(ctx context.Context, node string) (record.AsBuiltRecord, bool, error) {
	var ab record.AsBuiltRecord
	err := e.rec.getJSON(ctx, collAsBuilt, node, &ab)
	if errors.Is(err, ErrNotFound) || errors.Is(err, statestore.ErrNoRecord) {
		return record.AsBuiltRecord{}, false, nil
	}
	return ab, err == nil, err
}

// AsBuilt returns a node's last as-built check; ErrNotFound when it had
// none.
func (e *Engine) AsBuilt(ctx context.Context, node string) (record.AsBuiltRecord, error) {
	ab, ok, err := e.asBuiltRecord(ctx, node)
	if err == nil && !ok {
		err = fmt.Errorf("%w: node %.80q has had no as-built check (prepare_nodes or deploy_nodes runs it after commissioning)", ErrNotFound, node)
	}
	return ab, err
}

// AcceptHardware records an operator's acceptance of the inventory a
// node's last as-built check found lacking: the next check of the same
// inventory passes (retry the task), a check of any other fails as
// before. An ErrConflict when there is nothing to accept.
func (e *Engine) AcceptHardware(ctx context.Context, node, who string) (record.AsBuiltRecord, error) {
	if err := e.inCurrentDesign(ctx, node); err != nil {
		return record.AsBuiltRecord{}, err
	}
	rec, _, err := e.rec.node(ctx, node)
	if err != nil {
		return record.AsBuiltRecord{}, err
	}
	if h := e.holder(rec); h != "" && rec.Stage == record.StageAsBuilt {
		return record.AsBuiltRecord{}, fmt.Errorf("%w: node %s is being checked by task %s; accept its machine once the check has failed", ErrConflict, node, h)
	}
	ab, ok, err := e.asBuiltRecord(ctx, node)
	if err != nil {
		return record.AsBuiltRecord{}, err
	}
	switch {
	case !ok:
		return record.AsBuiltRecord{}, fmt.Errorf("%w: node %s has had no as-built check to accept: prepare_nodes or deploy_nodes checks it after commissioning", ErrConflict, node)
	case len(ab.Mismatches) == 0:
		return record.AsBuiltRecord{}, fmt.Errorf("%w: node %s: the last as-built check of machine %s (%s) found no difference; nothing to accept", ErrConflict, node, ab.MachineID, ab.Checked.Format(time.RFC3339))
	}
	who = orDefault(who, "unknown")
	ab.Accepted = &record.HardwareAcceptance{Inventory: ab.Inventory, MachineID: ab.MachineID, By: who, At: now(), Mismatches: ab.Mismatches}
	var b batch
	b.put(collAsBuilt, node, ab)
	b.event(record.Event{Time: now(), Node: node, Stage: record.StageAsBuilt, Level: "warn", Kind: "verb",
		Message: fmt.Sprintf("accept-hardware by %s: machine %s accepted as built (inventory %s) with %d difference(s): %s; retry the task to go on",
			who, ab.MachineID, ab.Inventory, len(ab.Mismatches), MismatchSummary(ab.Mismatches))})
	if err := e.rec.write(ctx, &b); err != nil {
		return record.AsBuiltRecord{}, err
	}
	return ab, nil
}

// siteHardwareTags are the Site's hardware-fact tags.
func siteHardwareTags(d *design.Design) []design.HardwareTag {
	if d == nil || d.Site == nil {
		return nil
	}
	return d.Site.Spec.HardwareTags
}

// MismatchSummary joins differences into one bounded message.
func MismatchSummary(m []string) string {
	if len(m) <= maxMismatchesShown {
		return strings.Join(m, "; ")
	}
	return strings.Join(m[:maxMismatchesShown], "; ") + fmt.Sprintf("; … and %d more", len(m)-maxMismatchesShown)
}

// InventoryDigest identifies an inventory: a hash of its hardware facts
// and machine, independent of the order the provisioner listed them in.
func InventoryDigest(inv drivers.Inventory) string {
	c := inv
	c.NICs = slices.Clone(inv.NICs)
	c.GPUs = slices.Clone(inv.GPUs)
	c.Disks = slices.Clone(inv.Disks)
	slices.SortFunc(c.NICs, func(a, b drivers.NIC) int { return cmp.Or(cmp.Compare(a.MAC, b.MAC), cmp.Compare(a.Name, b.Name)) })
	slices.SortFunc(c.GPUs, func(a, b drivers.PCIDevice) int { return cmp.Compare(a.Address, b.Address) })
	slices.SortFunc(c.Disks, func(a, b drivers.Disk) int { return cmp.Compare(a.Name, b.Name) })
	raw, _ := json.Marshal(c)
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:12])
}

// AsBuiltMismatches lists how an inventory differs from a hardware
// profile's expectations and a node's cabling (nil: as built). peerGPUs,
// when known, are the GPU addresses of a machine of the same profile
// that has them all: the missing ones are named by address. Every
// message names the part, what was found and what was expected.
func AsBuiltMismatches(exp *design.HardwareExpect, cabling map[string]design.Cable, inv drivers.Inventory, peerGPUs []string) []string {
	if exp == nil {
		exp = &design.HardwareExpect{}
	}
	var out []string
	out = append(out, cpuMismatch(exp.CPU, inv.CPU)...)
	out = append(out, memoryMismatch(exp.MemoryMin, inv.MemoryMiB)...)
	if g := exp.GPUs; g != nil {
		out = append(out, gpuMismatch(g, inv, peerGPUs)...)
	}
	for _, alias := range slices.Sorted(maps.Keys(exp.NICs)) {
		out = append(out, nicMismatch(alias, exp.NICs[alias], inv)...)
	}
	for _, alias := range slices.Sorted(maps.Keys(exp.Disks)) {
		out = append(out, diskMismatch(alias, exp.Disks[alias], inv)...)
	}
	out = append(out, firmwareMismatch(exp.Firmware, inv.Firmware)...)
	for _, alias := range slices.Sorted(maps.Keys(cabling)) {
		out = append(out, cablingMismatch(alias, cabling[alias], inv)...)
	}
	return out
}

// mismatches collects the messages of one part's comparison.
type mismatches []string

func (m *mismatches) add(format string, args ...any) { *m = append(*m, fmt.Sprintf(format, args...)) }

// cpuMismatch compares the logical CPU count and the model (nil c: no
// expectation).
func cpuMismatch(c *design.ExpectCPU, cpu drivers.CPU) (m mismatches) {
	if c == nil {
		return nil
	}
	if c.Count > 0 && cpu.Threads < c.Count {
		if cpu.Threads == 0 {
			m.add("CPU count unknown (commissioning reported none), expected at least %d", c.Count)
		} else {
			m.add("%d logical CPUs, expected at least %d", cpu.Threads, c.Count)
		}
	}
	if c.Model != "" && !matches(c.Model, cpu.Model) {
		m.add("CPU model %q does not match %s", cpu.Model, c.Model)
	}
	return m
}

// memoryMismatch compares the memory with its minimum ("": none; a size
// that does not parse is left to the design's validation).
func memoryMismatch(least string, memMiB int64) (m mismatches) {
	if least == "" {
		return nil
	}
	if sz, err := design.ParseSize(least); err == nil && memMiB<<20 < sz.Bytes {
		m.add("memory %s, expected at least %s", gib(memMiB<<20), least)
	}
	return m
}

// nicMismatch compares the NIC of one alias: found, speed, driver.
func nicMismatch(alias string, e design.ExpectNIC, inv drivers.Inventory) (m mismatches) {
	nic, ok := inv.NIC(alias)
	if !ok {
		m.add("%s: no NIC found for the alias", alias)
		return m
	}
	if e.SpeedMinMbps > 0 && nic.SpeedMbps < e.SpeedMinMbps {
		if nic.SpeedMbps == 0 {
			m.add("%s link down or speed unknown, expected at least %d Mb/s", alias, e.SpeedMinMbps)
		} else {
			m.add("%s at %d Mb/s, expected at least %d", alias, nic.SpeedMbps, e.SpeedMinMbps)
		}
	}
	if e.Driver != "" && nic.Driver != e.Driver {
		m.add("%s driver %s, expected %s", alias, orDefault(nic.Driver, "unknown"), e.Driver)
	}
	return m
}

// diskMismatch compares the disk of one alias (the last listed with it):
// found, size, model.
func diskMismatch(alias string, e design.ExpectDisk, inv drivers.Inventory) (m mismatches) {
	var disk *drivers.Disk
	for i := range inv.Disks {
		if inv.Disks[i].Alias == alias {
			disk = &inv.Disks[i]
		}
	}
	if disk == nil {
		m.add("%s: no disk found for the alias", alias)
		return m
	}
	if sz, err := design.ParseSize(e.SizeMin); e.SizeMin != "" && err == nil && disk.SizeBytes < sz.Bytes {
		m.add("%s (%s) is %s, expected at least %s", alias, disk.Name, gb(disk.SizeBytes), e.SizeMin)
	}
	if e.Model != "" && !matches(e.Model, disk.Model) {
		m.add("%s (%s) model %q does not match %s", alias, disk.Name, disk.Model, e.Model)
	}
	return m
}

// firmwareMismatch compares the BIOS and BMC firmware versions with their
// minimums (nil f: no expectation); a version that cannot be compared is
// a difference too.
func firmwareMismatch(f *design.ExpectFirmware, have drivers.Firmware) (m mismatches) {
	if f == nil {
		return nil
	}
	for _, fw := range []struct{ what, have, min string }{{"BIOS", have.BIOSVersion, f.BIOSMin}, {"BMC firmware", have.BMCVersion, f.BMCMin}} {
		if fw.min == "" {
			continue
		}
		ok, comparable := design.VersionAtLeast(fw.have, fw.min)
		switch {
		case !comparable:
			m.add("%s version %s, expected at least %s", fw.what, orDefault(strings.TrimSpace(fw.have), "unknown"), fw.min)
		case !ok:
			m.add("%s %s below %s", fw.what, fw.have, fw.min)
		}
	}
	return m
}

// cablingMismatch compares the LLDP neighbour of one alias's NIC with
// the switch port the design cables it to.
func cablingMismatch(alias string, want design.Cable, inv drivers.Inventory) (m mismatches) {
	nic, ok := inv.NIC(alias)
	switch {
	case !ok:
		m.add("%s: no NIC found for the alias, expected cabled to %s:%s", alias, want.Switch, want.Port)
	case nic.Neighbor == nil:
		m.add("%s sees no LLDP neighbour, expected %s:%s", alias, want.Switch, want.Port)
	case !strings.EqualFold(nic.Neighbor.Switch, want.Switch) || !strings.EqualFold(nic.Neighbor.Port, want.Port):
		m.add("%s cabled to %s:%s, expected %s:%s", alias, nic.Neighbor.Switch, nic.Neighbor.Port, want.Switch, want.Port)
	}
	return m
}

// gpuMismatch compares the GPUs: exactly Count matching the model.
func gpuMismatch(g *design.ExpectGPUs, inv drivers.Inventory, peer []string) []string {
	found := matchingGPUs(g, inv)
	if len(found) == g.Count {
		return nil
	}
	what := "GPU"
	if g.Model != "" {
		what = "GPU matching " + g.Model
	}
	addrs := make([]string, len(found))
	for i, d := range found {
		addrs[i] = d.Address
	}
	msg := fmt.Sprintf("expected %d x %s, found %d", g.Count, what, len(found))
	var missing []string
	for _, a := range peer {
		if !slices.Contains(addrs, a) {
			missing = append(missing, a)
		}
	}
	switch {
	case len(found) < g.Count && len(missing) > 0:
		msg += ": missing " + limitJoin(missing, 8)
	case len(found) > 0:
		msg += " (" + limitJoin(addrs, 8) + ")"
	}
	if other := len(inv.GPUs) - len(found); other > 0 && g.Model != "" {
		var names []string
		for _, d := range inv.GPUs {
			if !matches(g.Model, d.Model) {
				names = append(names, fmt.Sprintf("%s %s", d.Address, d.Model))
			}
		}
		msg += fmt.Sprintf("; %d other accelerator(s): %s", other, limitJoin(names, 4))
	}
	return []string{msg}
}

// matchingGPUs are the inventory's GPUs whose model matches g's.
func matchingGPUs(g *design.ExpectGPUs, inv drivers.Inventory) []drivers.PCIDevice {
	var out []drivers.PCIDevice
	for _, d := range inv.GPUs {
		if g.Model == "" || matches(g.Model, d.Model) {
			out = append(out, d)
		}
	}
	return out
}

// HardwareTagsOf are the names of the tags whose facts the inventory
// has (every fact of a tag must hold).
func HardwareTagsOf(tags []design.HardwareTag, inv drivers.Inventory) []string {
	var out []string
	for _, t := range tags {
		if t.Name != "" && hardwareTagMatches(t, inv) {
			out = append(out, t.Name)
		}
	}
	return out
}

// hardwareTagMatches is true when a tag asks for some fact and the
// inventory has every one it asks for (a minimum memory that does not
// parse matches nothing).
func hardwareTagMatches(t design.HardwareTag, inv drivers.Inventory) bool {
	if t.GPUs == nil && t.NICSpeedMinMbps <= 0 && t.CPU == nil && t.MemoryMin == "" {
		return false
	}
	if g := t.GPUs; g != nil && len(matchingGPUs(g, inv)) < max(g.Count, 1) {
		return false
	}
	if t.NICSpeedMinMbps > 0 && !hasNICAtLeast(inv, t.NICSpeedMinMbps) {
		return false
	}
	if t.CPU != nil && !cpuFits(t.CPU, inv.CPU) {
		return false
	}
	if t.MemoryMin != "" {
		if sz, err := design.ParseSize(t.MemoryMin); err != nil || inv.MemoryMiB<<20 < sz.Bytes {
			return false
		}
	}
	return true
}

// cpuFits is true when the CPU has at least c's logical CPUs and, when c
// names one, its model.
func cpuFits(c *design.ExpectCPU, cpu drivers.CPU) bool {
	return cpu.Threads >= c.Count && (c.Model == "" || matches(c.Model, cpu.Model))
}

// hasNICAtLeast is true when one of the inventory's NICs runs at mbps or
// faster.
func hasNICAtLeast(inv drivers.Inventory, mbps int) bool {
	return slices.ContainsFunc(inv.NICs, func(n drivers.NIC) bool { return n.SpeedMbps >= mbps })
}

// matches reports whether s matches the design's pattern (validation
// compiled it; one that does not compile matches nothing).
func matches(pattern, s string) bool {
	re, err := regexp.Compile(pattern)
	return err == nil && re.MatchString(s)
}

func limitJoin(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:n], ", ") + fmt.Sprintf(" and %d more", len(s)-n)
}

func gib(b int64) string { return fmt.Sprintf("%d GiB", b>>30) }

func gb(b int64) string {
	if b >= 1e12 {
		return fmt.Sprintf("%.2f TB", float64(b)/1e12)
	}
	return fmt.Sprintf("%.0f GB", float64(b)/1e9)
}

// normalPCI returns PCI addresses in the lower case inventories use.
func normalPCI(addrs []string) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = strings.ToLower(a)
	}
	return out
}
