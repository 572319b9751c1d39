package design_test

import (
	"testing"

	"github.com/slipway-dev/slipway/design"
)

// expectHW is the base hardware profile with an expect block appended.
func expectHW(lines string) edit {
	return rep(hwF, "    disk0: {bus: scsi, address: \"2:0.0.0\"}\n", "    disk0: {bus: scsi, address: \"2:0.0.0\"}\n  expect:\n"+lines)
}

// cable gives node n (n1, n2, n3) cabling lines.
func cable(n, lines string) edit {
	return rep(nodesF, "  hostProfile: compute # @"+n+"-hp\n", "  hostProfile: compute # @"+n+"-hp\n  cabling:\n"+lines)
}

// hwTagsSite is the base Site with hardwareTags lines appended.
func hwTagsSite(lines string) edit {
	return rep(siteF, "      kernel: ga-22.04\n", "      kernel: ga-22.04\n  hardwareTags:\n"+lines)
}

// everyCabled cables data0 of the three nodes to distinct ports.
var everyCabled = []edit{
	cable("n1", "    data0: {switch: leaf-r01, port: Ethernet1}\n"),
	cable("n2", "    data0: {switch: leaf-r01, port: Ethernet2}\n"),
	cable("n3", "    data0: {switch: leaf-r01, port: Ethernet3}\n"),
}

