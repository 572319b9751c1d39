package design_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/slipway-dev/slipway/design"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
)

// The base design of the rule tests: small, but with every kind, a two-level
// profile chain, a bond on a trunk, LVM and three nodes. A trailing comment
// "# @mark" names a line; expected findings point at lines by mark, so the
// YAML can change without renumbering the tests.
var baseDesign = files{
	"site.yaml": `apiVersion: slipway/v1 # @site
kind: Site
metadata:
  name: lab
spec:
  domain: lab.example.net
  dns:
    servers: [10.12.0.10] # @dns-servers
  maas:
    url: http://127.0.0.1:5240/MAAS
    apiKey: secret:maas-api-key # @maas-apikey
  defaults:
    platform:
      image: jammy
      kernel: ga-22.04
`,
	"networks.yaml": `apiVersion: slipway/v1 # @net-pxe
kind: Network
metadata:
  name: pxe
spec:
  cidr: 10.11.0.0/24 # @pxe-cidr
  gateway: 10.11.0.1 # @pxe-gateway
  ranges:
    - {type: reserved, start: 10.11.0.2, end: 10.11.0.9} # @pxe-range0
    - {type: dhcp, start: 10.11.0.10, end: 10.11.0.250} # @pxe-range1
---
apiVersion: slipway/v1 # @net-mgmt
kind: Network
metadata:
  name: mgmt
spec:
  cidr: 10.12.0.0/24 # @mgmt-cidr
  mtu: 1500 # @mgmt-mtu
  gateway: 10.12.0.1 # @mgmt-gateway
  ranges:
    - {type: reserved, start: 10.12.0.2, end: 10.12.0.9} # @mgmt-range0
    - {type: static, start: 10.12.0.10, end: 10.12.0.199} # @mgmt-range1
  routes:
    - {to: 10.0.0.0/24, via: 10.12.0.254, metric: 100} # @mgmt-route0
---
apiVersion: slipway/v1 # @net-storage
kind: Network
metadata:
  name: storage
spec:
  cidr: 10.13.0.0/24 # @storage-cidr
  vlan: 30 # @storage-vlan
  mtu: 9000 # @storage-mtu
---
apiVersion: slipway/v1 # @net-oob
kind: Network
metadata:
  name: oob
spec:
  cidr: 10.10.0.0/24
  vlan: 10 # @oob-vlan
---
apiVersion: slipway/v1 # @link-pxe
kind: NetworkLink
metadata:
  name: pxe-link
spec:
  allowedNetworks: [pxe] # @pxe-link-allowed
---
apiVersion: slipway/v1 # @link-bond
kind: NetworkLink
metadata:
  name: data-bond
spec:
  bonding:
    mode: 802.3ad # @bond-mode
    miimon: 100
    updelay: 200
    downdelay: 200
  mtu: 9000 # @bond-mtu
  trunking:
    mode: 802.1q # @bond-trunking
    nativeNetwork: mgmt
  allowedNetworks: [mgmt, storage] # @bond-allowed
`,
	"hardware.yaml": `apiVersion: slipway/v1 # @hw
kind: HardwareProfile
metadata:
  name: hw1
spec:
  vendor: Acme
  oob:
    port: 623 # @hw-port
    cipherSuite: 3 # @hw-cipher
  pxe:
    interface: pxe0 # @hw-pxe
    persistent: false # @hw-persistent
  deviceAliases:
    pxe0: {bus: pci, address: "0000:04:00.0"}
    data0: {bus: pci, address: "0000:3b:00.0"}
    data1: {bus: pci, address: "0000:3b:00.1"}
    disk0: {bus: scsi, address: "2:0.0.0"}
`,
	"profiles.yaml": `apiVersion: slipway/v1 # @hp-base
kind: HostProfile
metadata:
  name: base
spec:
  primaryNetwork: mgmt # @base-primary
  oob:
    credentials:
      username: admin # @base-username
      password: secret:bmc-admin # @base-password
  platform:
    kernelParams:
      console: ttyS1
  tags: [managed]
  ownerData:
    team: infra # @base-ownerdata
---
apiVersion: slipway/v1 # @hp-compute
kind: HostProfile
metadata:
  name: compute
spec:
  parent: base # @compute-parent
  hardwareProfile: hw1 # @compute-hw
  interfaces:
    pxe:
      link: pxe-link # @if-pxe
      devices: [pxe0]
      networks: [pxe]
    bond0:
      link: data-bond # @if-bond0
      devices: [data0, data1]
      networks: [mgmt, storage]
  storage:
    devices:
      disk0:
        partitions: # @disk0
          efi:
            size: 512mi # @efi-size
            filesystem: {fstype: vfat, mountpoint: /boot/efi} # @efi-fs
          pv:
            size: ">100g" # @pv-size
            volumeGroup: vg0 # @pv-vg
    volumeGroups:
      vg0:
        logicalVolumes: # @vg0
          root:
            size: 50g # @root-size
            filesystem: {fstype: ext4, mountpoint: /} # @root-fs
          var:
            size: ">10g" # @var-size
            filesystem: {fstype: xfs, mountpoint: /var} # @var-fs
`,
	"nodes.yaml": `apiVersion: slipway/v1 # @n1
kind: Node
metadata:
  name: n1
spec:
  hostProfile: compute # @n1-hp
  bootMac: "52:54:00:00:00:01" # @n1-mac
  oob:
    address: 10.10.0.101 # @n1-bmc
  addressing:
    - {network: pxe, address: dhcp} # @n1-addr0
    - {network: mgmt, address: 10.12.0.101} # @n1-addr1
    - {network: storage, address: 10.13.0.101} # @n1-addr2
---
apiVersion: slipway/v1 # @n2
kind: Node
metadata:
  name: n2
spec:
  hostProfile: compute # @n2-hp
  oob:
    address: 10.10.0.102 # @n2-bmc
  addressing:
    - {network: pxe, address: dhcp} # @n2-addr0
    - {network: mgmt, address: 10.12.0.102} # @n2-addr1
    - {network: storage, address: 10.13.0.102} # @n2-addr2
---
apiVersion: slipway/v1 # @n3
kind: Node
metadata:
  name: n3
spec:
  hostProfile: compute # @n3-hp
  oob:
    address: 10.10.0.103 # @n3-bmc
  addressing:
    - {network: pxe, address: dhcp} # @n3-addr0
    - {network: mgmt, address: 10.12.0.103} # @n3-addr1
    - {network: storage, address: 10.13.0.103} # @n3-addr2
`,
	"bootactions.yaml": `apiVersion: slipway/v1 # @ba
kind: BootAction
metadata:
  name: bootstrap
spec:
  assets:
    - path: /etc/motd # @asset0
      type: file
      permissions: "0644"
      data: hello
    - path: /etc/systemd/system/report.service # @asset1
      type: unit
      template: "[Unit]\nDescription=report {{ .Node.Hostname }}\n" # @asset1-template
`,
}

// files is one design root: file name -> YAML text.
type files map[string]string

func (f files) clone() files {
	out := make(files, len(f))
	for k, v := range f {
		out[k] = v
	}
	return out
}

// buildRoots parses every file of every root (root i is layer i, files in
// name order) and builds the design. The findings are the ingest's and
// Build's together, sorted as the CLI reports them.
func buildRoots(t *testing.T, roots ...files) (*design.Design, design.Findings) {
	t.Helper()
	var sources []design.Source
	var all design.Findings
	for i, root := range roots {
		names := make([]string, 0, len(root))
		for n := range root {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			s, fs := yamlingest.ParseFile(n, []byte(root[n]), i)
			sources = append(sources, s...)
			all = append(all, fs...)
		}
	}
	d, fs := design.Build(sources)
	all = append(all, fs...)
	all.Sort()
	return d, all
}

// lineOf returns the line of text that carries the comment "# @mark".
func lineOf(t *testing.T, text, mark string) int {
	t.Helper()
	found, line := 0, 0
	for i, l := range strings.Split(text, "\n") {
		j := strings.Index(l, "# @"+mark)
		if j < 0 {
			continue
		}
		if rest := l[j+3+len(mark):]; rest != "" && rest[0] != ' ' {
			continue
		}
		found++
		line = i + 1
	}
	if found != 1 {
		t.Fatalf("mark @%s found %d times, want once", mark, found)
	}
	return line
}

// edit changes a design before a case builds it.
type edit func(t *testing.T, f files)

// rep replaces old, which must occur exactly once in file, by new.
func rep(file, old, new string) edit {
	return func(t *testing.T, f files) {
		t.Helper()
		if n := strings.Count(f[file], old); n != 1 {
			t.Fatalf("edit of %s: %q occurs %d times, want once", file, old, n)
		}
		f[file] = strings.Replace(f[file], old, new, 1)
	}
}

// add appends YAML documents to file, creating it if needed.
func add(file, docs string) edit {
	return func(t *testing.T, f files) {
		if f[file] == "" {
			f[file] = docs
			return
		}
		f[file] += "---\n" + docs
	}
}

// drop removes file from the design.
func drop(file string) edit {
	return func(t *testing.T, f files) {
		if _, ok := f[file]; !ok {
			t.Fatalf("no file %s to drop", file)
		}
		delete(f, file)
	}
}

// exp is an expected finding: at is "file@mark" ("" for no position) and
// msg a substring of the message.
type exp struct {
	rule string
	sev  design.Severity
	kind string
	name string
	at   string
	msg  string
}

func fail(rule, kind, name, at, msg string) exp {
	return exp{rule, design.SeverityError, kind, name, at, msg}
}

func warn(rule, kind, name, at, msg string) exp {
	return exp{rule, design.SeverityWarning, kind, name, at, msg}
}

// row is a finding as compared: Msg is the expected substring when the
// message contains it, else the whole message.
type row struct {
	Rule     string
	Severity design.Severity
	Kind     string
	Name     string
	File     string
	Line     int
	Msg      string
}

func sortRows(rs []row) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		return fmt.Sprint(a.File, "\x00", fmt.Sprintf("%06d", a.Line), "\x00", a.Rule, "\x00", a.Kind, "\x00", a.Name, "\x00", a.Msg) <
			fmt.Sprint(b.File, "\x00", fmt.Sprintf("%06d", b.Line), "\x00", b.Rule, "\x00", b.Kind, "\x00", b.Name, "\x00", b.Msg)
	})
}

// checkFindings compares got with want exactly (rule, severity, kind, name,
// file, line; the message by substring) and fails on anything extra.
func checkFindings(t *testing.T, f files, got design.Findings, want []exp) {
	t.Helper()
	var wantRows []row
	for _, w := range want {
		r := row{Rule: w.rule, Severity: w.sev, Kind: w.kind, Name: w.name, Msg: w.msg}
		if w.at != "" {
			file, mark, _ := strings.Cut(w.at, "@")
			r.File = file
			if mark != "" {
				text, ok := f[file]
				if !ok {
					t.Fatalf("expected finding in %s, which the design does not have", file)
				}
				r.Line = lineOf(t, text, mark)
			}
		}
		wantRows = append(wantRows, r)
	}
	used := make([]bool, len(wantRows))
	var gotRows []row
	for _, g := range got {
		r := row{Rule: g.Rule, Severity: g.Severity, Kind: g.Kind, Name: g.Name, File: g.File, Line: g.Line, Msg: g.Message}
		for i, w := range wantRows {
			if !used[i] && w.Rule == r.Rule && w.Severity == r.Severity && w.Kind == r.Kind && w.Name == r.Name &&
				w.File == r.File && w.Line == r.Line && strings.Contains(g.Message, w.Msg) {
				used[i] = true
				r.Msg = w.Msg
				break
			}
		}
		gotRows = append(gotRows, r)
	}
	sortRows(wantRows)
	sortRows(gotRows)
	if d := cmp.Diff(wantRows, gotRows); d != "" {
		t.Errorf("findings (-want +got):\n%s", d)
	}
}

