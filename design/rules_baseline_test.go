package design_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
)

// redfishHW makes the base hardware profile a Redfish model.
var redfishHW = rep(hwF, "    port: 623 # @hw-port\n", "    type: redfish\n    port: 623 # @hw-port\n")

// baselineAliases are device aliases the baseline cases name: GPUs,
// drives behind the RAID controller (bus bay) and an NVMe drive.
const baselineAliases = `    gpu0: {bus: pci, address: "0000:18:00.0"}
    gpu1: {bus: pci, address: "0000:2a:00.0"}
    os0: {bus: bay, address: "0"}
    os1: {bus: bay, address: "1"}
    os2: {bus: bay, address: "2"}
    os3: {bus: bay, address: "3"}
    os4: {bus: bay, address: "4"}
    nvme0: {bus: nvme, address: "0000:5e:00.0"}
`

// withBaseline appends baselineAliases and lines (spec fields) to the
// base hardware profile, which stays an ipmi model.
func withBaseline(lines string) edit {
	return rep(hwF, "    disk0: {bus: scsi, address: \"2:0.0.0\"}\n", "    disk0: {bus: scsi, address: \"2:0.0.0\"}\n"+baselineAliases+lines)
}

// baselineHW is withBaseline on a Redfish model.
func baselineHW(lines string) []edit { return []edit{redfishHW, withBaseline(lines)} }

var sha = strings.Repeat("ab", 32)

// fw is a firmware list of the given entries (flow mappings, each with
// its mark).
func fw(entries ...string) string { return "  firmware:\n" + strings.Join(entries, "") }

// baselineSite is the base Site with a lifecycle.baseline section.
func baselineSite(lines string) edit {
	return rep(siteF, "      kernel: ga-22.04\n", "      kernel: ga-22.04\n  lifecycle:\n    baseline:\n"+lines)
}

func manyFirmware(n int) string {
	var b strings.Builder
	b.WriteString("  firmware:\n")
	for i := range n {
		mark := ""
		if i == 0 {
			mark = " # @many"
		}
		fmt.Fprintf(&b, "    - {component: nic, devices: [data0], version: \"1.%d\", image: {file: nic-%d.bin, sha256: %s}}%s\n", i, i, sha, mark)
	}
	return b.String()
}

const hwBase = "HardwareProfile"

