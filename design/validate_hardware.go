package design

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The hardware rules: what a hardware profile expects of its machines
// (the as-built check's reference), where each node's NICs are cabled,
// the allocation constraints of nodes that are not pinned, and the
// Site's hardware-fact tags.
const (
	// RuleExpect checks a HardwareProfile's expect block: model patterns
	// that compile, sizes that parse, NIC and disk aliases of the
	// profile, counts and speeds that are not negative, firmware
	// minimums that are dotted numbers.
	RuleExpect = "expect"
	// RuleCabling checks a Node's cabling: aliases of the node's hardware
	// profile that are NICs, a switch port cabled once in the site, and
	// cabling on every node whose profile expects LLDP.
	RuleCabling = "cabling"
	// RuleConstraints checks a Node's allocation constraints: only on a
	// node without bootMac, sizes that parse, tags that are tag names.
	RuleConstraints = "constraints"
	// RuleHardwareTags checks the Site's hardwareTags: tag names, unique,
	// each with at least one fact, patterns and sizes that parse.
	RuleHardwareTags = "hardware-tags"
)

var (
	// versionRE is a firmware minimum: dotted numbers.
	versionRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)*$`)
	// tagNameRE is a provisioner tag name (MAAS's rule).
	tagNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
)

// reservedTagPrefix is the prefix of the MAAS driver's own tags.
const reservedTagPrefix = "slipway-kernel-"

// expect checks a hardware profile's expect block.
func (v *validator) expect(h *HardwareProfile) {
	e := h.Spec.Expect
	if e == nil {
		return
	}
	name := h.Metadata.Name
	bad := func(pos Pos, format string, args ...any) {
		v.r.errorf(RuleExpect, KindHardwareProfile, name, orPos(pos, e.Pos), format, args...)
	}
	if c := e.CPU; c != nil {
		if c.Count < 0 {
			bad(c.Pos, "expect.cpu.count %d is negative", c.Count)
		}
		v.pattern(c.Model, func(err string) { bad(c.Pos, "expect.cpu.model %.60q is not a regular expression: %s", c.Model, err) })
	}
	if e.MemoryMin != "" {
		if p := fixedSize(e.MemoryMin); p != "" {
			bad(e.MemoryMinPos, "expect.memoryMin: %s", p)
		}
	}
	if g := e.GPUs; g != nil {
		v.expectGPUs(bad, g)
	}
	aliases := strings.Join(sortedNames(h.Spec.DeviceAliases), ", ")
	for _, alias := range sortedNames(e.NICs) {
		n := e.NICs[alias]
		da, ok := h.Spec.DeviceAliases[alias]
		switch {
		case !ok:
			bad(n.Pos, "expect.nics.%s: %q is not one of this profile's deviceAliases (%s)", alias, alias, aliases)
		case da.Bus != "pci":
			bad(n.Pos, "expect.nics.%s: alias %s is on bus %s, not a NIC (pci)", alias, alias, da.Bus)
		}
		if n.SpeedMinMbps < 0 {
			bad(n.Pos, "expect.nics.%s.speedMinMbps %d is negative", alias, n.SpeedMinMbps)
		}
	}
	v.expectDisks(bad, h, aliases)
	if f := e.Firmware; f != nil {
		for _, fv := range []struct{ field, val string }{{"biosMin", f.BIOSMin}, {"bmcMin", f.BMCMin}} {
			if fv.val != "" && !versionRE.MatchString(fv.val) {
				bad(f.Pos, "expect.firmware.%s %.40q is not a version of dotted numbers like 2.1.0", fv.field, fv.val)
			}
		}
	}
}

// expectReport reports a problem of a profile's expect block at pos.
type expectReport func(pos Pos, format string, args ...any)

// expectGPUs checks expect.gpus: a count not negative, a model pattern,
// and as many distinct PCI addresses as the count, or none.
func (v *validator) expectGPUs(bad expectReport, g *ExpectGPUs) {
	if g.Count < 0 {
		bad(g.Pos, "expect.gpus.count %d is negative (0 expects no GPU)", g.Count)
	}
	v.pattern(g.Model, func(err string) { bad(g.Pos, "expect.gpus.model %.60q is not a regular expression: %s", g.Model, err) })
	if len(g.Addresses) > 0 && len(g.Addresses) != g.Count {
		bad(g.Pos, "expect.gpus.addresses lists %d addresses for count %d: list every GPU's, or none", len(g.Addresses), g.Count)
	}
	seen := map[string]bool{}
	for _, a := range g.Addresses {
		if !pciAddrRE.MatchString(a) {
			bad(g.Pos, "expect.gpus.addresses: %.40q is not a PCI address (dddd:bb:dd.f)", a)
		} else if seen[strings.ToLower(a)] {
			bad(g.Pos, "expect.gpus.addresses: %s is listed twice", a)
		}
		seen[strings.ToLower(a)] = true
	}
}

// expectDisks checks expect.disks: each a device alias of the profile
// (aliases lists them), with a fixed sizeMin and a model pattern.
func (v *validator) expectDisks(bad expectReport, h *HardwareProfile, aliases string) {
	e := h.Spec.Expect
	for _, alias := range sortedNames(e.Disks) {
		d := e.Disks[alias]
		if _, ok := h.Spec.DeviceAliases[alias]; !ok {
			bad(d.Pos, "expect.disks.%s: %q is not one of this profile's deviceAliases (%s)", alias, alias, aliases)
		}
		if d.SizeMin != "" {
			if p := fixedSize(d.SizeMin); p != "" {
				bad(d.Pos, "expect.disks.%s.sizeMin: %s", alias, p)
			}
		}
		v.pattern(d.Model, func(err string) {
			bad(d.Pos, "expect.disks.%s.model %.60q is not a regular expression: %s", alias, d.Model, err)
		})
	}
}

// pattern reports a model pattern that does not compile.
func (v *validator) pattern(p string, report func(err string)) {
	if p == "" {
		return
	}
	if _, err := regexp.Compile(p); err != nil {
		report(strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
}

// fixedSize is the problem of a size that must be a byte count ("" when
// it is one).
func fixedSize(s string) string {
	sz, err := ParseSize(s)
	switch {
	case err != nil:
		return err.Error()
	case sz.Percent > 0 || sz.AtLeast:
		return fmt.Sprintf("size %q must be a byte count like 512gi, not a share or a minimum", s)
	}
	return ""
}

// cabled is the first use of a switch port.
type cabled struct {
	node, alias string
	pos         Pos
}

// cabling checks a node's cabling; ports maps switch NUL port to its first
// cable (nodes are checked in name order).
func (v *validator) cabling(n *Node, ports map[string]cabled) {
	name, s := n.Metadata.Name, &n.Spec
	hw := s.Hardware
	if len(s.Cabling) == 0 {
		if hw != nil && hw.Expect != nil && hw.Expect.LLDP {
			v.r.errorf(RuleCabling, KindNode, name, n.Metadata.Pos,
				"hardware profile %s expects LLDP (expect.lldp) but the node has no cabling; add cabling: {ALIAS: {switch: SWITCH, port: PORT}} for its NICs", s.HardwareProfile)
		}
		return
	}
	for _, alias := range sortedNames(s.Cabling) {
		c := s.Cabling[alias]
		pos := orPos(c.Pos, orPos(s.CablingPos, n.Metadata.Pos))
		switch {
		case hw == nil:
			v.r.errorf(RuleCabling, KindNode, name, pos, "cabling.%s: the node has no hardware profile, so no device aliases to cable", alias)
		case hw.DeviceAliases[alias].Bus == "":
			v.r.errorf(RuleCabling, KindNode, name, pos, "cabling.%s: %q is not a deviceAlias of hardware profile %s (%s)",
				alias, alias, s.HardwareProfile, strings.Join(sortedNames(hw.DeviceAliases), ", "))
		case hw.DeviceAliases[alias].Bus != "pci":
			v.r.errorf(RuleCabling, KindNode, name, pos, "cabling.%s: alias %s is on bus %s, not a NIC (pci)", alias, alias, hw.DeviceAliases[alias].Bus)
		}
		if c.Switch == "" || c.Port == "" {
			continue // a missing required field, reported as such
		}
		if !v.cableNames(name, alias, pos, c) {
			continue
		}
		key := c.Switch + "\x00" + c.Port // neither holds a control character (cableNames)
		if first, dup := ports[key]; dup {
			v.r.errorf(RuleCabling, KindNode, name, pos, "cabling.%s: switch port %s:%s is already cabled to %s %s (%s); a port takes one cable",
				alias, c.Switch, c.Port, first.node, first.alias, first.pos)
			continue
		}
		ports[key] = cabled{name, alias, pos}
	}
}

// Unpinned reports whether the node's machine is the provisioner's
// choice: the node has allocation constraints, and neither a boot MAC nor
// a BMC address that would identify one machine. Such a node needs no
// oob block: the provisioner allocates a commissioned machine and powers
// it through the BMC it knows.
func (n *Node) Unpinned() bool {
	return n != nil && n.Spec.Constraints != nil && n.Spec.BootMAC == "" && n.Spec.OOB.Address == ""
}

// constraints checks a node's allocation constraints.
func (v *validator) constraints(n *Node) {
	name, c := n.Metadata.Name, n.Spec.Constraints
	if c == nil {
		return
	}
	pos := orPos(c.Pos, n.Metadata.Pos)
	if n.Spec.BootMAC != "" {
		v.r.errorf(RuleConstraints, KindNode, name, pos,
			"constraints choose a machine for a node that is not pinned, but the node has bootMac %s; remove one of them", n.Spec.BootMAC)
	}
	if c.MinCPU < 0 {
		v.r.errorf(RuleConstraints, KindNode, name, pos, "constraints.minCpu %d is negative", c.MinCPU)
	}
	if c.MinMemory != "" {
		if p := fixedSize(c.MinMemory); p != "" {
			v.r.errorf(RuleConstraints, KindNode, name, orPos(c.MinMemoryPos, pos), "constraints.minMemory: %s", p)
		}
	}
	for i, t := range c.Tags {
		if !tagNameRE.MatchString(t) {
			v.r.errorf(RuleConstraints, KindNode, name, orPos(c.TagsPos, pos), "constraints.tags[%d] %.60q is not a tag name (letters, digits, - and _)", i, t)
		}
	}
}

// hardwareTags checks the Site's hardware-fact tags.
func (v *validator) hardwareTags() {
	s := v.d.Site
	if s == nil {
		return
	}
	name := s.Metadata.Name
	seen := map[string]int{}
	for i, t := range s.Spec.HardwareTags {
		pos := orPos(t.Pos, orPos(s.Spec.HardwareTagsPos, s.Metadata.Pos))
		what := "hardwareTags[" + strconv.Itoa(i) + "]"
		bad := func(format string, args ...any) {
			v.r.errorf(RuleHardwareTags, KindSite, name, pos, what+": "+format, args...)
		}
		switch {
		case t.Name == "":
			// a missing required field, reported as such
		case !tagNameRE.MatchString(t.Name):
			bad("name %.60q is not a tag name (letters, digits, - and _)", t.Name)
		case strings.HasPrefix(t.Name, reservedTagPrefix):
			bad("name %s: the prefix %s is the MAAS driver's (kernel parameters)", t.Name, reservedTagPrefix)
		}
		if j, dup := seen[t.Name]; dup && t.Name != "" {
			bad("tag %s is already defined by hardwareTags[%d]", t.Name, j)
		} else {
			seen[t.Name] = i
		}
		if t.GPUs == nil && t.NICSpeedMinMbps == 0 && t.CPU == nil && t.MemoryMin == "" {
			bad("tag %s names no fact; give it gpus, nicSpeedMinMbps, cpu or memoryMin", t.Name)
		}
		if g := t.GPUs; g != nil {
			if g.Count < 1 {
				bad("gpus.count %d: a tag counts at least one GPU", g.Count)
			}
			v.pattern(g.Model, func(err string) { bad("gpus.model %.60q is not a regular expression: %s", g.Model, err) })
		}
		if c := t.CPU; c != nil {
			if c.Count < 0 {
				bad("cpu.count %d is negative", c.Count)
			}
			v.pattern(c.Model, func(err string) { bad("cpu.model %.60q is not a regular expression: %s", c.Model, err) })
		}
		if t.NICSpeedMinMbps < 0 {
			bad("nicSpeedMinMbps %d is negative", t.NICSpeedMinMbps)
		}
		if t.MemoryMin != "" {
			if p := fixedSize(t.MemoryMin); p != "" {
				bad("memoryMin: %s", p)
			}
		}
	}
}

// VersionAtLeast compares a firmware version as found with a minimum of
// dotted numbers: the found version's first run of dotted numbers ("U46
// v2.80" → 2.80) is compared number by number, a missing number counting
// as 0. comparable is false when the found version has no number.
func VersionAtLeast(found, minimum string) (ok, comparable bool) {
	have := leadingVersion(found)
	if have == nil {
		return false, false
	}
	want := leadingVersion(minimum)
	for i := 0; i < max(len(have), len(want)); i++ {
		var h, w int
		if i < len(have) {
			h = have[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if h != w {
			return h > w, true
		}
	}
	return true, true
}

var dottedRE = regexp.MustCompile(`[0-9]+(\.[0-9]+)*`)

func leadingVersion(s string) []int {
	m := dottedRE.FindString(s)
	if m == "" {
		return nil
	}
	var out []int
	for _, p := range strings.Split(m, ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			n = 1 << 30 // a number too long to be a version part: larger than any minimum
		}
		out = append(out, n)
	}
	return out
}