func TestBaseDesignIsClean(t *testing.T) {
	d, fs := buildRoots(t, baseDesign)
	checkFindings(t, baseDesign, fs, nil)
	if len(d.Nodes) != 3 {
		t.Errorf("base design has %d nodes, want 3", len(d.Nodes))
	}
}

// ruleCase is one design derived from the base: want lists every finding
// it must produce, none for a passing case.
type ruleCase struct {
	rule  string
	name  string
	edits []edit
	want  []exp
	// secret must not appear in any finding's message.
	secret string
}

const (
	netF   = "networks.yaml"
	hwF    = "hardware.yaml"
	profF  = "profiles.yaml"
	nodesF = "nodes.yaml"
	baF    = "bootactions.yaml"
	siteF  = "site.yaml"
	site2  = "apiVersion: slipway/v1 # @site2\nkind: Site\nmetadata:\n  name: lab2\nspec:\n  domain: lab2.example.net\n"
)

// profileChain returns HostProfile documents prefix1 .. prefixN, each the
// parent of the next, marked @prefixK-parent.
func profileChain(prefix string, n int) string {
	var b strings.Builder
	for k := 1; k <= n; k++ {
		if k > 1 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "apiVersion: slipway/v1\nkind: HostProfile\nmetadata:\n  name: %s%d\nspec:\n", prefix, k)
		if k > 1 {
			fmt.Fprintf(&b, "  parent: %s%d # @%s%d-parent\n", prefix, k-1, prefix, k)
		} else {
			b.WriteString("  tags: [chained]\n")
		}
	}
	return b.String()
}

// hostname returns a name of n characters in labels of at most 63.
func hostname(n int) string {
	var labels []string
	for n > 0 {
		l := min(n, 63)
		labels = append(labels, strings.Repeat("a", l))
		n -= l
		if n > 0 {
			n-- // the dot
		}
	}
	return strings.Join(labels, ".")
}

const spareNetwork = `apiVersion: slipway/v1 # @spare
kind: Network
metadata:
  name: spare # @spare-name
spec:
  cidr: 10.99.0.0/24 # @spare-cidr
`

