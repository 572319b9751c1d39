package design_test

import "strings"

// fabricSite gives the base Site a fabric block (lines under fabric:).
func fabricSite(lines string) edit {
	return rep(siteF, "      kernel: ga-22.04\n", "      kernel: ga-22.04\n  fabric: # @fabric\n"+lines)
}

// switchVlan gives network net (pxe, mgmt, storage) a switchVlan line
// marked @NET-sv.
func switchVlan(net, v string) edit {
	anchor := map[string]string{"pxe": "  cidr: 10.11.0.0/24 # @pxe-cidr\n", "mgmt": "  cidr: 10.12.0.0/24 # @mgmt-cidr\n",
		"storage": "  cidr: 10.13.0.0/24 # @storage-cidr\n"}[net]
	return rep(netF, anchor, anchor+"  switchVlan: "+v+" # @"+net+"-sv\n")
}

const twoLeaves = `    quarantineVlan: 999 # @quarantine
    switches:
      leaf-r01: {address: "tcp:127.0.0.1:6640", username: admin, password: "secret:leaf-r01-password", settings: {bridge: leaf-r01}} # @leaf1
      leaf-r02.dc1: {address: "tcp:127.0.0.1:6641"} # @leaf2
`

// fabricCabled is a whole fabric: two switches, pxe and mgmt on switch
// VLANs, n1's PXE NIC and every node's data NICs cabled.
var fabricCabled = []edit{
	fabricSite(twoLeaves), switchVlan("pxe", "11"), switchVlan("mgmt", "12"),
	cable("n1", "    pxe0: {switch: leaf-r01, port: p1}\n    data0: {switch: leaf-r01, port: p2} # @c1\n    data1: {switch: leaf-r02.dc1, port: p2}\n"),
	cable("n2", "    data0: {switch: leaf-r01, port: p3}\n"),
	cable("n3", "    data0: {switch: leaf-r02.dc1, port: p3}\n"),
}

// without is edits less the one at index i.
func without(edits []edit, i int) []edit {
	out := append([]edit(nil), edits[:i]...)
	return append(out, edits[i+1:]...)
}

