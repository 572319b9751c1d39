package lab

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/sim/maas"
)

// The lab's machines have the hardware their node's design describes:
// the hardware profile's vendor and model, what its expect block asks
// for (CPU count and model, memory, GPUs, NIC speeds and drivers, disk
// sizes and models, firmware at least the minimum versions), and the
// LLDP neighbours of its cabling. What the design leaves open takes the
// lab's defaults below. The faults file then makes a machine differ
// from its design (maas.MachineFaults.ApplyHardware).

// Lab defaults.
const (
	defaultCPUs      = 32
	defaultMemoryMiB = 262144
	defaultNICMbps   = 25000
	defaultDiskBytes = 960e9
	defaultBIOS      = "2.1.0"
	defaultBMC       = "5.10"
	nicFirmware      = "4.40 0x8001c967 1.3534.0"
)

// Catalogues: a design's model pattern takes the first entry it matches,
// else a string generated from the pattern.
var (
	cpuModels = []string{"Intel(R) Xeon(R) Gold 6430", "Intel(R) Xeon(R) Platinum 8480+",
		"AMD EPYC 9654 96-Core Processor", "AMD EPYC 7763 64-Core Processor"}
	gpuModels = []struct{ product, id string }{
		{"GH100 [H100 SXM5 80GB]", "2330"}, {"GH100 [H100 PCIe]", "2331"}, {"GA100 [A100 SXM4 80GB]", "20b2"},
		{"AD102GL [L40S]", "26b9"}, {"GB100 [B200]", "2901"},
	}
	diskModels = []string{"SAMSUNG MZQL23T8HCLS-00A07", "Micron_7450_MTFDKCC3T8TFS", "INTEL SSDPF2KX038TZ", "ST4000NM000A-2HZ100"}
	// gpuSlots are the PCI addresses of the GPUs of an 8-GPU board.
	gpuSlots = []string{"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
		"0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"}
)

// maxGPUs bounds the GPUs the lab builds for one machine.
const maxGPUs = 64

// applyProfile fills hw from the node's hardware profile and design:
// the system identity, CPU, memory, GPUs, firmware, each NIC's details
// and neighbour, each disk's model and size, and the machine's place
// (zone, pool, tags) from the node's constraints.
func applyProfile(hw *maas.Hardware, n *design.Node) {
	name := n.Metadata.Name
	hw.Serial = serialNumber(name, "system")
	hw.CPUs, hw.MemoryMiB = defaultCPUs, defaultMemoryMiB
	hw.CPUSockets, hw.CPUSpeedMHz = 2, 2100
	hw.BIOSVendor, hw.BIOSVersion, hw.BIOSDate, hw.BMCVersion = orDefault(hw.Vendor, "Lab"), defaultBIOS, "01/15/2026", defaultBMC
	hw.CPUModel = cpuModels[0]
	var exp *design.HardwareExpect
	if h := n.Spec.Hardware; h != nil {
		exp = h.Expect
	}
	if exp != nil {
		applyExpectedCore(hw, exp)
	}
	hw.CPUCores = max(hw.CPUs/2, 1)
	if hw.CPUs < hw.CPUSockets {
		hw.CPUSockets = 1
	}
	hw.GPUs = gpus(hw, exp)
	for i := range hw.NICs {
		applyNICProfile(&hw.NICs[i], exp, n.Spec.Cabling)
	}
	for i := range hw.Disks {
		d := &hw.Disks[i]
		d.Vendor = "Lab"
		if exp == nil {
			continue
		}
		if e, ok := exp.Disks[d.Alias]; ok {
			if sz, err := design.ParseSize(e.SizeMin); err == nil && sz.Bytes > d.Size {
				d.Size = sz.Bytes
			}
			if e.Model != "" {
				d.Model = matching(e.Model, diskModels, d.Model)
			}
		}
	}
	if c := n.Spec.Constraints; c != nil {
		hw.Zone, hw.Pool, hw.Tags = c.Zone, c.Pool, append([]string(nil), c.Tags...)
	}
}