var ruleCases = []ruleCase{
	// schema
	{rule: "schema", name: "malformed YAML",
		edits: []edit{add("broken.yaml", "apiVersion: slipway/v1\nkind: Network\nmetadata:\n  name: x: y # @bad\n")},
		want:  []exp{fail("schema", "", "", "broken.yaml@bad", "malformed YAML")}},
	{rule: "schema", name: "key twice in a mapping",
		edits: []edit{add("broken.yaml", "apiVersion: slipway/v1\nkind: Network\nmetadata:\n  name: x\nspec:\n  cidr: 10.98.0.0/24\n  cidr: 10.97.0.0/24 # @second\n")},
		want:  []exp{fail("schema", "", "", "broken.yaml@second", `key "cidr" appears twice`)}},
	{rule: "schema", name: "unknown apiVersion",
		edits: []edit{rep(netF, "apiVersion: slipway/v1 # @net-oob", "apiVersion: slipway/v2 # @net-oob")},
		want:  []exp{fail("schema", "Network", "oob", netF+"@net-oob", `unknown apiVersion "slipway/v2"`)}},
	{rule: "schema", name: "missing apiVersion",
		edits: []edit{rep(netF, "apiVersion: slipway/v1 # @net-oob\nkind: Network\n", "kind: Network # @oob-kind\n")},
		want:  []exp{fail("schema", "Network", "oob", netF+"@oob-kind", "apiVersion is required")}},
	{rule: "schema", name: "unknown kind",
		edits: []edit{rep(netF, "apiVersion: slipway/v1 # @net-oob\nkind: Network\n", "apiVersion: slipway/v1\nkind: Netwrk # @oob-kind\n")},
		want:  []exp{fail("schema", "Netwrk", "oob", netF+"@oob-kind", `unknown kind "Netwrk"`)}},
	{rule: "schema", name: "unknown top-level field",
		edits: []edit{rep(netF, "  vlan: 10 # @oob-vlan\n", "  vlan: 10\nstatus: {} # @status\n")},
		want:  []exp{fail("schema", "Network", "oob", netF+"@status", `unknown top-level field "status"`)}},
	{rule: "schema", name: "unknown field in spec",
		edits: []edit{rep(netF, "  mtu: 1500 # @mgmt-mtu\n", "  mtu: 1500\n  colour: blue # @colour\n")},
		want:  []exp{fail("schema", "Network", "mgmt", netF+"@colour", `unknown field "colour"`)}},
	{rule: "schema", name: "unknown field deep in a profile",
		edits: []edit{rep(profF, "      networks: [mgmt, storage]\n", "      networks: [mgmt, storage]\n      speed: 25g # @speed\n")},
		want:  []exp{fail("schema", "HostProfile", "compute", profF+"@speed", `unknown field "speed"`)}},
	{rule: "schema", name: "unknown field in a node",
		edits: []edit{rep(nodesF, "  hostProfile: compute # @n2-hp\n", "  hostProfile: compute\n  hostprofile: compute # @typo\n")},
		want:  []exp{fail("schema", "Node", "n2", nodesF+"@typo", `unknown field "hostprofile"`)}},
	{rule: "schema", name: "string where an integer goes",
		edits: []edit{rep(netF, "  vlan: 30 # @storage-vlan", "  vlan: thirty # @storage-vlan")},
		want:  []exp{fail("schema", "Network", "storage", netF+"@storage-vlan", "must be an integer")}},
	{rule: "schema", name: "list where a string goes",
		edits: []edit{rep(netF, "  gateway: 10.11.0.1 # @pxe-gateway", "  gateway: [10.11.0.1] # @pxe-gateway")},
		want:  []exp{fail("schema", "Network", "pxe", netF+"@pxe-gateway", "must be a string")}},
	{rule: "schema", name: "string where a bool goes",
		edits: []edit{rep(hwF, "    persistent: false # @hw-persistent", "    persistent: yes # @hw-persistent")},
		want:  []exp{fail("schema", "HardwareProfile", "hw1", hwF+"@hw-persistent", "must be true or false")}},
	{rule: "schema", name: "value outside an enum",
		edits: []edit{rep(netF, "    mode: 802.3ad # @bond-mode", "    mode: lacp # @bond-mode")},
		want:  []exp{fail("schema", "NetworkLink", "data-bond", netF+"@bond-mode", `"lacp" is not one of`)}},
	{rule: "schema", name: "required cidr missing",
		edits: []edit{rep(netF, "  cidr: 10.13.0.0/24 # @storage-cidr\n", "")},
		want:  []exp{fail("schema", "Network", "storage", netF+"@storage-vlan", "spec.cidr is required")}},
	{rule: "schema", name: "required range end missing",
		edits: []edit{rep(netF, "    - {type: dhcp, start: 10.11.0.10, end: 10.11.0.250} # @pxe-range1", "    - {type: dhcp, start: 10.11.0.10} # @pxe-range1")},
		want:  []exp{fail("schema", "Network", "pxe", netF+"@pxe-range1", "spec.ranges[1].end is required")}},
	{rule: "schema", name: "required interface link missing",
		edits: []edit{rep(profF, "      link: pxe-link # @if-pxe\n      devices: [pxe0]\n", "      devices: [pxe0] # @if-pxe-devices\n")},
		// Required fields are checked on nodes (a profile may leave them to
		// its children); the finding shared by every node is reported once.
		want: []exp{fail("schema", "Node", "n1", profF+"@if-pxe-devices", "interfaces.pxe.link is required (reported once; 2 more objects share it)")}},
	{rule: "schema", name: "duplicate kind/name in one root",
		edits: []edit{add(netF, "apiVersion: slipway/v1 # @dup\nkind: Network\nmetadata:\n  name: pxe\nspec:\n  cidr: 10.11.0.0/24\n")},
		want:  []exp{fail("schema", "Network", "pxe", netF+"@dup", `duplicate Network "pxe"`)}},
	{rule: "schema", name: "duplicate kind/name across files of one root",
		edits: []edit{add("zz-more.yaml", "apiVersion: slipway/v1 # @dup\nkind: NetworkLink\nmetadata:\n  name: pxe-link\nspec:\n  allowedNetworks: [pxe]\n")},
		want:  []exp{fail("schema", "NetworkLink", "pxe-link", "zz-more.yaml@dup", `duplicate NetworkLink "pxe-link"`)}},
	{rule: "schema", name: "name not a DNS label",
		edits: []edit{add(netF, strings.Replace(spareNetwork, "name: spare", "name: Spare_Net", 1))},
		want:  []exp{fail("schema", "Network", "Spare_Net", netF+"@spare-name", "is not a DNS-1123 label")}},
	{rule: "schema", name: "metadata.name missing",
		edits: []edit{add(netF, "apiVersion: slipway/v1\nkind: Network\nmetadata:\n  labels: {a: b} # @meta\nspec:\n  cidr: 10.99.0.0/24\n")},
		want:  []exp{fail("schema", "Network", "", netF+"@meta", "metadata.name is required")}},
	{rule: "schema", name: "node without addressing",
		edits: []edit{rep(nodesF, "  addressing:\n    - {network: pxe, address: dhcp} # @n3-addr0\n    - {network: mgmt, address: 10.12.0.103} # @n3-addr1\n    - {network: storage, address: 10.13.0.103} # @n3-addr2\n", "")},
		want:  []exp{fail("schema", "Node", "n3", nodesF+"@n3", "spec.addressing needs at least one entry")}},
	{rule: "site", name: "second Site: a node names no site",
		edits: []edit{add(siteF, site2), rep(nodesF, "  hostProfile: compute # @n1-hp", "  hostProfile: compute # @n1-hp\n  site: lab"),
			rep(nodesF, "  hostProfile: compute # @n2-hp", "  hostProfile: compute # @n2-hp\n  site: lab2")},
		want: []exp{fail("site", "Node", "n3", nodesF+"@n3", "name the node's in spec.site")}},
	{rule: "site", name: "second Site: every node names its own (through its host profile)",
		edits: []edit{add(siteF, site2), rep(profF, "  primaryNetwork: mgmt # @base-primary", "  primaryNetwork: mgmt # @base-primary\n  site: lab2")}},
	{rule: "site", name: "a node names a site the design lacks",
		edits: []edit{rep(nodesF, "  hostProfile: compute # @n1-hp", "  hostProfile: compute # @n1-hp\n  site: lab9 # @n1-site")},
		want:  []exp{fail("site", "Node", "n1", nodesF+"@n1-site", `site "lab9" is not a Site of the design`)}},
	{rule: "site", name: "second Site sets a design-wide setting",
		edits: []edit{add(siteF, site2+"  introspection: {url: \"http://10.12.0.1:8081\"}\n"),
			rep(profF, "  primaryNetwork: mgmt # @base-primary", "  primaryNetwork: mgmt # @base-primary\n  site: lab")},
		want: []exp{fail("site", "Site", "lab2", siteF+"@site2", "introspection applies design-wide: set it on the first Site, lab")}},
	{rule: "schema", name: "no Site",
		edits: []edit{drop(siteF)},
		want:  []exp{fail("schema", "Site", "", "", "no Site document")}},
	{rule: "schema", name: "Site dns server not an IP",
		edits: []edit{rep(siteF, "    servers: [10.12.0.10] # @dns-servers", "    servers: [ns1.lab] # @dns-servers")},
		want:  []exp{fail("schema", "Site", "lab", siteF+"@dns-servers", `dns.servers[0] "ns1.lab" is not an IP address`)}},
	{rule: "schema", name: "credentials without a password",
		edits: []edit{rep(profF, "      password: secret:bmc-admin # @base-password\n", "")},
		want:  []exp{fail("schema", "Node", "n1", profF+"@base-username", "spec.oob.credentials.password is required")}},
	{rule: "schema", name: "ok: node takes the Site default host profile",
		edits: []edit{
			rep(nodesF, "  hostProfile: compute # @n3-hp\n", ""),
			rep(siteF, "  defaults:\n", "  defaults:\n    hostProfile: compute\n"),
		}},
	{rule: "schema", name: "ok: unquoted octal permissions and a YAML anchor",
		edits: []edit{
			rep(baF, `permissions: "0644"`, "permissions: 0644"),
			rep(nodesF, "    - {network: pxe, address: dhcp} # @n1-addr0", "    - &pxedhcp {network: pxe, address: dhcp} # @n1-addr0"),
			rep(nodesF, "    - {network: pxe, address: dhcp} # @n2-addr0", "    - *pxedhcp"),
		}},

	// reference
	{rule: "reference", name: "hardwareProfile missing",
		edits: []edit{rep(profF, "  hardwareProfile: hw1 # @compute-hw", "  hardwareProfile: hw9 # @compute-hw")},
		want:  []exp{fail("reference", "HostProfile", "compute", profF+"@compute-hw", `hardwareProfile "hw9" does not exist`)}},
	{rule: "reference", name: "primaryNetwork missing",
		edits: []edit{rep(profF, "  primaryNetwork: mgmt # @base-primary", "  primaryNetwork: mgnt # @base-primary")},
		want:  []exp{fail("reference", "HostProfile", "base", profF+"@base-primary", `primaryNetwork "mgnt" does not exist`)}},
	{rule: "reference", name: "parent missing",
		edits: []edit{add(profF, "apiVersion: slipway/v1\nkind: HostProfile\nmetadata:\n  name: orphan\nspec:\n  parent: nobody # @orphan-parent\n")},
		want:  []exp{fail("reference", "HostProfile", "orphan", profF+"@orphan-parent", `parent HostProfile "nobody" does not exist`)}},
	{rule: "reference", name: "interface link missing",
		edits: []edit{rep(profF, "      link: pxe-link # @if-pxe", "      link: pxe-lnk # @if-pxe")},
		want:  []exp{fail("reference", "HostProfile", "compute", profF+"@if-pxe", `link "pxe-lnk" does not exist`)}},
	{rule: "reference", name: "interface network missing",
		edits: []edit{rep(profF, "      networks: [mgmt, storage]", "      networks: [mgmt, storage, backup]")},
		want:  []exp{fail("reference", "HostProfile", "compute", profF+"@if-bond0", `network "backup" does not exist`)}},
	{rule: "reference", name: "allowedNetworks missing",
		edits: []edit{rep(netF, "  allowedNetworks: [mgmt, storage] # @bond-allowed", "  allowedNetworks: [mgmt, storage, backup] # @bond-allowed")},
		want:  []exp{fail("reference", "NetworkLink", "data-bond", netF+"@bond-allowed", `Network "backup", which does not exist`)}},
	{rule: "reference", name: "interface device alias missing",
		edits: []edit{rep(profF, "      devices: [data0, data1]", "      devices: [data0, data9]")},
		want:  []exp{fail("reference", "HostProfile", "compute", profF+"@if-bond0", `device "data9" is neither a deviceAlias`)}},
	{rule: "reference", name: "device alias missing on the node's own hardware",
		edits: []edit{
			add(hwF, "apiVersion: slipway/v1\nkind: HardwareProfile\nmetadata:\n  name: hw2\nspec:\n  deviceAliases:\n    pxe0: {bus: pci, address: \"0000:04:00.0\"}\n    data0: {bus: pci, address: \"0000:3b:00.0\"}\n    data1: {bus: pci, address: \"0000:3b:00.1\"}\n    disk1: {bus: scsi, address: \"2:0.0.0\"}\n"),
			rep(nodesF, "  hostProfile: compute # @n2-hp\n", "  hostProfile: compute\n  hardwareProfile: hw2\n"),
		},
		want: []exp{fail("reference", "Node", "n2", profF+"@disk0", `device "disk0" is neither a deviceAlias of the hardware profile (data0, data1, disk1, pxe0)`)}},
	{rule: "reference", name: "storage device alias missing",
		edits: []edit{rep(profF, "      disk0:\n", "      disk9:\n")},
		want:  []exp{fail("reference", "HostProfile", "compute", profF+"@disk0", `storage.devices.disk9: device "disk9" is neither`)}},
	{rule: "reference", name: "volume group missing",
		edits: []edit{
			rep(profF, "            volumeGroup: vg0 # @pv-vg", "            volumeGroup: vg0 # @pv-vg\n          pv2:\n            size: 10g # @pv2\n            volumeGroup: vg9"),
		},
		want: []exp{fail("reference", "HostProfile", "compute", profF+"@pv2", `volumeGroup "vg9" is not defined`)}},
	{rule: "reference", name: "pxe.interface not an alias",
		edits: []edit{rep(hwF, "    interface: pxe0 # @hw-pxe", "    interface: eth9 # @hw-pxe")},
		want:  []exp{fail("reference", "HardwareProfile", "hw1", hwF+"@hw-pxe", `pxe.interface "eth9" is not one of`)}},
	{rule: "reference", name: "addressed network missing",
		edits: []edit{rep(nodesF, "    - {network: pxe, address: dhcp} # @n1-addr0", "    - {network: pxee, address: dhcp} # @n1-addr0")},
		want:  []exp{fail("reference", "Node", "n1", nodesF+"@n1-addr0", `network "pxee" does not exist`)}},
	{rule: "reference", name: "node hostProfile missing",
		edits: []edit{
			rep(nodesF, "  hostProfile: compute # @n3-hp", "  hostProfile: compte # @n3-hp"),
		},
		want: []exp{
			fail("reference", "Node", "n3", nodesF+"@n3-hp", `HostProfile "compte" does not exist`),
			// Without its profile, n3 has no interfaces, storage or credentials.
			fail("network-on-link", "Node", "n3", nodesF+"@n3-addr0", `network "pxe" is addressed but no interface carries it`),
			fail("network-on-link", "Node", "n3", nodesF+"@n3-addr1", `network "mgmt" is addressed but no interface carries it`),
			fail("network-on-link", "Node", "n3", nodesF+"@n3-addr2", `network "storage" is addressed but no interface carries it`),
			fail("storage", "Node", "n3", nodesF+"@n3", "no filesystem mounted at /"),
			fail("oob", "Node", "n3", nodesF+"@n3-bmc", "needs oob.credentials"),
		}},
	{rule: "reference", name: "Site default host profile missing",
		edits: []edit{rep(siteF, "  defaults:\n", "  defaults:\n    hostProfile: compte # @default-hp\n")},
		want:  []exp{fail("reference", "Site", "lab", siteF+"@default-hp", `HostProfile "compte", which does not exist`)}},
	{rule: "reference", name: "boot action names a missing node",
		edits: []edit{add(baF, "apiVersion: slipway/v1\nkind: BootAction\nmetadata:\n  name: extra\nspec:\n  nodeFilter:\n    names: [n9] # @extra-filter\n  assets:\n    - {path: /etc/extra, type: file, data: x}\n")},
		want:  []exp{warn("reference", "BootAction", "extra", baF+"@extra-filter", `node "n9", which does not exist`)}},
	{rule: "reference", name: "ok: kernel device names and a node's own hardware",
		edits: []edit{
			rep(profF, "      devices: [data0, data1]", "      devices: [eno1, /dev/disk/by-path/x]"),
			add(hwF, "apiVersion: slipway/v1\nkind: HardwareProfile\nmetadata:\n  name: hw2\nspec:\n  deviceAliases:\n    pxe0: {bus: pci, address: \"0000:04:00.0\"}\n    disk0: {bus: nvme, address: \"0000:01:00.0\"}\n"),
			rep(nodesF, "  hostProfile: compute # @n2-hp\n", "  hostProfile: compute\n  hardwareProfile: hw2\n"),
		}},

	// inheritance-cycle
	{rule: "inheritance-cycle", name: "two-profile cycle",
		edits: []edit{add(profF, "apiVersion: slipway/v1\nkind: HostProfile\nmetadata:\n  name: a\nspec:\n  parent: b # @a-parent\n---\napiVersion: slipway/v1\nkind: HostProfile\nmetadata:\n  name: b\nspec:\n  parent: a # @b-parent\n")},
		want: []exp{
			fail("inheritance-cycle", "HostProfile", "a", profF+"@a-parent", "never ends"),
			fail("inheritance-cycle", "HostProfile", "b", profF+"@b-parent", "never ends"),
		}},
	{rule: "inheritance-cycle", name: "profile is its own parent",
		edits: []edit{add(profF, "apiVersion: slipway/v1\nkind: HostProfile\nmetadata:\n  name: selfish\nspec:\n  parent: selfish # @self-parent\n")},
		want:  []exp{fail("inheritance-cycle", "HostProfile", "selfish", profF+"@self-parent", "never ends")}},
	{rule: "inheritance-cycle", name: "cycle above a node's profile",
		edits: []edit{
			rep(profF, "  primaryNetwork: mgmt # @base-primary", "  parent: compute # @base-parent\n  primaryNetwork: mgmt # @base-primary"),
		},
		want: []exp{
			fail("inheritance-cycle", "HostProfile", "base", profF+"@base-parent", "never ends"),
			fail("inheritance-cycle", "HostProfile", "compute", profF+"@compute-parent", "never ends"),
		}},
	{rule: "inheritance-cycle", name: "chain of 17",
		edits: []edit{add(profF, profileChain("deep", 17))},
		want:  []exp{fail("inheritance-cycle", "HostProfile", "deep17", profF+"@deep17-parent", "deeper than 16")}},
	{rule: "inheritance-cycle", name: "ok: chain of 16",
		edits: []edit{add(profF, profileChain("deep", 16))}},

	// cidr
	{rule: "cidr", name: "host bits set",
		edits: []edit{rep(netF, "  cidr: 10.11.0.0/24 # @pxe-cidr", "  cidr: 10.11.0.1/24 # @pxe-cidr")},
		want:  []exp{fail("cidr", "Network", "pxe", netF+"@pxe-cidr", "has host bits set; did you mean 10.11.0.0/24?")}},
	{rule: "cidr", name: "does not parse",
		edits: []edit{rep(netF, "  cidr: 10.11.0.0/24 # @pxe-cidr", "  cidr: 10.11.0/24 # @pxe-cidr")},
		want:  []exp{fail("cidr", "Network", "pxe", netF+"@pxe-cidr", `cidr "10.11.0/24" does not parse`)}},
	{rule: "cidr", name: "prefix too long",
		edits: []edit{rep(netF, "  cidr: 10.11.0.0/24 # @pxe-cidr", "  cidr: 10.11.0.0/33 # @pxe-cidr")},
		want:  []exp{fail("cidr", "Network", "pxe", netF+"@pxe-cidr", "does not parse")}},
	{rule: "cidr", name: "route destination with host bits",
		edits: []edit{rep(netF, "{to: 10.0.0.0/24,", "{to: 10.0.0.5/24,")},
		want:  []exp{fail("cidr", "Network", "mgmt", netF+"@mgmt-route0", "did you mean 10.0.0.0/24?")}},
	{rule: "cidr", name: "route destination not a CIDR",
		edits: []edit{rep(netF, "{to: 10.0.0.0/24,", "{to: 10.0.0.0,")},
		want:  []exp{fail("cidr", "Network", "mgmt", netF+"@mgmt-route0", `routes[0].to "10.0.0.0" is not a CIDR`)}},
	{rule: "cidr", name: "ok: /32, IPv6 and a default route",
		edits: []edit{
			add(netF, strings.Replace(spareNetwork, "10.99.0.0/24", "10.99.0.7/32", 1)),
			add(netF, "apiVersion: slipway/v1\nkind: Network\nmetadata:\n  name: v6\nspec:\n  cidr: fd00:12::/64\n"),
			rep(netF, "{to: 10.0.0.0/24,", "{to: 0.0.0.0/0,"),
		}},

	// vlan
	{rule: "vlan", name: "vlan 0",
		edits: []edit{rep(netF, "  vlan: 30 # @storage-vlan", "  vlan: 0 # @storage-vlan")},
		want:  []exp{fail("vlan", "Network", "storage", netF+"@storage-vlan", "vlan 0 is outside 1..4094")}},
	{rule: "vlan", name: "vlan 4095",
		edits: []edit{rep(netF, "  vlan: 30 # @storage-vlan", "  vlan: 4095 # @storage-vlan")},
		want:  []exp{fail("vlan", "Network", "storage", netF+"@storage-vlan", "vlan 4095 is outside 1..4094")}},
	{rule: "vlan", name: "negative vlan",
		edits: []edit{rep(netF, "  vlan: 10 # @oob-vlan", "  vlan: -10 # @oob-vlan")},
		want:  []exp{fail("vlan", "Network", "oob", netF+"@oob-vlan", "vlan -10 is outside 1..4094")}},
	{rule: "vlan", name: "two networks share a VLAN on a link",
		edits: []edit{
			add(netF, "apiVersion: slipway/v1\nkind: Network\nmetadata:\n  name: backup\nspec:\n  cidr: 10.15.0.0/24\n  vlan: 30\n"),
			rep(netF, "  allowedNetworks: [mgmt, storage] # @bond-allowed", "  allowedNetworks: [mgmt, storage, backup] # @bond-allowed"),
		},
		want: []exp{fail("vlan", "NetworkLink", "data-bond", netF+"@bond-allowed", `networks "storage" and "backup" share VLAN 30`)}},
	{rule: "vlan", name: "ok: vlan 1 and 4094, and one VLAN on two links",
		edits: []edit{
			rep(netF, "  vlan: 30 # @storage-vlan", "  vlan: 4094 # @storage-vlan"),
			rep(netF, "  vlan: 10 # @oob-vlan", "  vlan: 1 # @oob-vlan"),
			rep(netF, "  gateway: 10.11.0.1 # @pxe-gateway", "  vlan: 4094\n  gateway: 10.11.0.1"),
		}},

	// mtu
	{rule: "mtu", name: "network mtu below 1280",
		edits: []edit{rep(netF, "  mtu: 1500 # @mgmt-mtu", "  mtu: 1279 # @mgmt-mtu")},
		want:  []exp{fail("mtu", "Network", "mgmt", netF+"@mgmt-mtu", "mtu 1279 is outside 1280..9216")}},
	{rule: "mtu", name: "network mtu above 9216 and above its link's",
		edits: []edit{rep(netF, "  mtu: 1500 # @mgmt-mtu", "  mtu: 9300 # @mgmt-mtu")},
		want: []exp{
			fail("mtu", "Network", "mgmt", netF+"@mgmt-mtu", "mtu 9300 is outside 1280..9216"),
			fail("mtu", "Network", "mgmt", netF+"@mgmt-mtu", `mtu 9300 is larger than the mtu 9000 of NetworkLink "data-bond"`),
		}},
	{rule: "mtu", name: "link mtu above 9216",
		edits: []edit{rep(netF, "  mtu: 9000 # @bond-mtu", "  mtu: 9217 # @bond-mtu")},
		want:  []exp{fail("mtu", "NetworkLink", "data-bond", netF+"@bond-mtu", "mtu 9217 is outside 1280..9216")}},
	{rule: "mtu", name: "network mtu above its link's",
		edits: []edit{rep(netF, "  mtu: 9000 # @bond-mtu", "  mtu: 8000 # @bond-mtu")},
		want:  []exp{fail("mtu", "Network", "storage", netF+"@storage-mtu", `mtu 9000 is larger than the mtu 8000 of NetworkLink "data-bond"`)}},
	{rule: "mtu", name: "default network mtu above its link's",
		edits: []edit{rep(netF, "  allowedNetworks: [pxe] # @pxe-link-allowed", "  mtu: 1400\n  allowedNetworks: [pxe] # @pxe-link-allowed")},
		want:  []exp{fail("mtu", "Network", "pxe", netF+"@net-pxe", `mtu 1500 is larger than the mtu 1400 of NetworkLink "pxe-link"`)}},
	{rule: "mtu", name: "default mtu of two networks above their link's",
		edits: []edit{add(netF, "apiVersion: slipway/v1 # @x1\nkind: Network\nmetadata:\n  name: x1\nspec:\n  cidr: 10.50.0.0/24\n  vlan: 50\n---\napiVersion: slipway/v1 # @x2\nkind: Network\nmetadata:\n  name: x2\nspec:\n  cidr: 10.51.0.0/24\n  vlan: 51\n---\napiVersion: slipway/v1\nkind: NetworkLink\nmetadata:\n  name: small\nspec:\n  mtu: 1400\n  trunking: {mode: 802.1q}\n  allowedNetworks: [x1, x2]\n")},
		want: []exp{
			fail("mtu", "Network", "x1", netF+"@x1", `mtu 1500 is larger than the mtu 1400 of NetworkLink "small"`),
			fail("mtu", "Network", "x2", netF+"@x2", `mtu 1500 is larger than the mtu 1400 of NetworkLink "small"`),
		}},
	{rule: "mtu", name: "ok: 1280 and 9216",
		edits: []edit{
			rep(netF, "  mtu: 1500 # @mgmt-mtu", "  mtu: 1280 # @mgmt-mtu"),
			rep(netF, "  mtu: 9000 # @storage-mtu", "  mtu: 9216 # @storage-mtu"),
			rep(netF, "  mtu: 9000 # @bond-mtu", "  mtu: 9216 # @bond-mtu"),
		}},

	// ip-in-network
	{rule: "ip-in-network", name: "gateway outside",
		edits: []edit{rep(netF, "  gateway: 10.12.0.1 # @mgmt-gateway", "  gateway: 10.99.0.1 # @mgmt-gateway")},
		want:  []exp{fail("ip-in-network", "Network", "mgmt", netF+"@mgmt-gateway", "gateway 10.99.0.1 is outside network mgmt (10.12.0.0/24)")}},
	{rule: "ip-in-network", name: "ok: range starting at the network address",
		edits: []edit{rep(netF, "{type: reserved, start: 10.11.0.2,", "{type: reserved, start: 10.11.0.0,")}},
	{rule: "ip-in-network", name: "range end outside",
		edits: []edit{rep(netF, "{type: dhcp, start: 10.11.0.10, end: 10.11.0.250}", "{type: dhcp, start: 10.11.0.10, end: 10.11.1.250}")},
		want:  []exp{fail("ip-in-network", "Network", "pxe", netF+"@pxe-range1", "ranges[1].end 10.11.1.250 is outside network pxe (10.11.0.0/24)")}},
	{rule: "ip-in-network", name: "range start below the network",
		edits: []edit{rep(netF, "{type: reserved, start: 10.11.0.2,", "{type: reserved, start: 10.10.255.2,")},
		want:  []exp{fail("ip-in-network", "Network", "pxe", netF+"@pxe-range0", "ranges[0].start 10.10.255.2 is outside network pxe")}},
	{rule: "ip-in-network", name: "route gateway outside",
		edits: []edit{rep(netF, "via: 10.12.0.254,", "via: 10.13.0.254,")},
		want:  []exp{fail("ip-in-network", "Network", "mgmt", netF+"@mgmt-route0", "routes[0].via 10.13.0.254 is outside network mgmt")}},
	{rule: "ip-in-network", name: "node address outside",
		edits: []edit{rep(nodesF, "{network: mgmt, address: 10.12.0.101}", "{network: mgmt, address: 10.13.0.201}")},
		want:  []exp{fail("ip-in-network", "Node", "n1", nodesF+"@n1-addr1", "addressing[1].address 10.13.0.201 is outside network mgmt")}},
	{rule: "ip-in-network", name: "ok: addresses at the edges of the network",
		edits: []edit{
			rep(netF, "  gateway: 10.12.0.1 # @mgmt-gateway", "  gateway: 10.12.0.254 # @mgmt-gateway"),
			rep(netF, "via: 10.12.0.254,", "via: 10.12.0.253,"),
			rep(nodesF, "{network: mgmt, address: 10.12.0.101}", "{network: mgmt, address: 10.12.0.255}"),
		}},

	// ip-duplicate
	{rule: "ip-duplicate", name: "two nodes, one address",
		edits: []edit{rep(nodesF, "{network: mgmt, address: 10.12.0.102}", "{network: mgmt, address: 10.12.0.101}")},
		want:  []exp{fail("ip-duplicate", "Node", "n2", nodesF+"@n2-addr1", "address 10.12.0.101 is already used by Node/n1 at nodes.yaml:12")}},
	{rule: "ip-duplicate", name: "node address is the gateway",
		edits: []edit{rep(nodesF, "{network: mgmt, address: 10.12.0.101}", "{network: mgmt, address: 10.12.0.1}")},
		want:  []exp{fail("ip-duplicate", "Node", "n1", nodesF+"@n1-addr1", "address 10.12.0.1 is already used by Network/mgmt at networks.yaml:")}},
	{rule: "ip-duplicate", name: "BMC address is a node address",
		edits: []edit{rep(nodesF, "    address: 10.10.0.102 # @n2-bmc", "    address: 10.12.0.101 # @n2-bmc")},
		want:  []exp{fail("ip-duplicate", "Node", "n2", nodesF+"@n2-bmc", "BMC address 10.12.0.101 is already used by Node/n1")}},
	{rule: "ip-duplicate", name: "two gateways",
		edits: []edit{add(netF, strings.Replace(spareNetwork, "10.99.0.0/24 # @spare-cidr", "10.12.0.0/25\n  gateway: 10.12.0.1 # @spare-gw", 1))},
		want:  []exp{fail("ip-duplicate", "Network", "spare", netF+"@spare-gw", "gateway 10.12.0.1 is already used by Network/mgmt")}},
	{rule: "ip-duplicate", name: "ok: one host part in several networks, dhcp everywhere",
		edits: []edit{rep(nodesF, "{network: storage, address: 10.13.0.102}", "{network: storage, address: dhcp}")}},

	// ip-range
	{rule: "ip-range", name: "ranges overlap",
		edits: []edit{rep(netF, "{type: dhcp, start: 10.11.0.10,", "{type: dhcp, start: 10.11.0.9,")},
		want:  []exp{fail("ip-range", "Network", "pxe", netF+"@pxe-range1", "ranges[1] 10.11.0.9-10.11.0.250 overlaps the reserved range 10.11.0.2-10.11.0.9")}},
	{rule: "ip-range", name: "range contains another",
		edits: []edit{rep(netF, "{type: dhcp, start: 10.11.0.10,", "{type: dhcp, start: 10.11.0.1,")},
		want:  []exp{fail("ip-range", "Network", "pxe", netF+"@pxe-range1", "overlaps the reserved range")}},
	{rule: "ip-range", name: "start after end",
		edits: []edit{rep(netF, "{type: dhcp, start: 10.11.0.10, end: 10.11.0.250}", "{type: dhcp, start: 10.11.0.250, end: 10.11.0.10}")},
		want:  []exp{fail("ip-range", "Network", "pxe", netF+"@pxe-range1", "ranges[1] starts at 10.11.0.250 after its end 10.11.0.10")}},
	{rule: "ip-range", name: "node address in a reserved range",
		edits: []edit{rep(nodesF, "{network: mgmt, address: 10.12.0.101}", "{network: mgmt, address: 10.12.0.5}")},
		want:  []exp{fail("ip-range", "Node", "n1", nodesF+"@n1-addr1", "10.12.0.5 is inside the reserved range 10.12.0.2-10.12.0.9 of network mgmt")}},
	{rule: "ip-range", name: "node address in a dhcp range",
		edits: []edit{rep(nodesF, "{network: pxe, address: dhcp} # @n2-addr0", "{network: pxe, address: 10.11.0.50} # @n2-addr0")},
		want:  []exp{fail("ip-range", "Node", "n2", nodesF+"@n2-addr0", "10.11.0.50 is inside the dhcp range 10.11.0.10-10.11.0.250 of network pxe")}},
	{rule: "ip-range", name: "ok: single-address range, node outside any range",
		edits: []edit{
			rep(netF, "{type: reserved, start: 10.11.0.2, end: 10.11.0.9}", "{type: reserved, start: 10.11.0.9, end: 10.11.0.9}"),
			rep(nodesF, "{network: pxe, address: dhcp} # @n2-addr0", "{network: pxe, address: 10.11.0.251} # @n2-addr0"),
			rep(nodesF, "{network: mgmt, address: 10.12.0.101}", "{network: mgmt, address: 10.12.0.200}"),
		}},

	// trunking
	{rule: "trunking", name: "two networks without trunking",
		edits: []edit{rep(netF, "    mode: 802.1q # @bond-trunking\n    nativeNetwork: mgmt\n", "    mode: disabled # @bond-trunking\n")},
		want:  []exp{fail("trunking", "NetworkLink", "data-bond", netF+"@bond-allowed", "the link carries 2 networks (mgmt, storage) without trunking")}},
	{rule: "trunking", name: "two networks, trunking left at its default",
		edits: []edit{rep(netF, "  allowedNetworks: [pxe] # @pxe-link-allowed", "  allowedNetworks: [pxe, oob] # @pxe-link-allowed")},
		want:  []exp{fail("trunking", "NetworkLink", "pxe-link", netF+"@pxe-link-allowed", "the link carries 2 networks (pxe, oob) without trunking")}},
	{rule: "trunking", name: "native network not allowed",
		edits: []edit{rep(netF, "    nativeNetwork: mgmt\n", "    nativeNetwork: pxe\n")},
		want: []exp{
			fail("trunking", "NetworkLink", "data-bond", netF+"@bond-trunking", `trunking.nativeNetwork "pxe" is not in allowedNetworks`),
			fail("trunking", "NetworkLink", "data-bond", netF+"@bond-allowed", `network "mgmt" has no vlan; on an 802.1q trunk only the nativeNetwork may be untagged`),
		}},
	{rule: "trunking", name: "untagged network on a trunk without native network",
		edits: []edit{rep(netF, "    nativeNetwork: mgmt\n", "")},
		want:  []exp{fail("trunking", "NetworkLink", "data-bond", netF+"@bond-allowed", `network "mgmt" has no vlan`)}},
	{rule: "trunking", name: "native network without trunking",
		edits: []edit{rep(netF, "  allowedNetworks: [pxe] # @pxe-link-allowed", "  trunking: {mode: disabled, nativeNetwork: pxe} # @pxe-trunking\n  allowedNetworks: [pxe]")},
		want:  []exp{fail("trunking", "NetworkLink", "pxe-link", netF+"@pxe-trunking", "trunking.nativeNetwork is set but trunking.mode is disabled")}},
	{rule: "trunking", name: "ok: all-tagged trunk without native network, one network without trunking",
		edits: []edit{
			rep(netF, "    nativeNetwork: mgmt\n", ""),
			rep(netF, "  mtu: 1500 # @mgmt-mtu", "  vlan: 20\n  mtu: 1500"),
			rep(netF, "  allowedNetworks: [pxe] # @pxe-link-allowed", "  trunking: {mode: disabled}\n  allowedNetworks: [pxe]"),
		}},

	// bonding
	{rule: "bonding", name: "bond options without a bond mode",
		edits: []edit{rep(netF, "  allowedNetworks: [pxe] # @pxe-link-allowed", "  bonding: {hash: layer3+4, miimon: 100} # @pxe-bonding\n  allowedNetworks: [pxe]")},
		want:  []exp{fail("bonding", "NetworkLink", "pxe-link", netF+"@pxe-bonding", "bonding options hash, miimon need a bonding.mode")}},
	{rule: "bonding", name: "updelay shorter than miimon",
		edits: []edit{rep(netF, "    updelay: 200\n", "    updelay: 50\n")},
		want:  []exp{fail("bonding", "NetworkLink", "data-bond", netF+"@bond-mode", "updelay 50 ms is shorter than miimon 100 ms")}},
	{rule: "bonding", name: "downdelay shorter than miimon",
		edits: []edit{rep(netF, "    downdelay: 200\n", "    downdelay: 99\n")},
		want:  []exp{fail("bonding", "NetworkLink", "data-bond", netF+"@bond-mode", "downdelay 99 ms is shorter than miimon 100 ms")}},
	{rule: "bonding", name: "lacpRate without 802.3ad",
		edits: []edit{rep(netF, "    mode: 802.3ad # @bond-mode", "    mode: active-backup # @bond-mode\n    lacpRate: fast")},
		want:  []exp{fail("bonding", "NetworkLink", "data-bond", netF+"@bond-mode", "lacpRate applies only to mode 802.3ad, not active-backup")}},
	{rule: "bonding", name: "bond with one device",
		edits: []edit{rep(profF, "      devices: [data0, data1]", "      devices: [data0]")},
		want:  []exp{fail("bonding", "HostProfile", "compute", profF+"@if-bond0", `interfaces.bond0 is a 802.3ad bond (link "data-bond") with 1 device(s)`)}},
	{rule: "bonding", name: "bond device removed by a node",
		edits: []edit{rep(nodesF, "  hostProfile: compute # @n2-hp\n", "  hostProfile: compute\n  interfaces:\n    bond0:\n      devices: [\"!data1\"] # @n2-bond0\n")},
		want:  []exp{fail("bonding", "Node", "n2", nodesF+"@n2-bond0", `interfaces.bond0 is a 802.3ad bond (link "data-bond") with 1 device(s)`)}},
	{rule: "bonding", name: "ok: delays equal to miimon, active-backup without lacpRate",
		edits: []edit{
			rep(netF, "    updelay: 200\n    downdelay: 200\n", "    updelay: 100\n    downdelay: 100\n"),
			add(netF, "apiVersion: slipway/v1\nkind: NetworkLink\nmetadata:\n  name: spare-bond\nspec:\n  bonding: {mode: active-backup, miimon: 100, updelay: 10}\n"),
		}},

	// network-on-link
	{rule: "network-on-link", name: "interface network not allowed on its link",
		edits: []edit{rep(profF, "      networks: [pxe]", "      networks: [pxe, mgmt]")},
		want:  []exp{fail("network-on-link", "HostProfile", "compute", profF+"@if-pxe", `interfaces.pxe carries network "mgmt", which link "pxe-link" does not allow`)}},
	{rule: "network-on-link", name: "addressed network carried by no interface",
		edits: []edit{rep(nodesF, "  hostProfile: compute # @n2-hp\n", "  hostProfile: compute\n  interfaces:\n    bond0: {networks: [\"!storage\"]}\n")},
		want:  []exp{fail("network-on-link", "Node", "n2", nodesF+"@n2-addr2", `addressing[2]: network "storage" is addressed but no interface carries it`)}},
	{rule: "network-on-link", name: "interface removed by a node",
		edits: []edit{rep(nodesF, "  hostProfile: compute # @n3-hp\n", "  hostProfile: compute\n  interfaces:\n    pxe: null\n")},
		want:  []exp{fail("network-on-link", "Node", "n3", nodesF+"@n3-addr0", `network "pxe" is addressed but no interface carries it`)}},
	{rule: "network-on-link", name: "ok: a network added to a link and an interface",
		edits: []edit{
			add(netF, "apiVersion: slipway/v1\nkind: Network\nmetadata:\n  name: public\nspec:\n  cidr: 10.14.0.0/24\n  vlan: 40\n"),
			rep(netF, "  allowedNetworks: [mgmt, storage] # @bond-allowed", "  allowedNetworks: [mgmt, storage, public]"),
			rep(nodesF, "  hostProfile: compute # @n1-hp\n", "  hostProfile: compute\n  interfaces:\n    bond0: {networks: [public]}\n"),
			rep(nodesF, "    - {network: storage, address: 10.13.0.101} # @n1-addr2", "    - {network: storage, address: 10.13.0.101}\n    - {network: public, address: 10.14.0.101}"),
		}},

	// hostname
	{rule: "hostname", name: "underscore",
		edits: []edit{rep(nodesF, "  name: n3\n", "  name: n_3\n")},
		want:  []exp{fail("hostname", "Node", "n_3", nodesF+"@n3", "'_' is not allowed in hostnames")}},
	{rule: "hostname", name: "label of 64 characters",
		edits: []edit{rep(nodesF, "  name: n3\n", "  name: "+strings.Repeat("a", 64)+"\n")},
		want:  []exp{fail("hostname", "Node", strings.Repeat("a", 64), nodesF+"@n3", "each dot-separated label must be 1 to 63 characters")}},
	{rule: "hostname", name: "label starts with a hyphen",
		edits: []edit{rep(nodesF, "  name: n3\n", "  name: n3.-rack\n")},
		want:  []exp{fail("hostname", "Node", "n3.-rack", nodesF+"@n3", "is not a valid hostname")}},
	{rule: "hostname", name: "empty label",
		edits: []edit{rep(nodesF, "  name: n3\n", "  name: n3..rack\n")},
		want:  []exp{fail("hostname", "Node", "n3..rack", nodesF+"@n3", "is not a valid hostname")}},
	{rule: "hostname", name: "FQDN of 254 characters",
		edits: []edit{rep(nodesF, "  name: n3\n", "  name: "+hostname(238)+"\n")},
		want:  []exp{fail("hostname", "Node", hostname(238), nodesF+"@n3", "is longer than 253 characters")}},
	{rule: "hostname", name: "ok: dotted name, FQDN of 253 characters",
		edits: []edit{
			rep(nodesF, "  name: n3\n", "  name: "+hostname(237)+"\n"),
			rep(nodesF, "  name: n2\n", "  name: n2.rack-1\n"),
		}},

	{rule: "hostname", name: "ok: name of 253 characters without a Site domain",
		edits: []edit{
			rep(siteF, "  domain: lab.example.net\n", ""),
			rep(nodesF, "  name: n3\n", "  name: "+hostname(253)+"\n"),
		}},
	{rule: "hostname", name: "name of 254 characters without a Site domain",
		edits: []edit{
			rep(siteF, "  domain: lab.example.net\n", ""),
			rep(nodesF, "  name: n3\n", "  name: "+hostname(254)+"\n"),
		},
		want: []exp{fail("hostname", "Node", hostname(254), nodesF+"@n3", "longer than 253 characters")}},

	// storage
	{rule: "storage", name: "no / mountpoint",
		edits: []edit{rep(nodesF, "  hostProfile: compute # @n1-hp\n", "  hostProfile: compute\n  storage:\n    volumeGroups:\n      vg0:\n        logicalVolumes:\n          root: null\n")},
		want:  []exp{fail("storage", "Node", "n1", nodesF+"@n1", "storage has no filesystem mounted at /")}},
	{rule: "storage", name: "two / mountpoints",
		edits: []edit{rep(nodesF, "  hostProfile: compute # @n1-hp\n", "  hostProfile: compute\n  storage:\n    volumeGroups:\n      vg0:\n        logicalVolumes:\n          root2:\n            size: 10g\n            filesystem: {fstype: ext4, mountpoint: /} # @root2-fs\n")},
		want: []exp{
			fail("storage", "Node", "n1", nodesF+"@root2-fs", "storage.volumeGroups.vg0.logicalVolumes.root2: mountpoint / is already used at profiles.yaml:"),
			fail("storage", "Node", "n1", nodesF+"@n1", "storage mounts 2 filesystems at /; exactly one is allowed"),
		}},
	{rule: "storage", name: "duplicate mountpoint",
		edits: []edit{rep(profF, "          var:\n", "          log:\n            size: 10g\n            filesystem: {fstype: xfs, mountpoint: /var} # @log-fs\n          var:\n")},
		want:  []exp{fail("storage", "HostProfile", "compute", profF+"@var-fs", "storage.volumeGroups.vg0.logicalVolumes.var: mountpoint /var is already used at profiles.yaml:")}},
	{rule: "storage", name: "mountpoint not absolute",
		edits: []edit{rep(profF, "mountpoint: /var}", "mountpoint: var}")},
		want:  []exp{fail("storage", "HostProfile", "compute", profF+"@var-fs", `mountpoint "var" must be an absolute path`)}},
	{rule: "storage", name: "device with partitions and a volume group",
		edits: []edit{rep(profF, "        partitions: # @disk0\n", "        volumeGroup: vg0 # @disk0-vg\n        partitions: # @disk0\n")},
		want:  []exp{fail("storage", "HostProfile", "compute", profF+"@disk0-vg", "storage.devices.disk0 has both partitions and a volumeGroup")}},
	{rule: "storage", name: "partition with a filesystem and a volume group",
		edits: []edit{rep(profF, "            volumeGroup: vg0 # @pv-vg\n", "            volumeGroup: vg0 # @pv-vg\n            filesystem: {fstype: ext4, mountpoint: /data}\n")},
		want:  []exp{fail("storage", "HostProfile", "compute", profF+"@pv-size", "storage.devices.disk0.partitions.pv has both a filesystem and a volumeGroup")}},
	{rule: "storage", name: "size does not parse",
		edits: []edit{rep(profF, "            size: 50g # @root-size", "            size: 50x # @root-size")},
		want:  []exp{fail("storage", "HostProfile", "compute", profF+"@root-size", `storage.volumeGroups.vg0.logicalVolumes.root: size "50x" does not parse`)}},
	{rule: "storage", name: "zero size",
		edits: []edit{rep(profF, "            size: 512mi # @efi-size", "            size: 0m # @efi-size")},
		want:  []exp{fail("storage", "HostProfile", "compute", profF+"@efi-size", `size "0m" does not parse`)}},
	{rule: "storage", name: "percentage above 100",
		edits: []edit{rep(profF, "            size: 512mi # @efi-size", "            size: 120% # @efi-size")},
		want:  []exp{fail("storage", "HostProfile", "compute", profF+"@efi-size", "a percentage must be a number in (0, 100]")}},
	{rule: "storage", name: "percentages of a device add up to more than 100",
		edits: []edit{
			rep(profF, "            size: 512mi # @efi-size", "            size: 60% # @efi-size"),
			rep(profF, "          pv:\n", "          data:\n            size: 50% # @data-size\n            filesystem: {fstype: xfs, mountpoint: /data}\n          pv:\n"),
		},
		want: []exp{fail("storage", "HostProfile", "compute", profF+"@efi-size", "percentages on device disk0 add up to 110%, more than 100%")}},
	{rule: "storage", name: "percentages of a volume group add up to more than 100",
		edits: []edit{
			rep(nodesF, "  hostProfile: compute # @n2-hp\n", "  hostProfile: compute\n  storage:\n    volumeGroups:\n      vg0:\n        logicalVolumes:\n          root: {size: 40%}\n          var: {size: 61%} # @n2-var\n"),
		},
		want: []exp{fail("storage", "Node", "n2", nodesF+"@n2-var", "percentages on volume group vg0 add up to 101%")}},
	{rule: "storage", name: "two '>' sizes in a volume group",
		edits: []edit{rep(profF, "            size: 50g # @root-size", "            size: \">50g\" # @root-size")},
		want:  []exp{fail("storage", "HostProfile", "compute", profF+"@var-size", "volume group vg0 has more than one '>' size")}},
	{rule: "storage", name: "two '>' sizes on a device",
		edits: []edit{rep(profF, "            size: 512mi # @efi-size", "            size: \">512mi\" # @efi-size")},
		want:  []exp{fail("storage", "HostProfile", "compute", profF+"@pv-size", "device disk0 has more than one '>' size")}},
	{rule: "storage", name: "volume group without a physical volume",
		edits: []edit{rep(nodesF, "  hostProfile: compute # @n3-hp\n", "  hostProfile: compute\n  storage:\n    devices:\n      disk0:\n        partitions:\n          pv: {volumeGroup: null, filesystem: {fstype: ext4, mountpoint: /srv}}\n")},
		want:  []exp{fail("storage", "Node", "n3", profF+"@vg0", "storage.volumeGroups.vg0 has no physical volume")}},
	{rule: "storage", name: "ok: percentages add up to 100, one '>' per device and per volume group",
		edits: []edit{
			rep(profF, "            size: 512mi # @efi-size", "            size: 40% # @efi-size"),
			rep(profF, "          pv:\n", "          data:\n            size: 60%\n            filesystem: {fstype: xfs, mountpoint: /data}\n          pv:\n"),
			rep(profF, "            size: 50g # @root-size", "            size: 50gi # @root-size"),
			rep(profF, "          var:\n", "          swap:\n            size: 1t\n            filesystem: {fstype: swap, mountpoint: none}\n          var:\n"),
		}},

	// oob
	{rule: "oob", name: "ipmi node without a BMC address",
		edits: []edit{rep(nodesF, "  oob:\n    address: 10.10.0.102 # @n2-bmc\n", "")},
		want:  []exp{fail("oob", "Node", "n2", nodesF+"@n2", "an ipmi node needs oob.address")}},
	{rule: "oob", name: "two ipmi nodes without a BMC address",
		edits: []edit{
			rep(nodesF, "  oob:\n    address: 10.10.0.102 # @n2-bmc\n", ""),
			rep(nodesF, "  oob:\n    address: 10.10.0.103 # @n3-bmc\n", ""),
		},
		want: []exp{
			fail("oob", "Node", "n2", nodesF+"@n2", "an ipmi node needs oob.address"),
			fail("oob", "Node", "n3", nodesF+"@n3", "an ipmi node needs oob.address"),
		}},
	{rule: "oob", name: "ipmi node without credentials",
		edits: []edit{rep(nodesF, "    address: 10.10.0.101 # @n1-bmc\n", "    address: 10.10.0.101 # @n1-bmc\n    credentials: null\n")},
		want:  []exp{fail("oob", "Node", "n1", nodesF+"@n1-bmc", "an ipmi node needs oob.credentials")}},
	{rule: "oob", name: "BMC address used twice",
		edits: []edit{rep(nodesF, "    address: 10.10.0.102 # @n2-bmc", "    address: 10.10.0.101 # @n2-bmc")},
		want: []exp{
			fail("oob", "Node", "n2", nodesF+"@n2-bmc", "BMC address 10.10.0.101 is already the BMC of Node/n1"),
			fail("ip-duplicate", "Node", "n2", nodesF+"@n2-bmc", "BMC address 10.10.0.101 is already used by Node/n1"),
		}},
	{rule: "oob", name: "BMC address not an IP",
		edits: []edit{rep(nodesF, "    address: 10.10.0.102 # @n2-bmc", "    address: bmc-n2 # @n2-bmc")},
		want:  []exp{fail("oob", "Node", "n2", nodesF+"@n2-bmc", `oob.address "bmc-n2" is not an IP address`)}},
	{rule: "oob", name: "node port out of range",
		edits: []edit{rep(nodesF, "    address: 10.10.0.102 # @n2-bmc\n", "    address: 10.10.0.102 # @n2-bmc\n    port: 70000 # @n2-port\n")},
		want:  []exp{fail("oob", "Node", "n2", nodesF+"@n2-port", "oob.port 70000 is not")}},
	{rule: "oob", name: "hardware port 0",
		edits: []edit{rep(hwF, "    port: 623 # @hw-port", "    port: 0 # @hw-port")},
		want:  []exp{fail("oob", "HardwareProfile", "hw1", hwF+"@hw-port", "oob.port 0 is not a TCP/UDP port")}},
	{rule: "oob", name: "hardware cipher suite 0",
		edits: []edit{rep(hwF, "    cipherSuite: 3 # @hw-cipher", "    cipherSuite: 0 # @hw-cipher")},
		want:  []exp{fail("oob", "HardwareProfile", "hw1", hwF+"@hw-cipher", "oob.cipherSuite 0 is not usable")}},
	{rule: "schema", name: "bios attribute that is not a name",
		edits: []edit{redfishHW, rep(hwF, "  pxe:\n", "  bios:\n    attributes: # @hw-bios\n      \"Proc Virtualization\": Enabled\n  pxe:\n")},
		want:  []exp{fail("schema", "HardwareProfile", "hw1", hwF+"@hw-bios", `bios.attributes: "Proc Virtualization" is not an attribute name`)}},
	{rule: "schema", name: "bios without attributes",
		edits: []edit{redfishHW, rep(hwF, "  pxe:\n", "  bios:\n    attributes: {} # @hw-bios\n  pxe:\n")},
		want:  []exp{fail("schema", "HardwareProfile", "hw1", hwF+"@hw-bios", "bios has no attributes")}},
	{rule: "schema", name: "ok: bios attributes of every scalar kind",
		edits: []edit{redfishHW, rep(hwF, "  pxe:\n", "  bios:\n    attributes: {ProcVirtualization: Enabled, NumaNodesPerSocket: 2, SriovGlobalEnable: true}\n  pxe:\n")}},
	{rule: "oob", name: "fallback of the profile's own type",
		edits: []edit{rep(hwF, "    cipherSuite: 3 # @hw-cipher\n", "    cipherSuite: 3 # @hw-cipher\n    fallback:\n      type: ipmi # @hw-fb\n")},
		want:  []exp{fail("oob", "HardwareProfile", "hw1", hwF+"@hw-fb", "oob.fallback.type ipmi is the profile's own oob.type")}},
	{rule: "oob", name: "fallback without a type",
		edits: []edit{rep(hwF, "    cipherSuite: 3 # @hw-cipher\n", "    cipherSuite: 3 # @hw-cipher\n    fallback:\n      port: 623 # @hw-fb\n")},
		want:  []exp{fail("oob", "HardwareProfile", "hw1", hwF+"@hw-fb", "oob.fallback needs a type")}},
	{rule: "oob", name: "fallback of a type with no known port",
		edits: []edit{rep(hwF, "    cipherSuite: 3 # @hw-cipher\n", "    cipherSuite: 3 # @hw-cipher\n    fallback:\n      type: acme-oob # @hw-fb\n")},
		want:  []exp{fail("oob", "HardwareProfile", "hw1", hwF+"@hw-fb", "oob.fallback of type acme-oob needs a port")}},
	{rule: "oob", name: "ok: redfish first, ipmi as its fallback",
		edits: []edit{rep(hwF, "    port: 623 # @hw-port\n    cipherSuite: 3 # @hw-cipher\n", "    type: redfish\n    port: 443\n    fallback: {type: ipmi, cipherSuite: 17}\n")}},
	{rule: "oob", name: "redfish node without a BMC address",
		edits: []edit{
			add(hwF, "apiVersion: slipway/v1\nkind: HardwareProfile\nmetadata:\n  name: hw-redfish\nspec:\n  oob: {type: redfish}\n  deviceAliases:\n    pxe0: {bus: pci, address: \"0000:04:00.0\"}\n    data0: {bus: pci, address: \"0000:3b:00.0\"}\n    data1: {bus: pci, address: \"0000:3b:00.1\"}\n    disk0: {bus: scsi, address: \"2:0.0.0\"}\n"),
			rep(nodesF, "  oob:\n    address: 10.10.0.102 # @n2-bmc\n", "  hardwareProfile: hw-redfish\n"),
		},
		want: []exp{fail("oob", "Node", "n2", nodesF+"@n2", "a redfish node needs oob.address")}},
	{rule: "oob", name: "fingerprint that is not a SHA-256",
		edits: []edit{rep(nodesF, "    address: 10.10.0.102 # @n2-bmc\n", "    address: 10.10.0.102 # @n2-bmc\n    fingerprint: ab:cd\n")},
		want:  []exp{fail("oob", "Node", "n2", nodesF+"@n2-bmc", "oob.fingerprint is not a SHA-256 fingerprint")}},
	{rule: "oob", name: "ok: a redfish node with a pinned fingerprint",
		edits: []edit{rep(nodesF, "    address: 10.10.0.102 # @n2-bmc\n", "    address: 10.10.0.102 # @n2-bmc\n    fingerprint: \"ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab:ab\"\n    systemId: System.Embedded.1\n")}},
	{rule: "oob", name: "ok: a node of another OOB type needs no BMC address; a node port",
		edits: []edit{
			add(hwF, "apiVersion: slipway/v1\nkind: HardwareProfile\nmetadata:\n  name: hw-redfish\nspec:\n  oob: {type: acme-oob}\n  deviceAliases:\n    pxe0: {bus: pci, address: \"0000:04:00.0\"}\n    data0: {bus: pci, address: \"0000:3b:00.0\"}\n    data1: {bus: pci, address: \"0000:3b:00.1\"}\n    disk0: {bus: scsi, address: \"2:0.0.0\"}\n"),
			rep(nodesF, "  oob:\n    address: 10.10.0.102 # @n2-bmc\n", "  hardwareProfile: hw-redfish\n"),
			rep(nodesF, "    address: 10.10.0.103 # @n3-bmc\n", "    address: 10.10.0.103\n    port: 1623\n"),
		}},

	// secret-ref
	{rule: "secret-ref", name: "clear-text BMC password in a profile",
		edits:  []edit{rep(profF, "      password: secret:bmc-admin # @base-password", "      password: hunter2 # @base-password")},
		want:   []exp{fail("secret-ref", "HostProfile", "base", profF+"@base-password", "oob.credentials.password: not a secret reference")},
		secret: "hunter2"},
	{rule: "secret-ref", name: "clear-text BMC password in a node",
		edits:  []edit{rep(nodesF, "    address: 10.10.0.102 # @n2-bmc\n", "    address: 10.10.0.102\n    credentials: {username: root, password: \"calvin:1\"} # @n2-cred\n")},
		want:   []exp{fail("secret-ref", "Node", "n2", nodesF+"@n2-cred", "oob.credentials.password: not a secret reference (unknown scheme)")},
		secret: "calvin"},
	{rule: "secret-ref", name: "clear-text MAAS API key",
		edits:  []edit{rep(siteF, "    apiKey: secret:maas-api-key # @maas-apikey", "    apiKey: AbC:dEf:GhI # @maas-apikey")},
		want:   []exp{fail("secret-ref", "Site", "lab", siteF+"@maas-apikey", "maas.apiKey: not a secret reference")},
		secret: "AbC"},
	{rule: "secret-ref", name: "env reference with a bad name",
		edits: []edit{rep(profF, "      password: secret:bmc-admin # @base-password", "      password: env:1X # @base-password")},
		want:  []exp{fail("secret-ref", "HostProfile", "base", profF+"@base-password", "env:VAR needs an environment variable name")}},
	{rule: "secret-ref", name: "file reference with a relative path",
		edits: []edit{rep(profF, "      password: secret:bmc-admin # @base-password", "      password: file:etc/bmc # @base-password")},
		want:  []exp{fail("secret-ref", "HostProfile", "base", profF+"@base-password", "file:/path needs an absolute path")}},
	{rule: "secret-ref", name: "empty secret name",
		edits: []edit{rep(profF, "      password: secret:bmc-admin # @base-password", "      password: \"secret:\" # @base-password")},
		want:  []exp{fail("secret-ref", "HostProfile", "base", profF+"@base-password", "secret:NAME needs a NAME")}},
	{rule: "secret-ref", name: "clear-text password in ownerData",
		edits:  []edit{rep(profF, "    team: infra # @base-ownerdata\n", "    team: infra # @base-ownerdata\n    db-password: s3cr3tpw # @db-password\n")},
		want:   []exp{fail("secret-ref", "HostProfile", "base", profF+"@db-password", "ownerData.db-password looks like a credential but is not a secret reference")},
		secret: "s3cr3tpw"},
	{rule: "secret-ref", name: "ok: the profile gives the BMC username, each node its password",
		edits: []edit{
			rep(profF, "      password: secret:bmc-admin # @base-password\n", ""),
			rep(nodesF, "    address: 10.10.0.101 # @n1-bmc\n", "    address: 10.10.0.101 # @n1-bmc\n    credentials: {password: secret:bmc-n1}\n"),
			rep(nodesF, "    address: 10.10.0.102 # @n2-bmc\n", "    address: 10.10.0.102 # @n2-bmc\n    credentials: {password: secret:bmc-n2}\n"),
			rep(nodesF, "    address: 10.10.0.103 # @n3-bmc\n", "    address: 10.10.0.103 # @n3-bmc\n    credentials: {password: secret:bmc-n3}\n"),
		}},
	{rule: "secret-ref", name: "ok: env and file references, secret reference in ownerData",
		edits: []edit{
			rep(profF, "      password: secret:bmc-admin # @base-password", "      password: env:BMC_PASS"),
			rep(siteF, "    apiKey: secret:maas-api-key # @maas-apikey", "    apiKey: file:/etc/slipway/maas.key"),
			rep(profF, "    team: infra # @base-ownerdata\n", "    team: infra\n    api-token: secret:api-token\n"),
		}},

	// boot-action
	{rule: "boot-action", name: "asset without data or template",
		edits: []edit{rep(baF, "      data: hello\n", "")},
		want:  []exp{fail("boot-action", "BootAction", "bootstrap", baF+"@asset0", "assets[0] has neither data nor template")}},
	{rule: "boot-action", name: "asset with data and template",
		edits: []edit{rep(baF, "      data: hello\n", "      data: hello\n      template: hello {{ .Node.Hostname }}\n")},
		want:  []exp{fail("boot-action", "BootAction", "bootstrap", baF+"@asset0", "assets[0] has both data and template")}},
	{rule: "boot-action", name: "template does not parse",
		edits: []edit{rep(baF, "Description=report {{ .Node.Hostname }}", "Description=report {{ .Node.Hostname ")},
		want:  []exp{fail("boot-action", "BootAction", "bootstrap", baF+"@asset1-template", "assets[1]: template does not parse")}},
	{rule: "boot-action", name: "template with an unknown function",
		edits: []edit{rep(baF, "{{ .Node.Hostname }}", "{{ upper .Node.Hostname }}")},
		want:  []exp{fail("boot-action", "BootAction", "bootstrap", baF+"@asset1-template", `function "upper" not defined`)}},
	{rule: "boot-action", name: "relative path",
		edits: []edit{rep(baF, "    - path: /etc/motd # @asset0", "    - path: etc/motd # @asset0")},
		want:  []exp{fail("boot-action", "BootAction", "bootstrap", baF+"@asset0", `path "etc/motd" must be absolute`)}},
	{rule: "boot-action", name: "path not clean",
		edits: []edit{rep(baF, "    - path: /etc/motd # @asset0", "    - path: /etc/../motd # @asset0")},
		want:  []exp{fail("boot-action", "BootAction", "bootstrap", baF+"@asset0", `path "/etc/../motd" must be absolute and clean`)}},
	{rule: "boot-action", name: "permissions not octal",
		edits: []edit{rep(baF, `permissions: "0644"`, `permissions: "0964"`)},
		want:  []exp{fail("boot-action", "BootAction", "bootstrap", baF+"@asset0", `permissions "0964" must be octal`)}},
	{rule: "boot-action", name: "symbolic permissions",
		edits: []edit{rep(baF, `permissions: "0644"`, `permissions: rw-r--r--`)},
		want:  []exp{fail("boot-action", "BootAction", "bootstrap", baF+"@asset0", `permissions "rw-r--r--" must be octal`)}},
	{rule: "boot-action", name: "ok: template only, three-digit permissions",
		edits: []edit{
			rep(baF, "      data: hello\n", "      template: \"{{ .Node.Hostname }} {{ .Action.ReportURL }}\"\n"),
			rep(baF, `permissions: "0644"`, `permissions: "600"`),
		}},

	// mac
	{rule: "mac", name: "bootMac not a MAC",
		edits: []edit{rep(nodesF, `  bootMac: "52:54:00:00:00:01" # @n1-mac`, `  bootMac: "52:54:00:00:01" # @n1-mac`)},
		want:  []exp{fail("mac", "Node", "n1", nodesF+"@n1-mac", `bootMac "52:54:00:00:01" is not a MAC address`)}},
	{rule: "mac", name: "bootMac with a bad digit",
		edits: []edit{rep(nodesF, `  bootMac: "52:54:00:00:00:01" # @n1-mac`, `  bootMac: "52:54:00:00:0g:01" # @n1-mac`)},
		want:  []exp{fail("mac", "Node", "n1", nodesF+"@n1-mac", "is not a MAC address")}},
	{rule: "mac", name: "bootMac used twice, written differently",
		edits: []edit{rep(nodesF, "  hostProfile: compute # @n2-hp\n", "  hostProfile: compute\n  bootMac: 52-54-00-00-00-01 # @n2-mac\n")},
		want:  []exp{fail("mac", "Node", "n2", nodesF+"@n2-mac", "bootMac 52:54:00:00:00:01 is already used by Node/n1")}},
	{rule: "mac", name: "bootMac with mixed separators",
		edits: []edit{rep(nodesF, `  bootMac: "52:54:00:00:00:01" # @n1-mac`, `  bootMac: "52:54-00:00-00:01" # @n1-mac`)},
		want:  []exp{fail("mac", "Node", "n1", nodesF+"@n1-mac", "is not a MAC address")}},
	{rule: "mac", name: "ok: distinct MACs in both notations",
		edits: []edit{rep(nodesF, "  hostProfile: compute # @n2-hp\n", "  hostProfile: compute\n  bootMac: 52-54-00-00-00-0A\n")}},

	// no-boot-action
	{rule: "no-boot-action", name: "filter by name leaves nodes out",
		edits: []edit{rep(baF, "spec:\n  assets:\n", "spec:\n  nodeFilter: {names: [n1]}\n  assets:\n")},
		want: []exp{
			warn("no-boot-action", "Node", "n2", nodesF+"@n2", "no BootAction targets this node"),
			warn("no-boot-action", "Node", "n3", nodesF+"@n3", "no BootAction targets this node"),
		}},
	{rule: "no-boot-action", name: "no BootAction at all",
		edits: []edit{drop(baF)},
		want: []exp{
			warn("no-boot-action", "Node", "n1", nodesF+"@n1", "no BootAction targets this node"),
			warn("no-boot-action", "Node", "n2", nodesF+"@n2", "no BootAction targets this node"),
			warn("no-boot-action", "Node", "n3", nodesF+"@n3", "no BootAction targets this node"),
		}},
	{rule: "no-boot-action", name: "filter criteria must all match",
		edits: []edit{rep(baF, "spec:\n  assets:\n", "spec:\n  nodeFilter: {tags: [managed], racks: [r1]}\n  assets:\n"),
			rep(nodesF, "  hostProfile: compute # @n1-hp\n", "  hostProfile: compute\n  rack: r1\n")},
		want: []exp{
			warn("no-boot-action", "Node", "n2", nodesF+"@n2", "no BootAction targets this node"),
			warn("no-boot-action", "Node", "n3", nodesF+"@n3", "no BootAction targets this node"),
		}},
	{rule: "no-boot-action", name: "ok: filter by an inherited tag",
		edits: []edit{rep(baF, "spec:\n  assets:\n", "spec:\n  nodeFilter: {tags: [managed]}\n  assets:\n")}},
	{rule: "no-boot-action", name: "ok: two filters together cover every node",
		edits: []edit{
			rep(baF, "spec:\n  assets:\n", "spec:\n  nodeFilter: {names: [n1, n2]}\n  assets:\n"),
			add(baF, "apiVersion: slipway/v1\nkind: BootAction\nmetadata:\n  name: rest\nspec:\n  nodeFilter: {names: [n3]}\n  assets:\n    - {path: /etc/rest, type: file, data: x}\n"),
		}},
}