var hardwareCases = []ruleCase{
	// expect
	{rule: "expect", name: "gpu model that is not a regular expression",
		edits: []edit{expectHW("    gpus: {count: 8, model: \"H100[\"} # @gpus\n")},
		want:  []exp{fail("expect", "HardwareProfile", "hw1", hwF+"@gpus", `expect.gpus.model "H100[" is not a regular expression: missing closing ]`)}},
	{rule: "expect", name: "memoryMin that does not parse",
		edits: []edit{expectHW("    memoryMin: 512GB # @mem\n")},
		want:  []exp{fail("expect", "HardwareProfile", "hw1", hwF+"@mem", `expect.memoryMin: size "512GB" does not parse`)}},
	{rule: "expect", name: "memoryMin as a share",
		edits: []edit{expectHW("    memoryMin: 50% # @mem\n")},
		want:  []exp{fail("expect", "HardwareProfile", "hw1", hwF+"@mem", `must be a byte count like 512gi`)}},
	{rule: "expect", name: "nic alias the profile does not have",
		edits: []edit{expectHW("    nics:\n      data9: {speedMinMbps: 25000} # @nic\n")},
		want:  []exp{fail("expect", "HardwareProfile", "hw1", hwF+"@nic", `expect.nics.data9: "data9" is not one of this profile's deviceAliases (data0, data1, disk0, pxe0)`)}},
	{rule: "expect", name: "nic alias that is a disk",
		edits: []edit{expectHW("    nics:\n      disk0: {speedMinMbps: 25000} # @nic\n")},
		want:  []exp{fail("expect", "HardwareProfile", "hw1", hwF+"@nic", `alias disk0 is on bus scsi, not a NIC`)}},
	{rule: "expect", name: "disk alias missing and size that does not parse",
		edits: []edit{expectHW("    disks:\n      disk1: {sizeMin: 3.8x} # @disk\n")},
		want: []exp{
			fail("expect", "HardwareProfile", "hw1", hwF+"@disk", `expect.disks.disk1: "disk1" is not one of this profile's deviceAliases`),
			fail("expect", "HardwareProfile", "hw1", hwF+"@disk", `expect.disks.disk1.sizeMin: size "3.8x" does not parse`),
		}},
	{rule: "expect", name: "firmware minimum that is not dotted numbers",
		edits: []edit{expectHW("    firmware: {biosMin: v2.1, bmcMin: \"5.10\"} # @fw\n")},
		want:  []exp{fail("expect", "HardwareProfile", "hw1", hwF+"@fw", `expect.firmware.biosMin "v2.1" is not a version of dotted numbers`)}},
	{rule: "expect", name: "negative counts and speeds",
		edits: []edit{expectHW("    cpu: {count: -1} # @cpu\n    nics:\n      data0: {speedMinMbps: -1} # @nic\n")},
		want: []exp{
			fail("expect", "HardwareProfile", "hw1", hwF+"@cpu", "expect.cpu.count -1 is negative"),
			fail("expect", "HardwareProfile", "hw1", hwF+"@nic", "expect.nics.data0.speedMinMbps -1 is negative"),
		}},
	{rule: "schema", name: "unknown field in expect",
		edits: []edit{expectHW("    gpu: {count: 8} # @gpu\n")},
		want:  []exp{fail("schema", "HardwareProfile", "hw1", hwF+"@gpu", `unknown field "gpu" in spec.expect`)}},
	{rule: "expect", name: "gpu addresses: not an address, twice",
		edits: []edit{expectHW("    gpus: {count: 3, addresses: [\"0000:18:00.0\", \"18:00\", \"0000:18:00.0\"]} # @gpus\n")},
		want: []exp{
			fail("expect", "HardwareProfile", "hw1", hwF+"@gpus", `expect.gpus.addresses: "18:00" is not a PCI address`),
			fail("expect", "HardwareProfile", "hw1", hwF+"@gpus", `expect.gpus.addresses: 0000:18:00.0 is listed twice`),
		}},
	{rule: "expect", name: "gpu addresses fewer than the count",
		edits: []edit{expectHW("    gpus: {count: 2, addresses: [\"0000:18:00.0\"]} # @gpus\n")},
		want:  []exp{fail("expect", "HardwareProfile", "hw1", hwF+"@gpus", `expect.gpus.addresses lists 1 addresses for count 2`)}},
	{rule: "expect", name: "ok: gpus in named slots",
		edits: []edit{expectHW("    gpus: {count: 2, model: H100, addresses: [\"0000:18:00.0\", \"0000:2A:00.0\"]}\n")}},
	{rule: "expect", name: "ok: every part of an expect block",
		edits: []edit{expectHW(`    cpu: {count: 64, model: "Xeon|EPYC"}
    memoryMin: 512gi
    gpus: {count: 8, model: H100}
    nics:
      data0: {speedMinMbps: 25000, driver: ice}
      data1: {speedMinMbps: 25000}
    disks:
      disk0: {sizeMin: 960g, model: "SAMSUNG|Micron"}
    firmware: {biosMin: 2.1.0, bmcMin: "5.10"}
`)}},

	// cabling
	{rule: "cabling", name: "alias the hardware profile does not have",
		edits: []edit{cable("n1", "    data7: {switch: leaf-r01, port: Ethernet1} # @c\n")},
		want:  []exp{fail("cabling", "Node", "n1", nodesF+"@c", `cabling.data7: "data7" is not a deviceAlias of hardware profile hw1 (data0, data1, disk0, pxe0)`)}},
	{rule: "cabling", name: "alias that is a disk",
		edits: []edit{cable("n1", "    disk0: {switch: leaf-r01, port: Ethernet1} # @c\n")},
		want:  []exp{fail("cabling", "Node", "n1", nodesF+"@c", `cabling.disk0: alias disk0 is on bus scsi, not a NIC`)}},
	{rule: "cabling", name: "a switch port cabled twice",
		edits: []edit{
			cable("n1", "    data0: {switch: leaf-r01, port: Ethernet12}\n"),
			cable("n2", "    data1: {switch: leaf-r01, port: Ethernet12} # @c2\n"),
		},
		want: []exp{fail("cabling", "Node", "n2", nodesF+"@c2", "cabling.data1: switch port leaf-r01:Ethernet12 is already cabled to n1 data0 (nodes.yaml:")}},
	{rule: "cabling", name: "a switch or port name with a colon, which made two ports one",
		edits: []edit{
			cable("n1", "    data0: {switch: \"leaf:a\", port: b} # @c1\n"),
			cable("n2", "    data1: {switch: leaf, port: \"a:b\"} # @c2\n"),
			cable("n3", "    data0: {switch: \"leaf r03\", port: \"Ethernet\\t1\"} # @c3\n"),
		},
		want: []exp{
			fail("cabling", "Node", "n1", nodesF+"@c1", `cabling.data0: switch "leaf:a" is not a switch name (no ':', '/', spaces or control characters)`),
			fail("cabling", "Node", "n2", nodesF+"@c2", `cabling.data1: port "a:b" is not a port name (no ':', spaces or control characters)`),
			fail("cabling", "Node", "n3", nodesF+"@c3", `cabling.data0: switch "leaf r03" is not a switch name`),
			fail("cabling", "Node", "n3", nodesF+"@c3", `cabling.data0: port "Ethernet\t1" is not a port name`),
		}},
	{rule: "cabling", name: "ok: port names with slashes, dots and dashes",
		edits: []edit{
			cable("n1", "    data0: {switch: leaf-r01.dc1, port: Ethernet1/1}\n"),
			cable("n2", "    data1: {switch: leaf-r01.dc1, port: Ethernet1/2.100}\n"),
		}},
	{rule: "cabling", name: "LLDP expected of a node without cabling",
		edits: append([]edit{expectHW("    lldp: true\n")}, everyCabled[:2]...),
		want:  []exp{fail("cabling", "Node", "n3", nodesF+"@n3", "hardware profile hw1 expects LLDP (expect.lldp) but the node has no cabling")}},
	{rule: "schema", name: "cable without a port",
		edits: []edit{cable("n1", "    data0: {switch: leaf-r01} # @c\n")},
		want:  []exp{fail("schema", "Node", "n1", nodesF+"@c", "spec.cabling.data0.port is required")}},
	{rule: "cabling", name: "ok: LLDP with every node cabled, one port each",
		edits: append(append([]edit{expectHW("    lldp: true\n")}, everyCabled...),
			rep(nodesF, "    data0: {switch: leaf-r01, port: Ethernet1}\n", "    data0: {switch: leaf-r01, port: Ethernet1}\n    data1: {switch: leaf-r02, port: Ethernet1}\n"))},

	// constraints
	{rule: "constraints", name: "constraints on a node with bootMac",
		edits: []edit{rep(nodesF, "  bootMac: \"52:54:00:00:00:01\" # @n1-mac\n", "  bootMac: \"52:54:00:00:00:01\" # @n1-mac\n  constraints: {zone: default} # @cons\n")},
		want:  []exp{fail("constraints", "Node", "n1", nodesF+"@cons", "the node has bootMac 52:54:00:00:00:01; remove one of them")}},
	{rule: "constraints", name: "minMemory that does not parse, a bad tag",
		edits: []edit{rep(nodesF, "  hostProfile: compute # @n2-hp\n", "  hostProfile: compute # @n2-hp\n  constraints:\n    minMemory: lots # @minmem\n    tags: [\"gpu h100\"] # @ctags\n")},
		want: []exp{
			fail("constraints", "Node", "n2", nodesF+"@minmem", `constraints.minMemory: size "lots" does not parse`),
			fail("constraints", "Node", "n2", "nodes.yaml@ctags", `constraints.tags[0] "gpu h100" is not a tag name`),
		}},
	{rule: "constraints", name: "ok: constraints on a node that is not pinned",
		edits: []edit{rep(nodesF, "  hostProfile: compute # @n2-hp\n", "  hostProfile: compute # @n2-hp\n  constraints: {zone: default, pool: gpu, tags: [gpu-h100x8], minCpu: 64, minMemory: 512gi}\n")}},

	{rule: "constraints", name: "ok: an unpinned node needs no BMC address",
		edits: []edit{rep(nodesF, "  hostProfile: compute # @n3-hp\n  oob:\n    address: 10.10.0.103 # @n3-bmc\n", "  hostProfile: compute # @n3-hp\n  constraints: {tags: [gpu-h100x8]}\n")}},
	{rule: "oob", name: "a node without constraints still needs its BMC address",
		edits: []edit{rep(nodesF, "  hostProfile: compute # @n3-hp\n  oob:\n    address: 10.10.0.103 # @n3-bmc\n", "  hostProfile: compute # @n3-hp\n")},
		want:  []exp{fail("oob", "Node", "n3", nodesF+"@n3", "an ipmi node needs oob.address")}},

	// hardware-tags
	{rule: "hardware-tags", name: "tag name, duplicate, no fact, bad pattern",
		edits: []edit{hwTagsSite(`    - {name: "gpu h100", gpus: {count: 8}} # @t0
    - {name: nic-100g, nicSpeedMinMbps: 100000}
    - {name: nic-100g, memoryMin: 1ti} # @t2
    - {name: empty} # @t3
    - {name: gpu-x, gpus: {count: 0, model: "(H100"}} # @t4
    - {name: slipway-kernel-x, cpu: {count: 8}} # @t5
`)},
		want: []exp{
			fail("hardware-tags", "Site", "lab", siteF+"@t0", `hardwareTags[0]: name "gpu h100" is not a tag name`),
			fail("hardware-tags", "Site", "lab", siteF+"@t2", "hardwareTags[2]: tag nic-100g is already defined by hardwareTags[1]"),
			fail("hardware-tags", "Site", "lab", siteF+"@t3", "hardwareTags[3]: tag empty names no fact"),
			fail("hardware-tags", "Site", "lab", siteF+"@t4", "hardwareTags[4]: gpus.count 0: a tag counts at least one GPU"),
			fail("hardware-tags", "Site", "lab", siteF+"@t4", `hardwareTags[4]: gpus.model "(H100" is not a regular expression`),
			fail("hardware-tags", "Site", "lab", siteF+"@t5", "the prefix slipway-kernel- is the MAAS driver's"),
		}},
	{rule: "hardware-tags", name: "memoryMin that is not a byte count",
		edits: []edit{hwTagsSite("    - {name: big, memoryMin: \">1ti\"} # @t0\n")},
		want:  []exp{fail("hardware-tags", "Site", "lab", siteF+"@t0", `hardwareTags[0]: memoryMin: size ">1ti" must be a byte count`)}},
	{rule: "hardware-tags", name: "ok: gpu, nic, cpu and memory tags",
		edits: []edit{hwTagsSite(`    - {name: gpu-h100x8, gpus: {count: 8, model: H100}}
    - {name: nic-100g, nicSpeedMinMbps: 100000}
    - {name: big-epyc, cpu: {count: 128, model: EPYC}, memoryMin: 1ti}
`)}},
}

func init() { ruleCases = append(ruleCases, hardwareCases...) }

func TestVersionAtLeast(t *testing.T) {
	for _, tc := range []struct {
		found, min     string
		ok, comparable bool
	}{
		{"2.1.0", "2.1.0", true, true},
		{"2.10.0", "2.9", true, true},
		{"1.0", "2.1.0", false, true},
		{"2.1", "2.1.0", true, true},
		{"2.0.9", "2.1", false, true},
		{"U46 v2.80", "2.8", true, true},
		{"F20", "21", false, true},
		{"unknown", "1.0", false, false},
		{"", "1.0", false, false},
		{"99999999999999999999.1", "5.0", true, true},
	} {
		ok, c := design.VersionAtLeast(tc.found, tc.min)
		if ok != tc.ok || c != tc.comparable {
			t.Errorf("VersionAtLeast(%q, %q) = %v, %v; want %v, %v", tc.found, tc.min, ok, c, tc.ok, tc.comparable)
		}
	}
}