// applyExpectedCore gives the machine the CPUs, memory and firmware the
// design expects of it (at least).
func applyExpectedCore(hw *maas.Hardware, exp *design.HardwareExpect) {
	if c := exp.CPU; c != nil {
		if c.Count > 0 {
			hw.CPUs = min(c.Count, 4096)
		}
		if c.Model != "" {
			hw.CPUModel = matching(c.Model, cpuModels, hw.CPUModel)
		}
	}
	if sz, err := design.ParseSize(exp.MemoryMin); err == nil && sz.Bytes > 0 {
		hw.MemoryMiB = int(min((sz.Bytes+(1<<20)-1)>>20, 1<<30))
	}
	if f := exp.Firmware; f != nil {
		hw.BIOSVersion = atLeast(hw.BIOSVersion, f.BIOSMin)
		hw.BMCVersion = atLeast(hw.BMCVersion, f.BMCMin)
	}
}

// applyNICProfile gives a NIC the driver and speed the design expects of
// it (at least), and the switch port its cabling names as LLDP neighbour.
func applyNICProfile(nic *maas.NIC, exp *design.HardwareExpect, cabling map[string]design.Cable) {
	nic.Driver, nic.Firmware, nic.MaxMbps = "ice", nicFirmware, defaultNICMbps
	nic.NUMANode = numaOf(nic.PCI)
	if exp != nil {
		if e, ok := exp.NICs[nic.Alias]; ok {
			if e.SpeedMinMbps > 0 {
				nic.MaxMbps = max(nic.MaxMbps, min(e.SpeedMinMbps, 1600000))
			}
			if e.Driver != "" {
				nic.Driver = e.Driver
			}
		}
	}
	nic.SpeedMbps = nic.MaxMbps
	nic.Vendor, nic.Product = nicModel(nic.Driver, nic.MaxMbps)
	if c, ok := cabling[nic.Alias]; ok && nic.Alias != "" {
		nic.Neighbor = &maas.LLDPNeighbor{ChassisID: mac("switch", c.Switch), SysName: c.Switch, PortID: c.Port, PortDescr: c.Port}
	}
}

// gpus builds the GPUs the profile expects: count of them, of a model
// its pattern matches, at the board's GPU slots (those the design's
// other devices do not take), the first half on NUMA node 0.
func gpus(hw *maas.Hardware, exp *design.HardwareExpect) []maas.PCIDevice {
	if exp == nil || exp.GPUs == nil || exp.GPUs.Count <= 0 {
		return nil
	}
	count := min(exp.GPUs.Count, maxGPUs)
	product, id := gpuModels[0].product, gpuModels[0].id
	if exp.GPUs.Model != "" {
		names := make([]string, len(gpuModels))
		for i, g := range gpuModels {
			names[i] = g.product
		}
		product = matching(exp.GPUs.Model, names, product)
		id = ""
		for _, g := range gpuModels {
			if g.product == product {
				id = g.id
			}
		}
	}
	used := map[string]bool{}
	for _, n := range hw.NICs {
		used[n.PCI] = true
	}
	for _, d := range hw.Disks {
		used[d.Addr] = true
	}
	var out []maas.PCIDevice
	for i := 0; len(out) < count && i < 256*4; i++ {
		addr := fmt.Sprintf("0000:%02x:00.0", (0x18+i*0x11)%256)
		switch {
		case i < len(exp.GPUs.Addresses): // the design names the board's slots
			addr = strings.ToLower(exp.GPUs.Addresses[i])
		case len(exp.GPUs.Addresses) == 0 && i < len(gpuSlots):
			addr = gpuSlots[i]
		}
		if used[addr] {
			continue
		}
		used[addr] = true
		out = append(out, maas.PCIDevice{PCI: addr, Vendor: "NVIDIA Corporation", Product: product, VendorID: "10de",
			ProductID: id, Driver: "nvidia"})
	}
	for i := range out {
		out[i].NUMANode = 0
		if hw.CPUSockets > 1 && i >= (len(out)+1)/2 {
			out[i].NUMANode = 1
		}
	}
	return out
}