func TestRules(t *testing.T) {
	failing, passing := map[string]int{}, map[string]int{}
	for _, tc := range ruleCases {
		if len(tc.want) == 0 {
			passing[tc.rule]++
		}
		for _, w := range tc.want {
			if w.rule == tc.rule {
				failing[tc.rule]++
				break
			}
		}
		t.Run(tc.rule+"/"+tc.name, func(t *testing.T) {
			f := baseDesign.clone()
			for _, e := range tc.edits {
				e(t, f)
			}
			_, got := buildRoots(t, f)
			checkFindings(t, f, got, tc.want)
			if tc.secret != "" {
				for _, g := range got {
					if strings.Contains(g.Message, tc.secret) {
						t.Errorf("finding repeats the secret %q: %s", tc.secret, g)
					}
				}
			}
		})
	}
	// Every rule the design package declares (declaredRules), so a new
	// rule without cases fails here.
	for _, id := range declaredRules(t) {
		if failing[id] == 0 || passing[id] == 0 {
			t.Errorf("rule %s has %d failing and %d passing cases; want at least one of each", id, failing[id], passing[id])
		}
	}
}

// An inherited problem is one finding at the profile's line, not one per
// node that inherits it.
func TestRulesInheritedProblemReportedOnce(t *testing.T) {
	f := baseDesign.clone()
	rep(profF, "            size: 50g # @root-size", "            size: 50q # @root-size")(t, f)
	d, got := buildRoots(t, f)
	if len(d.Nodes) != 3 {
		t.Fatalf("design has %d nodes, want 3", len(d.Nodes))
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		if d.Nodes[n].Spec.Storage.VolumeGroups["vg0"].LogicalVolumes["root"].Size != "50q" {
			t.Fatalf("node %s does not inherit the bad size", n)
		}
	}
	var storage design.Findings
	for _, g := range got {
		if g.Rule == design.RuleStorage {
			storage = append(storage, g)
		}
	}
	if len(storage) != 1 {
		t.Fatalf("got %d storage findings, want 1:\n%v", len(storage), storage)
	}
	checkFindings(t, f, got, []exp{
		fail("storage", "HostProfile", "compute", profF+"@root-size", `size "50q" does not parse`),
	})
}