var baselineCases = []ruleCase{
	// the OOB type
	{rule: "baseline", name: "firmware and raid on an ipmi model",
		edits: []edit{withBaseline(fw("    - {component: bios, version: \"2.19.1\", image: {file: bios.bin, sha256: "+sha+"}} # @fw0\n") +
			"  raid:\n    volumes:\n      - {name: os, level: raid1, drives: [os0, os1], boot: true}\n")},
		want: []exp{fail("baseline", hwBase, "hw1", hwF+"@fw0", "firmware, raid on an ipmi BMC (oob.type): the ipmi driver cannot update firmware")}},
	{rule: "baseline", name: "bios and virtual media on an ipmi model",
		edits: []edit{withBaseline("  bios:\n    attributes: {ProcVirtualization: Enabled} # @bios\n  virtualMedia: {iso: \"https://boot.example/boot.iso\"}\n")},
		want:  []exp{fail("baseline", hwBase, "hw1", hwF+"@bios", "bios, virtualMedia on an ipmi BMC (oob.type)")}},
	{rule: "baseline", name: "ok: every part on a redfish model, a boot ISO and no pxe.interface",
		edits: append(baselineHW(fw(
			"    - {component: bios, version: \"2.19.1\", image: {file: xe9680/bios-2.19.1.bin, sha256: "+sha+"}}\n",
			"    - {component: bmc, version: \"7.10.50.00\", image: {url: \"https://fw.example:8443/idrac.bin?x=1\", sha256: "+strings.ToUpper(sha)+"}}\n",
			"    - {component: gpu, devices: [gpu0, gpu1], version: \"96.00.AF.00.01\", image: {url: \"http://10.0.0.1/gpu.bin\", sha256: "+sha+"}}\n",
			"    - {component: nic, version: \"22.31.6\", image: {file: nic.bin, sha256: "+sha+"}}\n",
			"    - {component: drive, devices: [os0, os1, nvme0], version: \"U46 v2.80\", image: {file: drive.bin, sha256: "+sha+"}}\n",
		)+"  bios:\n    attributes: {ProcVirtualization: Enabled}\n"+
			"  raid:\n    volumes:\n      - {name: os, level: raid1, drives: [os0, os1], boot: true, size: 480gi}\n"+
			"      - {name: data.0, level: raid5, drives: [os2, os3, os4]}\n"+
			"  virtualMedia: {iso: \"https://boot.example/boot.iso\", sha256: "+sha+"}\n"),
			rep(hwF, "    interface: pxe0 # @hw-pxe\n", ""))},

	// firmware
	{rule: "baseline", name: "image with both url and file, and one with neither",
		edits: baselineHW(fw(
			"    - {component: bios, version: \"2.1\", image: {url: \"https://fw.example/b.bin\", file: b.bin, sha256: "+sha+"}} # @fw0\n",
			"    - {component: bmc, version: \"7.1\", image: {sha256: "+sha+"}} # @fw1\n")),
		want: []exp{
			fail("baseline", hwBase, "hw1", hwF+"@fw0", "firmware[0].image has both url and file: keep one"),
			fail("baseline", hwBase, "hw1", hwF+"@fw1", "firmware[1].image needs url (where Slipway fetches it) or file"),
		}},
	{rule: "baseline", name: "a URL with a password, another scheme, no host",
		edits: baselineHW(fw(
			"    - {component: bios, version: \"2.1\", image: {url: \"https://admin:hunter2@fw.example/b.bin\", sha256: "+sha+"}} # @fw0\n",
			"    - {component: bmc, version: \"7.1\", image: {url: \"ftp://fw.example/b.bin\", sha256: "+sha+"}} # @fw1\n",
			"    - {component: nic, version: \"7.1\", image: {url: \"http:///b.bin\", sha256: "+sha+"}} # @fw2\n")),
		want: []exp{
			fail("baseline", hwBase, "hw1", hwF+"@fw0", "firmware[0].image.url: the URL carries user information: a design holds no credentials"),
			fail("baseline", hwBase, "hw1", hwF+"@fw1", "firmware[1].image.url: not an http or https URL"),
			fail("baseline", hwBase, "hw1", hwF+"@fw2", "firmware[2].image.url: the URL names no host"),
		},
		secret: "hunter2"},
	{rule: "baseline", name: "file names outside the firmware directory",
		edits: baselineHW(fw(
			"    - {component: bios, version: \"2.1\", image: {file: ../etc/shadow, sha256: "+sha+"}} # @fw0\n",
			"    - {component: bmc, version: \"7.1\", image: {file: /srv/fw/b.bin, sha256: "+sha+"}} # @fw1\n",
			"    - {component: gpu, version: \"7.1\", image: {file: \"a\\\\b.bin\", sha256: "+sha+"}} # @fw2\n",
			"    - {component: nic, version: \"7.1\", image: {file: \"a\\x00b\", sha256: "+sha+"}} # @fw3\n")),
		want: []exp{
			fail("baseline", hwBase, "hw1", hwF+"@fw0", `firmware[0].image.file: "../etc/shadow" is not a file in the firmware directory`),
			fail("baseline", hwBase, "hw1", hwF+"@fw1", `firmware[1].image.file: "/srv/fw/b.bin" is not a file`),
			fail("baseline", hwBase, "hw1", hwF+"@fw2", `firmware[2].image.file: "a\\b.bin" is not a file`),
			fail("baseline", hwBase, "hw1", hwF+"@fw3", `firmware[3].image.file: "a\x00b" is not a file`),
		}},
	{rule: "baseline", name: "sha256 not 64 hex digits",
		edits: baselineHW(fw(
			"    - {component: bios, version: \"2.1\", image: {file: b.bin, sha256: "+sha[:63]+"}} # @fw0\n",
			"    - {component: bmc, version: \"7.1\", image: {file: c.bin, sha256: "+sha[:63]+"g}} # @fw1\n")),
		want: []exp{
			fail("baseline", hwBase, "hw1", hwF+"@fw0", "firmware[0].image.sha256 must be 64 hex digits"),
			fail("baseline", hwBase, "hw1", hwF+"@fw1", "firmware[1].image.sha256 must be 64 hex digits"),
		}},
	{rule: "baseline", name: "versions too long, with a control character, padded",
		edits: baselineHW(fw(
			"    - {component: bios, version: \""+strings.Repeat("1.", 33)+"\", image: {file: b.bin, sha256: "+sha+"}} # @fw0\n",
			"    - {component: bmc, version: \"7.1\\t\", image: {file: c.bin, sha256: "+sha+"}} # @fw1\n",
			"    - {component: nic, version: \" 7.1\", image: {file: c.bin, sha256: "+sha+"}} # @fw2\n")),
		want: []exp{
			fail("baseline", hwBase, "hw1", hwF+"@fw0", "firmware[0].version: 66 bytes long, at most 64"),
			fail("baseline", hwBase, "hw1", hwF+"@fw1", "firmware[1].version: \"7.1\\t\" has a character that is not printable ASCII"),
			fail("baseline", hwBase, "hw1", hwF+"@fw2", "firmware[2].version: \" 7.1\" starts or ends with a space"),
		}},
	{rule: "baseline", name: "drive firmware of a scsi alias: the BMC's inventory cannot name it",
		edits: baselineHW(fw(
			"    - {component: drive, devices: [os0, disk0], version: \"1\", image: {file: d.bin, sha256: " + sha + "}} # @fw0\n")),
		want: []exp{
			fail("baseline", hwBase, "hw1", hwF+"@fw0", "firmware[0].devices: alias disk0 is on bus scsi, the operating system's address of a disk, which a BMC's firmware inventory does not report: name the drive by its bay (bus bay), or an NVMe drive by its PCI address (bus nvme)"),
		}},
	{rule: "baseline", name: "devices: not an alias, the wrong bus, on a bmc, twice",
		edits: append(baselineHW(fw(
			"    - {component: gpu, devices: [gpu9], version: \"1\", image: {file: g.bin, sha256: "+sha+"}} # @fw0\n",
			"    - {component: drive, devices: [data0], version: \"1\", image: {file: d.bin, sha256: "+sha+"}} # @fw1\n",
			"    - {component: bmc, devices: [gpu0], version: \"1\", image: {file: b.bin, sha256: "+sha+"}} # @fw2\n",
			"    - {component: nic, devices: [data0, nic0], version: \"1\", image: {file: n.bin, sha256: "+sha+"}} # @fw3\n")),
			rep(hwF, "    data1: {bus: pci, address: \"0000:3b:00.1\"}\n", "    data1: {bus: pci, address: \"0000:3b:00.1\"}\n    nic0: {bus: pci, address: \"0000:3B:00.0\"}\n")),
		want: []exp{
			fail("baseline", hwBase, "hw1", hwF+"@fw0", `firmware[0].devices: "gpu9" is not one of this profile's deviceAliases (data0, data1, gpu0, gpu1, nic0, pxe0)`),
			fail("baseline", hwBase, "hw1", hwF+"@fw1", "firmware[1].devices: alias data0 is on bus pci; a drive is on bay or nvme"),
			fail("baseline", hwBase, "hw1", hwF+"@fw2", "firmware[2]: component bmc names no devices"),
			fail("baseline", hwBase, "hw1", hwF+"@fw3", "firmware[3].devices: nic0 is the device of data0 already"),
		}},
	{rule: "baseline", name: "two entries updating one device, every device, the BMC twice",
		edits: baselineHW(fw(
			"    - {component: gpu, devices: [gpu0], version: \"1\", image: {file: g.bin, sha256: "+sha+"}} # @fw0\n",
			"    - {component: gpu, devices: [gpu1, gpu0], version: \"2\", image: {file: g2.bin, sha256: "+sha+"}} # @fw1\n",
			"    - {component: gpu, version: \"3\", image: {file: g3.bin, sha256: "+sha+"}} # @fw2\n",
			"    - {component: nic, version: \"3\", image: {file: n.bin, sha256: "+sha+"}} # @fw3\n",
			"    - {component: nic, devices: [data1], version: \"4\", image: {file: n4.bin, sha256: "+sha+"}} # @fw4\n",
			"    - {component: bmc, version: \"7\", image: {file: b.bin, sha256: "+sha+"}} # @fw5\n",
			"    - {component: bmc, version: \"7\", image: {file: b.bin, sha256: "+sha+"}} # @fw6\n")),
		want: []exp{
			fail("baseline", hwBase, "hw1", hwF+"@fw1", "firmware[1]: gpu firmware of gpu0 is already set by firmware[0] (hardware.yaml:"),
			fail("baseline", hwBase, "hw1", hwF+"@fw2", "firmware[2]: gpu firmware of every device is already set by firmware[0] (hardware.yaml:"),
			fail("baseline", hwBase, "hw1", hwF+"@fw4", "firmware[4]: nic firmware of data1 is already set by firmware[3] (hardware.yaml:"),
			fail("baseline", hwBase, "hw1", hwF+"@fw6", "firmware[6]: bmc firmware of every device is already set by firmware[5] (hardware.yaml:"),
		}},
	{rule: "baseline", name: "empty version, sha256, volume name and drives, iso (written, not missing)",
		edits: baselineHW(fw(
			"    - component: bios\n      version: \"\" # @ver\n      image: {file: b.bin, sha256: \"\"} # @img\n") +
			"  raid:\n    volumes:\n      - name: \"\" # @vname\n        level: raid1\n        drives: [] # @vdrives\n" +
			"  virtualMedia:\n    iso: \"\" # @iso\n"),
		want: []exp{
			fail("baseline", hwBase, "hw1", hwF+"@ver", "firmware[0].version: empty: write the version"),
			fail("baseline", hwBase, "hw1", hwF+"@img", "firmware[0].image.sha256 must be 64 hex digits"),
			fail("baseline", hwBase, "hw1", hwF+"@vname", `raid.volumes[0].name "" is not a volume name`),
			fail("baseline", hwBase, "hw1", hwF+"@vname", "raid.volumes[0].drives is empty: list the volume's member drives"),
			fail("baseline", hwBase, "hw1", hwF+"@iso", "virtualMedia.iso is empty"),
		}},
	{rule: "schema", name: "missing version, volume name and drives: required, reported once",
		edits: baselineHW(fw("    - {component: bios, image: {file: b.bin, sha256: "+sha+"}} # @fw0\n") +
			"  raid:\n    volumes:\n      - {level: raid1} # @v0\n"),
		want: []exp{
			fail("schema", hwBase, "hw1", hwF+"@fw0", "spec.firmware[0].version is required"),
			fail("schema", hwBase, "hw1", hwF+"@v0", "spec.raid.volumes[0].name is required"),
			fail("schema", hwBase, "hw1", hwF+"@v0", "spec.raid.volumes[0].drives is required"),
		}},
	{rule: "baseline", name: "more firmware entries than the bound",
		edits: baselineHW(manyFirmware(design.MaxFirmwareEntries + 1)),
		want:  []exp{fail("baseline", hwBase, "hw1", hwF+"@many", "firmware lists 65 entries: at most 64")}},
	{rule: "schema", name: "firmware component not in the enum, image without sha256",
		edits: baselineHW(fw("    - {component: cpld, version: \"1\", image: {file: c.bin}} # @fw0\n")),
		want: []exp{
			fail("schema", hwBase, "hw1", hwF+"@fw0", `"cpld" is not one of bmc, bios, nic, gpu, drive`),
			fail("schema", hwBase, "hw1", hwF+"@fw0", "sha256"),
		}},

	// raid
	{rule: "baseline", name: "raid without volumes",
		edits: baselineHW("  raid: {volumes: []} # @raid\n"),
		want:  []exp{fail("baseline", hwBase, "hw1", hwF+"@raid", "raid has no volumes")}},
	{rule: "baseline", name: "raid members: not an alias, not a bay drive, twice, in two volumes",
		edits: baselineHW("  raid:\n    volumes:\n" +
			"      - {name: a, level: raid1, drives: [os0, os9]} # @v0\n" +
			"      - {name: b, level: raid1, drives: [disk0, os1]} # @v1\n" +
			"      - {name: c, level: raid1, drives: [os2, os2]} # @v2\n" +
			"      - {name: d, level: raid0, drives: [os0]} # @v3\n"),
		want: []exp{
			fail("baseline", hwBase, "hw1", hwF+"@v0", `raid.volumes[0].drives: "os9" is not one of this profile's deviceAliases (os0, os1, os2, os3, os4)`),
			fail("baseline", hwBase, "hw1", hwF+"@v1", "raid.volumes[1].drives: alias disk0 is on bus scsi; a volume's members are drives behind the RAID controller"),
			fail("baseline", hwBase, "hw1", hwF+"@v2", "raid.volumes[2].drives: os2 is listed twice"),
			fail("baseline", hwBase, "hw1", hwF+"@v3", "raid.volumes[3].drives: os0 is already a member of raid.volumes[0] a"),
		}},
	{rule: "baseline", name: "raid members: two aliases of one bay, in one volume and in two",
		edits: baselineHW("    bay0: {bus: bay, address: \"0\"}\n    bay2: {bus: bay, address: \"2\"}\n" +
			"  raid:\n    volumes:\n" +
			"      - {name: a, level: raid1, drives: [os0, bay0]} # @v0\n" +
			"      - {name: b, level: raid1, drives: [os1, os2]}\n" +
			"      - {name: c, level: raid1, drives: [os3, bay2]} # @v2\n"),
		want: []exp{
			fail("baseline", hwBase, "hw1", hwF+"@v0", "raid.volumes[0].drives: bay0 is bay 0, which os0 names already: a drive is listed once"),
			fail("baseline", hwBase, "hw1", hwF+"@v2", "raid.volumes[2].drives: bay2 is bay 2, a member of raid.volumes[1] b (as os2): a drive belongs to one volume"),
		}},
	{rule: "baseline", name: "member counts that do not fit the level",
		edits: baselineHW("  raid:\n    volumes:\n" +
			"      - {name: a, level: raid1, drives: [os0, os1, os2]} # @v0\n" +
			"      - {name: b, level: raid5, drives: [os3, os4]} # @v1\n"),
		want: []exp{
			fail("baseline", hwBase, "hw1", hwF+"@v0", "raid.volumes[0]: raid1 takes exactly 2 drives, not 3"),
			fail("baseline", hwBase, "hw1", hwF+"@v1", "raid.volumes[1]: raid5 takes at least 3 drives, not 2"),
		}},
	{rule: "baseline", name: "raid10 of an odd count, raid6 of three",
		edits: append(baselineHW("  raid:\n    volumes:\n"+
			"      - {name: a, level: raid10, drives: [os0, os1, os2, os3, os4]} # @v0\n"+
			"      - {name: b, level: raid6, drives: [os5, os6, os7]} # @v1\n"),
			rep(hwF, "    os4: {bus: bay, address: \"4\"}\n", "    os4: {bus: bay, address: \"4\"}\n    os5: {bus: bay, address: \"5\"}\n    os6: {bus: bay, address: \"6\"}\n    os7: {bus: bay, address: \"7\"}\n")),
		want: []exp{
			fail("baseline", hwBase, "hw1", hwF+"@v0", "raid.volumes[0]: raid10 takes an even number, at least 4 drives, not 5"),
			fail("baseline", hwBase, "hw1", hwF+"@v1", "raid.volumes[1]: raid6 takes at least 4 drives, not 3"),
		}},
	{rule: "baseline", name: "volume names twice and invalid, sizes, two boot volumes",
		edits: baselineHW("  raid:\n    volumes:\n" +
			"      - {name: os, level: raid1, drives: [os0, os1], boot: true, size: 50%} # @v0\n" +
			"      - {name: os, level: raid0, drives: [os2], boot: true, size: big} # @v1\n" +
			"      - {name: \"my volume\", level: raid0, drives: [os3]} # @v2\n"),
		want: []exp{
			fail("baseline", hwBase, "hw1", hwF+"@v0", "raid.volumes[0].size: size \"50%\" must be a byte count"),
			fail("baseline", hwBase, "hw1", hwF+"@v1", "raid.volumes[1]: volume os is already raid.volumes[0] (hardware.yaml:"),
			fail("baseline", hwBase, "hw1", hwF+"@v1", "raid.volumes[1].size: size \"big\" does not parse"),
			fail("baseline", hwBase, "hw1", hwF+"@v1", "raid.volumes[1]: volume os is a boot volume, and so is raid.volumes[0] os (hardware.yaml:"),
			fail("baseline", hwBase, "hw1", hwF+"@v2", `raid.volumes[2].name "my volume" is not a volume name`),
		}},
	{rule: "schema", name: "raid level not in the enum, a bay address that is no number, one with a leading zero",
		edits: append(baselineHW("  raid:\n    volumes:\n      - {name: a, level: raid50, drives: [os0, os1]} # @v0\n"),
			rep(hwF, "    os4: {bus: bay, address: \"4\"}\n", "    os4: {bus: bay, address: \"bay4\"} # @bay4\n"),
			rep(hwF, "    os3: {bus: bay, address: \"3\"}\n", "    os3: {bus: bay, address: \"03\"} # @bay3\n")),
		want: []exp{
			fail("schema", hwBase, "hw1", hwF+"@v0", `"raid50" is not one of raid0, raid1, raid5, raid6, raid10`),
			fail("schema", hwBase, "hw1", hwF+"@bay4", `deviceAliases.os4: bay address "bay4" must be the bay's number`),
			fail("schema", hwBase, "hw1", hwF+"@bay3", `deviceAliases.os3: bay address "03" must be the bay's number`),
		}},

	// a drive behind the RAID controller is no disk of the OS
	{rule: "reference", name: "a storage device that is a bay drive",
		edits: append(baselineHW(""), rep(profF, "    devices:\n      disk0:\n", "    devices:\n      os0: {} # @os0\n      disk0:\n")),
		want:  []exp{fail("reference", "HostProfile", "compute", profF+"@os0", "storage.devices.os0: os0 is a drive behind the RAID controller (bus bay)")}},

	// virtual media
	{rule: "baseline", name: "virtual media ISO not http(s), with a password; a bad sha256",
		edits: []edit{redfishHW, withBaseline("  virtualMedia: {iso: \"nfs://boot.example/boot.iso\", sha256: abc} # @vm\n"),
			add(hwF, "apiVersion: slipway/v1\nkind: HardwareProfile\nmetadata:\n  name: hw2\nspec:\n  oob: {type: redfish}\n  virtualMedia: {iso: \"https://u:s3cr3t@boot.example/boot.iso\"} # @vm2\n")},
		want: []exp{
			fail("baseline", hwBase, "hw1", hwF+"@vm", "virtualMedia.iso: not an http or https URL"),
			fail("baseline", hwBase, "hw1", hwF+"@vm", "virtualMedia.sha256 must be 64 hex digits"),
			fail("baseline", hwBase, "hw2", hwF+"@vm2", "virtualMedia.iso: the URL carries user information"),
		},
		secret: "s3cr3t"},
	{rule: "schema", name: "virtual media without an iso",
		edits: baselineHW("  virtualMedia: {sha256: " + sha + "} # @vm\n"),
		want:  []exp{fail("schema", hwBase, "hw1", hwF+"@vm", "iso")}},

	// lifecycle.baseline
	{rule: "lifecycle", name: "baseline maxParallel out of bounds",
		edits: []edit{baselineSite("      maxParallel: 0 # @maxp\n")},
		want:  []exp{fail("lifecycle", "Site", "lab", siteF+"@maxp", "lifecycle.baseline.maxParallel 0 is outside 1..1024")}},
	{rule: "lifecycle", name: "baseline maxParallel above the bound",
		edits: []edit{baselineSite("      reboots: deny\n      maxParallel: 1025 # @maxp\n")},
		want:  []exp{fail("lifecycle", "Site", "lab", siteF+"@maxp", "lifecycle.baseline.maxParallel 1025 is outside 1..1024")}},
	{rule: "lifecycle", name: "ok: a baseline policy",
		edits: []edit{baselineSite("      reboots: allow\n      maxParallel: 64\n")}},
	{rule: "schema", name: "baseline reboots not allow or deny",
		edits: []edit{baselineSite("      reboots: always # @reboots\n")},
		want:  []exp{fail("schema", "Site", "lab", siteF+"@reboots", `"always" is not one of allow, deny`)}},
}