var fabricCases = []ruleCase{
	{rule: "fabric", name: "ok: switches, switch VLANs, every cable on a declared switch", edits: fabricCabled},
	{rule: "fabric", name: "ok: cabling without a fabric (network noop) needs no switch VLAN",
		edits: everyCabled},
	{rule: "fabric", name: "switchVlan on a tagged network",
		edits: append(fabricCabled, switchVlan("storage", "31")),
		want:  []exp{fail("fabric", "Network", "storage", netF+"@storage-sv", "switchVlan 31 on a tagged network: the switches carry it on its vlan 30")}},
	{rule: "fabric", name: "switchVlan outside 1..4094",
		edits: []edit{switchVlan("pxe", "4095")},
		want:  []exp{fail("fabric", "Network", "pxe", netF+"@pxe-sv", "switchVlan 4095 is outside 1..4094")}},
	{rule: "fabric", name: "switchVlan on another network's VLAN",
		edits: []edit{switchVlan("pxe", "30")},
		want:  []exp{fail("fabric", "Network", "pxe", netF+"@pxe-sv", "switchVlan 30 is already network storage's VLAN on the switches")}},
	{rule: "fabric", name: "two networks on one switchVlan",
		edits: []edit{switchVlan("pxe", "12"), switchVlan("mgmt", "12")},
		want:  []exp{fail("fabric", "Network", "pxe", netF+"@pxe-sv", "switchVlan 12 is already network mgmt's VLAN")}},
	{rule: "fabric", name: "a switch name with a colon or a slash",
		edits: append(without(fabricCabled, 0), fabricSite(twoLeaves+"      \"leaf:r03\": {address: \"tcp:127.0.0.1:6642\"} # @leaf3\n      leaf/r04: {address: \"tcp:127.0.0.1:6643\"} # @leaf4\n")),
		want: []exp{
			fail("fabric", "Site", "lab", siteF+"@leaf3", `fabric.switches: "leaf:r03" is not a switch name (its LLDP system name: no ':', '/', spaces or control characters)`),
			fail("fabric", "Site", "lab", siteF+"@leaf4", `fabric.switches: "leaf/r04" is not a switch name`),
		}},
	{rule: "fabric", name: "no quarantineVlan with switches",
		edits: append(without(fabricCabled, 0), fabricSite("    switches: # @switches\n      leaf-r01: {address: \"tcp:127.0.0.1:6640\"}\n      leaf-r02.dc1: {address: \"tcp:127.0.0.1:6641\"}\n")),
		want:  []exp{fail("fabric", "Site", "lab", siteF+"@switches", "fabric.quarantineVlan is required with fabric.switches")}},
	{rule: "fabric", name: "quarantineVlan outside 1..4094",
		edits: append(without(fabricCabled, 0), fabricSite(strings.Replace(twoLeaves, "999", "5000", 1))),
		want:  []exp{fail("fabric", "Site", "lab", siteF+"@quarantine", "fabric.quarantineVlan 5000 is outside 1..4094")}},
	{rule: "fabric", name: "quarantineVlan is a network's switch VLAN",
		edits: append(without(fabricCabled, 0), fabricSite(strings.Replace(twoLeaves, "999", "12", 1))),
		want:  []exp{fail("fabric", "Site", "lab", siteF+"@quarantine", "fabric.quarantineVlan 12 is network mgmt's switch VLAN")}},
	{rule: "fabric", name: "cabling names a switch the fabric does not declare",
		edits: append(without(fabricCabled, 5), cable("n3", "    data0: {switch: spine-1, port: p3} # @c3\n")),
		want:  []exp{fail("fabric", "Node", "n3", nodesF+"@c3", "cabling.data0: switch spine-1 is not one of Site lab's fabric.switches (leaf-r01, leaf-r02.dc1)")}},
	{rule: "fabric", name: "a cabled interface carries an untagged network without switchVlan",
		edits: without(fabricCabled, 2),
		want:  []exp{fail("fabric", "Network", "mgmt", netF+"@net-mgmt", "network mgmt is carried untagged on node n1's cabled interface bond0 but has no switch VLAN")}},
	{rule: "fabric", name: "the PXE network has no switch VLAN",
		edits: without(fabricCabled, 1),
		want:  []exp{fail("fabric", "Network", "pxe", netF+"@net-pxe", "network pxe is the network node n1 PXE-boots on (interface pxe) but has no switch VLAN")}},
	{rule: "fabric", name: "cabled nodes that PXE-boot on no known interface",
		edits: append(fabricCabled, rep(hwF, "    interface: pxe0 # @hw-pxe\n", "")),
		want: []exp{
			fail("fabric", "Node", "n1", nodesF+"@n1", "no interface carries its PXE device untagged"),
			fail("fabric", "Node", "n2", nodesF+"@n2", "no interface carries its PXE device untagged"),
			fail("fabric", "Node", "n3", nodesF+"@n3", "no interface carries its PXE device untagged"),
		}},
	{rule: "fabric", name: "a network driver other than noop without fabric switches",
		edits: []edit{rep(siteF, "  domain: lab.example.net\n", "  domain: lab.example.net\n  drivers:\n    network: ovs # @drv\n")},
		want:  []exp{fail("fabric", "Site", "lab", siteF+"@drv", "network driver ovs configures switch ports but the Site declares no fabric.switches")}},
	{rule: "fabric", name: "a switch declared in two Sites",
		edits: append(fabricCabled, add(siteF, site2+"  fabric:\n    quarantineVlan: 999\n    switches:\n      leaf-r01: {address: \"tcp:127.0.0.1:7000\"} # @leaf1-again\n"),
			rep(profF, "  primaryNetwork: mgmt # @base-primary", "  primaryNetwork: mgmt # @base-primary\n  site: lab")),
		want: []exp{fail("fabric", "Site", "lab2", siteF+"@leaf1-again", "fabric.switches.leaf-r01 is already declared by Site lab: a switch belongs to one Site")}},
	{rule: "fabric", name: "a switch setting the driver cannot read, a password that is no secret reference",
		edits: append(without(fabricCabled, 0), fabricSite(strings.Replace(strings.Replace(twoLeaves, "bridge: leaf-r01", "bridge.name: leaf-r01", 1),
			"secret:leaf-r01-password", "hunter2-plain", 1))),
		secret: "hunter2-plain",
		want: []exp{
			fail("fabric", "Site", "lab", siteF+"@leaf1", `fabric.switches.leaf-r01.settings: key "bridge.name" is not a setting name`),
			fail("secret-ref", "Site", "lab", siteF+"@leaf1", "fabric.switches.leaf-r01.password"),
		}},
	{rule: "schema", name: "a switch without an address",
		edits: append(without(fabricCabled, 0), fabricSite(strings.Replace(twoLeaves, `address: "tcp:127.0.0.1:6641"`, "username: x", 1))),
		want:  []exp{fail("schema", "Site", "lab", siteF+"@leaf2", "spec.fabric.switches.leaf-r02.dc1.address is required")}},
	// A switch port claimed twice is RuleCabling's: see "a switch port
	// cabled twice" in rules_hardware_test.go (a finding at the second
	// cable's file:line naming the first).
}

func init() { ruleCases = append(ruleCases, fabricCases...) }