// lifecycleSite is the base Site with a lifecycle section appended.
func lifecycleSite(lines string) edit {
	return rep(siteF, "      kernel: ga-22.04\n", "      kernel: ga-22.04\n  lifecycle:\n"+lines)
}

// The lifecycle rule's cases: the Site's retry budgets and stage timeouts.
var lifecycleCases = []ruleCase{
	{rule: "lifecycle", name: "commissionRetries above the bound",
		edits: []edit{lifecycleSite("    commissionRetries: 11 # @comm-retries\n")},
		want:  []exp{fail("lifecycle", "Site", "lab", siteF+"@comm-retries", "lifecycle.commissionRetries 11 is outside 0..10")}},
	{rule: "lifecycle", name: "negative deployRetries",
		edits: []edit{lifecycleSite("    deployRetries: -1 # @deploy-retries\n")},
		want:  []exp{fail("lifecycle", "Site", "lab", siteF+"@deploy-retries", "lifecycle.deployRetries -1 is outside 0..10")}},
	{rule: "lifecycle", name: "timeout of an unknown stage",
		edits: []edit{lifecycleSite("    timeouts:\n      comission: 40m # @typo\n")},
		want:  []exp{fail("lifecycle", "Site", "lab", siteF+"@typo", "lifecycle.timeouts.comission: no such stage")}},
	{rule: "lifecycle", name: "timeout that is not a duration",
		edits: []edit{lifecycleSite("    timeouts:\n      deploy: forty # @bad-dur\n")},
		want:  []exp{fail("lifecycle", "Site", "lab", siteF+"@bad-dur", `"forty" is not a duration`)}},
	{rule: "lifecycle", name: "timeout below a minute",
		edits: []edit{lifecycleSite("    timeouts:\n      deploy: 30s # @short\n")},
		want:  []exp{fail("lifecycle", "Site", "lab", siteF+"@short", "30s is outside 1m0s..24h0m0s")}},
	{rule: "lifecycle", name: "ok: every setting within bounds",
		edits: []edit{lifecycleSite("    erase: quick\n    destructive: apply\n    commissionRetries: 0\n    deployRetries: 3\n    timeouts: {commission: 40m, deploy: 1h30m, releasing: 2h}\n")}},
	{rule: "schema", name: "destructive policy not one of hold, apply",
		edits: []edit{lifecycleSite("    destructive: ask # @destructive\n")},
		want:  []exp{fail("schema", "Site", "lab", siteF+"@destructive", `"ask" is not one of hold, apply`)}},
	{rule: "schema", name: "erase policy not one of none, quick, secure",
		edits: []edit{rep(profF, "  tags: [managed]\n", "  tags: [managed]\n  erase: wipe # @erase\n")},
		want:  []exp{fail("schema", "HostProfile", "base", profF+"@erase", `"wipe" is not one of none, quick, secure`)}},
	{rule: "schema", name: "ok: erase policy on a profile and a node",
		edits: []edit{
			rep(profF, "  tags: [managed]\n", "  tags: [managed]\n  erase: secure\n"),
			rep(nodesF, "  hostProfile: compute # @n2-hp\n", "  hostProfile: compute # @n2-hp\n  erase: none\n"),
		}},
}