func init() { ruleCases = append(ruleCases, baselineCases...) }

// Hardware profiles do not inherit, and a node cannot override its
// hardware: a node's spec.hardware is its profile's spec, baseline and
// all, and a node that writes hardware is told it is computed.
func TestBaselineResolvedOnNodes(t *testing.T) {
	f := baseDesign.clone()
	for _, e := range baselineHW(fw("    - {component: gpu, devices: [gpu0], version: \"96.00\", image: {file: g.bin, sha256: "+sha+"}}\n") +
		"  raid:\n    volumes:\n      - {name: os, level: raid1, drives: [os0, os1], boot: true}\n" +
		"  virtualMedia: {iso: \"https://boot.example/boot.iso\"}\n") {
		e(t, f)
	}
	d, fs := buildRoots(t, f)
	checkFindings(t, f, fs, nil)
	for _, n := range d.NodeNames() {
		hw := d.Nodes[n].Spec.Hardware
		if hw == nil || len(hw.Firmware) != 1 || hw.Firmware[0].Version != "96.00" || hw.Firmware[0].Devices[0] != "gpu0" ||
			hw.RAID == nil || len(hw.RAID.Volumes) != 1 || !hw.RAID.Volumes[0].Boot || hw.VirtualMedia == nil || hw.VirtualMedia.ISO != "https://boot.example/boot.iso" {
			t.Fatalf("node %s: spec.hardware %+v lacks the profile's baseline", n, hw)
		}
	}
	rn, err := d.RenderNode("n1")
	if err != nil {
		t.Fatal(err)
	}
	r, err := json.Marshal(rn)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r), "96.00") || !strings.Contains(string(r), "boot.example") {
		t.Errorf("the rendered node lacks the baseline:\n%s", r)
	}
	rep(nodesF, "  hostProfile: compute # @n2-hp\n", "  hostProfile: compute # @n2-hp\n  hardware: {raid: {volumes: []}} # @n2-hw\n")(t, f)
	_, fs = buildRoots(t, f)
	checkFindings(t, f, fs, []exp{fail("schema", "Node", "n2", nodesF+"@n2-hw", `unknown field "hardware"`)})
}