// numaOf places a PCI device on a socket by its bus, as two-socket
// boards split them: buses from 0x80 on the second socket.
func numaOf(pci string) int {
	p := strings.Split(pci, ":")
	if len(p) < 2 {
		return 0
	}
	if b, err := strconv.ParseUint(p[1], 16, 8); err == nil && b >= 0x80 {
		return 1
	}
	return 0
}

// matching returns the first of the catalogue that the pattern matches,
// else a string generated to match it, else def.
func matching(pattern string, catalogue []string, def string) string {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return def
	}
	for _, c := range catalogue {
		if re.MatchString(c) {
			return c
		}
	}
	if s, ok := sample(pattern); ok && re.MatchString(s) {
		return s
	}
	return def
}

// sample generates a short string the regular expression matches: the
// first alternative, the minimum repetitions, a class's first printable
// rune.
func sample(pattern string) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	ok := writeSample(&b, re.Simplify(), 0)
	return b.String(), ok && b.Len() <= 1024
}

func writeSample(b *strings.Builder, re *syntax.Regexp, depth int) bool {
	if depth > 100 || b.Len() > 1024 {
		return false
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return false
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		if len(re.Rune) < 2 {
			return false
		}
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := max(re.Rune[i], ' '), re.Rune[i+1]
			if lo <= hi {
				b.WriteRune(lo)
				return true
			}
		}
		b.WriteRune(re.Rune[0])
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('x')
	case syntax.OpCapture:
		return writeSample(b, re.Sub[0], depth+1)
	case syntax.OpPlus:
		return writeSample(b, re.Sub[0], depth+1)
	case syntax.OpRepeat:
		for i := 0; i < min(re.Min, 64); i++ {
			if !writeSample(b, re.Sub[0], depth+1) {
				return false
			}
		}
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !writeSample(b, s, depth+1) {
				return false
			}
		}
	case syntax.OpAlternate:
		return writeSample(b, re.Sub[0], depth+1)
	}
	return true // star, quest, empty, anchors: nothing
}

// atLeast returns v, or min when v is the lower dotted version.
func atLeast(v, minimum string) string {
	if minimum == "" || compareVersions(v, minimum) >= 0 {
		return v
	}
	return minimum
}

// compareVersions compares dotted versions field by field as numbers
// (a field that is no number compares as text).
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y string
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		xn, xerr := strconv.ParseUint(orDefault(x, "0"), 10, 64)
		yn, yerr := strconv.ParseUint(orDefault(y, "0"), 10, 64)
		switch {
		case xerr == nil && yerr == nil && xn != yn:
			if xn < yn {
				return -1
			}
			return 1
		case (xerr != nil || yerr != nil) && x != y:
			return strings.Compare(x, y)
		}
	}
	return 0
}

// nicModel is a card that the driver drives at that speed.
func nicModel(driver string, mbps int) (vendor, product string) {
	switch driver {
	case "mlx5_core":
		if mbps > 100000 {
			return "Mellanox Technologies", "MT2910 Family [ConnectX-7]"
		}
		return "Mellanox Technologies", "MT2892 Family [ConnectX-6 Dx]"
	case "i40e":
		if mbps > 10000 {
			return "Intel Corporation", "Ethernet Controller XL710 for 40GbE QSFP+"
		}
		return "Intel Corporation", "Ethernet Controller X710 for 10GbE SFP+"
	case "bnxt_en":
		return "Broadcom Inc. and subsidiaries", "BCM57508 NetXtreme-E 10Gb/25Gb/40Gb/50Gb/100Gb/200Gb Ethernet"
	case "igb":
		return "Intel Corporation", "I350 Gigabit Network Connection"
	case "ice", "":
		if mbps > 25000 {
			return "Intel Corporation", "Ethernet Controller E810-C for QSFP"
		}
	}
	return "Intel Corporation", "Ethernet Controller E810-XXV"
}