func init() { ruleCases = append(ruleCases, lifecycleCases...) }

// The erase policy inherits like the other host fields: the Site's is
// the default, a profile's overrides it for the nodes below, a node's for
// itself; the Site's budgets and timeouts are read back as set.
func TestLifecycleInheritance(t *testing.T) {
	f := baseDesign.clone()
	lifecycleSite("    erase: quick\n    deployRetries: 3\n    timeouts: {deploy: 90m}\n")(t, f)
	add(profF, "apiVersion: slipway/v1\nkind: HostProfile\nmetadata:\n  name: secure\nspec:\n  parent: compute\n  erase: secure\n")(t, f)
	rep(nodesF, "  hostProfile: compute # @n2-hp\n", "  hostProfile: secure # @n2-hp\n")(t, f)
	rep(nodesF, "  hostProfile: compute # @n3-hp\n", "  hostProfile: secure # @n3-hp\n  erase: none\n")(t, f)
	d, fs := buildRoots(t, f)
	checkFindings(t, f, fs, nil)
	for node, want := range map[string]string{"n1": "quick", "n2": "secure", "n3": "none"} {
		if got := d.EraseOf(d.Nodes[node]); got != want {
			t.Errorf("EraseOf(%s) = %q, want %q", node, got, want)
		}
	}
	if n, ok := d.DeployRetries(); !ok || n != 3 {
		t.Errorf("DeployRetries() = %d, %v; want 3, true", n, ok)
	}
	if _, ok := d.CommissionRetries(); ok {
		t.Errorf("CommissionRetries() set, want unset")
	}
	if got, ok := d.StageTimeout("deploy"); !ok || got.Minutes() != 90 {
		t.Errorf("StageTimeout(deploy) = %s, %v; want 1h30m, true", got, ok)
	}
	if _, ok := d.StageTimeout("commission"); ok {
		t.Errorf("StageTimeout(commission) set, want unset")
	}
	plain, _ := buildRoots(t, baseDesign)
	if got := plain.EraseOf(plain.Nodes["n1"]); got != "" {
		t.Errorf("EraseOf without a policy = %q, want \"\" (the driver's default)", got)
	}
}
