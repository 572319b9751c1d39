package design_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/slipway-dev/slipway/design"
)

// buildClean builds roots derived from the rule tests' base design and
// fails the test on any finding.
func buildClean(t *testing.T, roots ...files) *design.Design {
	t.Helper()
	d, fs := buildRoots(t, roots...)
	if len(fs) != 0 {
		t.Fatalf("unexpected findings:\n%v", strings.Join(findingLines(fs), "\n"))
	}
	return d
}

func findingLines(fs design.Findings) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.String()
	}
	return out
}

// edited returns the base design with edits applied.
func edited(t *testing.T, edits ...edit) files {
	t.Helper()
	f := baseDesign.clone()
	for _, e := range edits {
		e(t, f)
	}
	return f
}

// render returns the resolved spec of a node.
func render(t *testing.T, d *design.Design, name string) design.NodeSpec {
	t.Helper()
	rn, err := d.RenderNode(name)
	if err != nil {
		t.Fatal(err)
	}
	if rn.Kind != design.KindNode || rn.APIVersion != design.APIVersion || rn.Metadata.Name != name {
		t.Errorf("rendered header = %s %s %s, want %s %s %s", rn.APIVersion, rn.Kind, rn.Metadata.Name, design.APIVersion, design.KindNode, name)
	}
	return rn.Spec
}

// nodeSpec inserts YAML (indented for spec) right after a node's hostProfile line.
func nodeSpec(node, yaml string) edit {
	return rep(nodesF, "  hostProfile: compute # @"+node+"-hp\n", "  hostProfile: compute # @"+node+"-hp\n"+yaml)
}

func TestInheritAbsentKeys(t *testing.T) {
	d := buildClean(t, baseDesign)
	s := render(t, d, "n1")
	if s.HostProfile != "compute" || s.HardwareProfile != "hw1" || s.PrimaryNetwork != "mgmt" {
		t.Errorf("hostProfile, hardwareProfile, primaryNetwork = %q %q %q, want compute hw1 mgmt", s.HostProfile, s.HardwareProfile, s.PrimaryNetwork)
	}
	want := design.Platform{Image: "jammy", Kernel: "ga-22.04", KernelParams: map[string]string{"console": "ttyS1"}}
	if diff := cmp.Diff(want, s.Platform, cmpopts.IgnoreFields(design.Platform{}, "ImagePos")); diff != "" {
		t.Errorf("platform from the Site defaults and base (-want +got):\n%s", diff)
	}
	if c := s.OOB.Credentials; c == nil || c.Username != "admin" || c.Password != "secret:bmc-admin" {
		t.Errorf("credentials = %+v, want base's", c)
	}
	if s.OOB.Address != "10.10.0.101" {
		t.Errorf("oob.address = %q", s.OOB.Address)
	}
	if diff := cmp.Diff(map[string]string{"team": "infra"}, s.OwnerData); diff != "" {
		t.Errorf("ownerData (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"managed"}, s.Tags); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	if got := sortedKeys(s.Interfaces); !cmp.Equal(got, []string{"bond0", "pxe"}) {
		t.Errorf("interfaces = %v, want bond0, pxe", got)
	}
	if s.Hardware == nil || s.Hardware.OOB.Port != 623 || s.Hardware.BootMode != "uefi" {
		t.Errorf("hardware = %+v, want hw1 with defaults", s.Hardware)
	}
	if diff := cmp.Diff([]string{"base", "compute"}, d.Nodes["n1"].Chain); diff != "" {
		t.Errorf("chain (-want +got):\n%s", diff)
	}
	if _, err := d.RenderNode("n9"); err == nil {
		t.Errorf("RenderNode of a node not in the design: no error")
	}
}

func sortedKeys[T any](m map[string]T) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestInheritExplicitZeroValuesWin(t *testing.T) {
	f := edited(t,
		rep(profF, "            size: 512mi # @efi-size\n", "            size: 512mi # @efi-size\n            bootable: true\n"),
		nodeSpec("n1", "  platform:\n    kernel: \"\"\n  ownerData:\n    team: \"\"\n  storage:\n    devices:\n      disk0:\n        partitions:\n          efi: {bootable: false}\n"),
	)
	d := buildClean(t, f)
	n1, n2 := render(t, d, "n1"), render(t, d, "n2")
	if !n2.Storage.Devices["disk0"].Partitions["efi"].Bootable {
		t.Fatalf("n2's efi partition is not bootable: the profile's true is lost")
	}
	if n1.Storage.Devices["disk0"].Partitions["efi"].Bootable {
		t.Errorf("n1 efi bootable = true, want the node's explicit false")
	}
	if got := n1.Storage.Devices["disk0"].Partitions["efi"].Size; got != "512mi" {
		t.Errorf("n1 efi size = %q, want the inherited 512mi", got)
	}
	if n1.Platform.Kernel != "" || n1.Platform.Image != "jammy" {
		t.Errorf("n1 platform = %+v, want kernel \"\" (explicit) and image jammy", n1.Platform)
	}
	if v, ok := n1.OwnerData["team"]; !ok || v != "" {
		t.Errorf("n1 ownerData = %v, want team: \"\"", n1.OwnerData)
	}

	// An explicit 0 in a later layer wins over the earlier layer's number.
	layer := files{"site/links.yaml": "apiVersion: slipway/v1\nkind: NetworkLink\nmetadata:\n  name: data-bond\nspec:\n  bonding:\n    miimon: 0\n    updelay: 0\n    downdelay: 0\n"}
	d = buildClean(t, baseDesign, layer)
	b := d.NetworkLinks["data-bond"].Spec.Bonding
	if b.Mode != "802.3ad" || b.MIIMon != 0 || b.UpDelay != 0 || b.DownDelay != 0 {
		t.Errorf("bonding = %+v, want mode 802.3ad and explicit zeros", b)
	}

	// An explicit 0 or false wins over a default.
	d, fs := buildRoots(t, edited(t, rep(hwF, "    cipherSuite: 3 # @hw-cipher", "    cipherSuite: 0 # @hw-cipher")))
	if cs := d.HardwareProfiles["hw1"].Spec.OOB.CipherSuite; cs != 0 {
		t.Errorf("cipherSuite = %d, want the explicit 0 over the default 3", cs)
	}
	if len(fs) != 1 || fs[0].Rule != design.RuleOOB {
		t.Errorf("findings = %v, want the one oob finding for cipher suite 0", fs)
	}
	d = buildClean(t, edited(t, rep(baF, "spec:\n  assets:\n", "spec:\n  signaling: false\n  assets:\n")))
	if d.BootActions["bootstrap"].Spec.Signaling {
		t.Errorf("signaling = true, want the explicit false over the default true")
	}
	d = buildClean(t, baseDesign)
	if !d.BootActions["bootstrap"].Spec.Signaling {
		t.Errorf("signaling = false, want the default true")
	}
}

func TestInheritNullRemoves(t *testing.T) {
	f := edited(t,
		rep(profF, "    team: infra # @base-ownerdata\n", "    team: infra # @base-ownerdata\n    env: lab\n"),
		// n3 drops the pxe interface (and so addresses pxe no more), an
		// ownerData key and all kernel parameters.
		nodeSpec("n3", "  interfaces:\n    pxe: null\n  ownerData:\n    team: null\n  platform:\n    kernelParams: null\n"),
		rep(nodesF, "    - {network: pxe, address: dhcp} # @n3-addr0\n", ""),
		// n2 drops a whole partition and its volume group reference stays.
		nodeSpec("n2", "  storage:\n    devices:\n      disk0:\n        partitions:\n          efi: ~\n"),
	)
	d := buildClean(t, f)
	n3 := render(t, d, "n3")
	if got := sortedKeys(n3.Interfaces); !cmp.Equal(got, []string{"bond0"}) {
		t.Errorf("n3 interfaces = %v, want [bond0]", got)
	}
	if diff := cmp.Diff(map[string]string{"env": "lab"}, n3.OwnerData); diff != "" {
		t.Errorf("n3 ownerData (-want +got):\n%s", diff)
	}
	if n3.Platform.KernelParams != nil {
		t.Errorf("n3 kernelParams = %v, want none", n3.Platform.KernelParams)
	}
	if n3.Platform.Image != "jammy" {
		t.Errorf("n3 image = %q: removing kernelParams removed more", n3.Platform.Image)
	}
	n2 := render(t, d, "n2")
	if got := sortedKeys(n2.Storage.Devices["disk0"].Partitions); !cmp.Equal(got, []string{"pv"}) {
		t.Errorf("n2 partitions = %v, want [pv]", got)
	}
	// The others still inherit everything.
	n1 := render(t, d, "n1")
	if got := sortedKeys(n1.Interfaces); !cmp.Equal(got, []string{"bond0", "pxe"}) {
		t.Errorf("n1 interfaces = %v", got)
	}
	if diff := cmp.Diff(map[string]string{"team": "infra", "env": "lab"}, n1.OwnerData); diff != "" {
		t.Errorf("n1 ownerData (-want +got):\n%s", diff)
	}
	if got := sortedKeys(n1.Storage.Devices["disk0"].Partitions); !cmp.Equal(got, []string{"efi", "pv"}) {
		t.Errorf("n1 partitions = %v", got)
	}
}

func TestInheritMappingsMergeAtEveryDepth(t *testing.T) {
	f := edited(t, nodeSpec("n2", `  platform:
    kernelParams:
      console: ttyS0
      quiet: true
  interfaces:
    bond0:
      networks: [mgmt]
  storage:
    devices:
      disk0:
        partitions:
          efi:
            size: 1g
          data:
            size: 10g
            filesystem: {fstype: xfs, mountpoint: /data}
    volumeGroups:
      vg0:
        logicalVolumes:
          root:
            size: 100g
`), rep(nodesF, "    - {network: storage, address: 10.13.0.102} # @n2-addr2\n", ""))
	d := buildClean(t, f)
	s := render(t, d, "n2")
	if diff := cmp.Diff(map[string]string{"console": "ttyS0", "quiet": "true"}, s.Platform.KernelParams); diff != "" {
		t.Errorf("kernelParams (-want +got):\n%s", diff)
	}
	// Interfaces merge key by key: link and devices inherited, networks is a
	// scalar list and unions.
	if diff := cmp.Diff(design.Interface{Link: "data-bond", Devices: []string{"data0", "data1"}, Networks: []string{"mgmt", "storage"}},
		s.Interfaces["bond0"], cmpIgnorePos()); diff != "" {
		t.Errorf("bond0 (-want +got):\n%s", diff)
	}
	parts := s.Storage.Devices["disk0"].Partitions
	if got := sortedKeys(parts); !cmp.Equal(got, []string{"data", "efi", "pv"}) {
		t.Fatalf("partitions = %v, want data, efi, pv", got)
	}
	efi := parts["efi"]
	if efi.Size != "1g" || efi.Filesystem == nil || efi.Filesystem.Mountpoint != "/boot/efi" || efi.Filesystem.FSType != "vfat" {
		t.Errorf("efi = %+v (fs %+v), want size 1g and the inherited vfat /boot/efi", efi, efi.Filesystem)
	}
	if pv := parts["pv"]; pv.Size != ">100g" || pv.VolumeGroup != "vg0" {
		t.Errorf("pv = %+v, want inherited", pv)
	}
	lvs := s.Storage.VolumeGroups["vg0"].LogicalVolumes
	if r := lvs["root"]; r.Size != "100g" || r.Filesystem == nil || r.Filesystem.Mountpoint != "/" {
		t.Errorf("root = %+v, want size 100g with the inherited filesystem", r)
	}
	if v := lvs["var"]; v.Size != ">10g" {
		t.Errorf("var = %+v, want inherited", v)
	}
	// The profile itself is untouched.
	if got := d.HostProfiles["compute"].Spec.Storage.VolumeGroups["vg0"].LogicalVolumes["root"].Size; got != "50g" {
		t.Errorf("compute's root size = %q, want 50g", got)
	}
	if got := render(t, d, "n1").Platform.KernelParams; !cmp.Equal(got, map[string]string{"console": "ttyS1"}) {
		t.Errorf("n1 kernelParams = %v", got)
	}
}

func cmpIgnorePos() cmp.Option {
	posType := reflect.TypeOf(design.Pos{})
	return cmp.FilterPath(func(p cmp.Path) bool {
		return p.Last().Type() == posType
	}, cmp.Ignore())
}

func TestInheritScalarLists(t *testing.T) {
	for _, tc := range []struct {
		name    string
		compute string // tags line(s) added to compute
		node    string // spec lines added to n1
		want    []string
	}{
		{"absent", "", "", []string{"managed"}},
		{"union in order", "  tags: [compute]\n", "  tags: [extra]\n", []string{"managed", "compute", "extra"}},
		{"no duplicates", "  tags: [compute, managed]\n", "  tags: [managed, compute, extra, extra]\n", []string{"managed", "compute", "extra"}},
		{"quoted removal", "  tags: [compute]\n", "  tags: [\"!managed\", x]\n", []string{"compute", "x"}},
		{"unquoted removal", "  tags: [compute]\n", "  tags:\n    - !managed\n    - x\n", []string{"compute", "x"}},
		{"removal in the middle profile", "  tags: [\"!managed\", compute]\n", "", []string{"compute"}},
		{"removal of an absent item", "", "  tags: [\"!nothing\", x]\n", []string{"managed", "x"}},
		{"drop all, quoted", "  tags: [compute]\n", "  tags: [\"!*\", only]\n", []string{"only"}},
		{"drop all, unquoted", "  tags: [compute]\n", "  tags:\n    - !*\n    - only\n", []string{"only"}},
		{"drop all and nothing else", "  tags: [compute]\n", "  tags: [\"!*\"]\n", nil},
		{"removed then re-added", "  tags: [\"!managed\"]\n", "  tags: [managed]\n", []string{"managed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var edits []edit
			if tc.compute != "" {
				edits = append(edits, rep(profF, "  hardwareProfile: hw1 # @compute-hw\n", "  hardwareProfile: hw1 # @compute-hw\n"+tc.compute))
			}
			if tc.node != "" {
				edits = append(edits, nodeSpec("n1", tc.node))
			}
			d := buildClean(t, edited(t, edits...))
			if diff := cmp.Diff(tc.want, render(t, d, "n1").Tags, cmpEmptyNil()); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
		})
	}

	// Other scalar lists: interface devices and networks.
	d := buildClean(t, edited(t,
		nodeSpec("n2", "  interfaces:\n    bond0:\n      devices: [data1, eno3]\n    pxe:\n      devices: [\"!pxe0\", eno1]\n")))
	s := render(t, d, "n2")
	if diff := cmp.Diff([]string{"data0", "data1", "eno3"}, s.Interfaces["bond0"].Devices); diff != "" {
		t.Errorf("bond0 devices (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"eno1"}, s.Interfaces["pxe"].Devices); diff != "" {
		t.Errorf("pxe devices (-want +got):\n%s", diff)
	}
}

func cmpEmptyNil() cmp.Option {
	return cmp.FilterValues(func(a, b []string) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())
}

func TestInheritObjectListsReplaceWhole(t *testing.T) {
	layer := files{"site/overrides.yaml": `apiVersion: slipway/v1
kind: Network
metadata:
  name: pxe
spec:
  ranges:
    - {type: dhcp, start: 10.11.0.100, end: 10.11.0.200}
---
apiVersion: slipway/v1
kind: Network
metadata:
  name: mgmt
spec:
  routes:
    - {to: 10.1.0.0/24, via: 10.12.0.253}
---
apiVersion: slipway/v1
kind: Node
metadata:
  name: n1
spec:
  addressing:
    - {network: mgmt, address: 10.12.0.150}
---
apiVersion: slipway/v1
kind: BootAction
metadata:
  name: bootstrap
spec:
  assets:
    - {path: /etc/issue, type: file, data: hi}
`}
	d := buildClean(t, baseDesign, layer)
	rs := d.Networks["pxe"].Spec.Ranges
	if len(rs) != 1 || rs[0].Start != "10.11.0.100" || rs[0].End != "10.11.0.200" || rs[0].Type != "dhcp" {
		t.Errorf("pxe ranges = %+v, want only the later layer's", rs)
	}
	if got := d.Networks["pxe"].Spec.Gateway; got != "10.11.0.1" {
		t.Errorf("pxe gateway = %q, want the earlier layer's", got)
	}
	rt := d.Networks["mgmt"].Spec.Routes
	if len(rt) != 1 || rt[0].To != "10.1.0.0/24" || rt[0].Metric != 0 {
		t.Errorf("mgmt routes = %+v, want only the later layer's", rt)
	}
	as := d.BootActions["bootstrap"].Spec.Assets
	if len(as) != 1 || as[0].Path != "/etc/issue" {
		t.Errorf("assets = %+v, want only the later layer's", as)
	}
	s := render(t, d, "n1")
	if len(s.Addressing) != 1 || s.Addressing[0].Network != "mgmt" || s.Addressing[0].Address != "10.12.0.150" {
		t.Errorf("addressing = %+v, want only the later layer's", s.Addressing)
	}
	if s.OOB.Address != "10.10.0.101" || s.BootMAC != "52:54:00:00:00:01" {
		t.Errorf("n1 lost its other fields: oob %q bootMac %q", s.OOB.Address, s.BootMAC)
	}
}

const gpuProfile = `apiVersion: slipway/v1
kind: HostProfile
metadata:
  name: gpu
spec:
  parent: compute
  tags: [gpu]
  platform:
    kernel: hwe-22.04
    kernelParams:
      iommu: pt
  ownerData:
    team: ml
`

func TestInheritThreeLevelChain(t *testing.T) {
	f := edited(t,
		add(profF, gpuProfile),
		rep(profF, "  hardwareProfile: hw1 # @compute-hw\n", "  hardwareProfile: hw1 # @compute-hw\n  tags: [compute]\n  platform:\n    kernel: ga-24.04\n    image: noble\n  ownerData:\n    team: compute\n    pool: general\n"),
		rep(nodesF, "  hostProfile: compute # @n3-hp", "  hostProfile: gpu # @n3-hp"),
		rep(nodesF, "    address: 10.10.0.103 # @n3-bmc\n", "    address: 10.10.0.103 # @n3-bmc\n  tags: [n3]\n"),
	)
	d := buildClean(t, f)
	if diff := cmp.Diff([]string{"base", "compute", "gpu"}, d.Nodes["n3"].Chain); diff != "" {
		t.Errorf("chain (-want +got):\n%s", diff)
	}
	s := render(t, d, "n3")
	if s.HostProfile != "gpu" {
		t.Errorf("hostProfile = %q", s.HostProfile)
	}
	if diff := cmp.Diff([]string{"managed", "compute", "gpu", "n3"}, s.Tags); diff != "" {
		t.Errorf("tags, root first (-want +got):\n%s", diff)
	}
	want := design.Platform{Image: "noble", Kernel: "hwe-22.04", KernelParams: map[string]string{"console": "ttyS1", "iommu": "pt"}}
	if diff := cmp.Diff(want, s.Platform, cmpopts.IgnoreFields(design.Platform{}, "ImagePos")); diff != "" {
		t.Errorf("platform (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"team": "ml", "pool": "general"}, s.OwnerData); diff != "" {
		t.Errorf("ownerData (-want +got):\n%s", diff)
	}
	if s.PrimaryNetwork != "mgmt" || s.HardwareProfile != "hw1" || s.OOB.Credentials == nil {
		t.Errorf("fields from base and compute lost: %q %q %v", s.PrimaryNetwork, s.HardwareProfile, s.OOB.Credentials)
	}
	// The resolved profile carries the whole chain's values.
	gp := d.HostProfiles["gpu"].Spec
	if gp.Parent != "compute" || gp.PrimaryNetwork != "mgmt" {
		t.Errorf("resolved gpu profile: parent %q primaryNetwork %q", gp.Parent, gp.PrimaryNetwork)
	}
	if diff := cmp.Diff([]string{"managed", "compute", "gpu"}, gp.Tags); diff != "" {
		t.Errorf("resolved gpu tags (-want +got):\n%s", diff)
	}
	// A sibling on the middle profile is not affected by gpu.
	if diff := cmp.Diff([]string{"managed", "compute"}, render(t, d, "n1").Tags); diff != "" {
		t.Errorf("n1 tags (-want +got):\n%s", diff)
	}
}

func TestLayeredRoots(t *testing.T) {
	layer := files{"site/layer.yaml": `apiVersion: slipway/v1
kind: HostProfile
metadata:
  name: compute
spec:
  tags: [site]
  ownerData:
    team: null
    site: lab
---
apiVersion: slipway/v1
kind: Network
metadata:
  name: mgmt
spec:
  gateway: 10.12.0.254
---
apiVersion: slipway/v1
kind: Node
metadata:
  name: n2
spec:
  oob:
    address: 10.10.0.202
---
apiVersion: slipway/v1
kind: HostProfile
metadata:
  name: base
spec:
  tags: ["!managed", global]
`}
	d := buildClean(t, baseDesign, layer)
	// Later merges over earlier: scalars replaced, the rest kept.
	m := d.Networks["mgmt"].Spec
	if m.Gateway != "10.12.0.254" || m.CIDR != "10.12.0.0/24" || len(m.Ranges) != 2 {
		t.Errorf("mgmt = gateway %q cidr %q %d ranges, want the layer's gateway over the base", m.Gateway, m.CIDR, len(m.Ranges))
	}
	n2 := render(t, d, "n2")
	if n2.OOB.Address != "10.10.0.202" || len(n2.Addressing) != 3 || n2.HostProfile != "compute" {
		t.Errorf("n2 = oob %q, %d addresses, profile %q", n2.OOB.Address, len(n2.Addressing), n2.HostProfile)
	}
	// A null in the later layer of compute removes the key compute inherits
	// from base; the layer's other keys merge.
	if diff := cmp.Diff(map[string]string{"site": "lab"}, n2.OwnerData); diff != "" {
		t.Errorf("n2 ownerData (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"site": "lab"}, d.HostProfiles["compute"].Spec.OwnerData); diff != "" {
		t.Errorf("compute ownerData (-want +got):\n%s", diff)
	}
	// base keeps its own ownerData: the null was only in compute's layer.
	if diff := cmp.Diff(map[string]string{"team": "infra"}, d.HostProfiles["base"].Spec.OwnerData); diff != "" {
		t.Errorf("base ownerData (-want +got):\n%s", diff)
	}
	// A removal in a later layer removes the earlier layer's item.
	if diff := cmp.Diff([]string{"global", "site"}, n2.Tags); diff != "" {
		t.Errorf("n2 tags (-want +got):\n%s", diff)
	}
	// The position of a layered object is its first definition.
	if got := d.Networks["mgmt"].Metadata.Pos; got.File != netF || got.Line != lineOf(t, baseDesign[netF], "net-mgmt") {
		t.Errorf("mgmt position = %v, want its first definition", got)
	}
}

func TestLayeredRootsRemovalsReachTheParentChain(t *testing.T) {
	layer := files{"site/layer.yaml": `apiVersion: slipway/v1
kind: HostProfile
metadata:
  name: compute
spec:
  tags: ["!managed", site]
  interfaces:
    pxe: null
---
apiVersion: slipway/v1 # @dup
kind: HostProfile
metadata:
  name: compute
spec:
  tags: [later]
`}
	// The nodes address pxe no more: the layer drops the pxe interface.
	f := edited(t, rep(nodesF, "    - {network: pxe, address: dhcp} # @n1-addr0\n", ""),
		rep(nodesF, "    - {network: pxe, address: dhcp} # @n2-addr0\n", ""),
		rep(nodesF, "    - {network: pxe, address: dhcp} # @n3-addr0\n", ""))

	// Two documents of compute in one root are a duplicate, even in a layer.
	_, fs := buildRoots(t, f, layer)
	checkFindings(t, layer, fs, []exp{fail("schema", "HostProfile", "compute", "site/layer.yaml@dup", `duplicate HostProfile "compute"`)})

	// One document per root: a third root layers over the second.
	l1 := files{"site/layer.yaml": strings.SplitN(layer["site/layer.yaml"], "---\n", 2)[0]}
	l2 := files{"rack/layer.yaml": strings.SplitN(layer["site/layer.yaml"], "---\n", 2)[1]}
	d := buildClean(t, f, l1, l2)
	s := render(t, d, "n1")
	if diff := cmp.Diff([]string{"site", "later"}, s.Tags); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	if got := sortedKeys(s.Interfaces); !cmp.Equal(got, []string{"bond0"}) {
		t.Errorf("interfaces = %v, want [bond0]", got)
	}
	// "!*" in a later layer drops what the profile inherits too.
	l3 := files{"rack/layer.yaml": "apiVersion: slipway/v1\nkind: HostProfile\nmetadata:\n  name: compute\nspec:\n  tags: [\"!*\", only]\n"}
	d = buildClean(t, baseDesign, l3)
	if diff := cmp.Diff([]string{"only"}, render(t, d, "n1").Tags); diff != "" {
		t.Errorf("tags after !* in a layer (-want +got):\n%s", diff)
	}
}

func TestDuplicateInOneRootIsSchemaError(t *testing.T) {
	f := edited(t, add(profF, "apiVersion: slipway/v1 # @dup\nkind: HostProfile\nmetadata:\n  name: base\nspec:\n  tags: [again]\n"))
	_, fs := buildRoots(t, f)
	checkFindings(t, f, fs, []exp{fail("schema", "HostProfile", "base", profF+"@dup", `duplicate HostProfile "base": already defined at profiles.yaml:1`)})

	// The same document in two roots is a layer, not a duplicate.
	layer := files{"site/profiles.yaml": "apiVersion: slipway/v1\nkind: HostProfile\nmetadata:\n  name: base\nspec:\n  tags: [again]\n"}
	d := buildClean(t, baseDesign, layer)
	if diff := cmp.Diff([]string{"managed", "again"}, d.HostProfiles["base"].Spec.Tags); diff != "" {
		t.Errorf("base tags (-want +got):\n%s", diff)
	}
}

func TestChainDepth(t *testing.T) {
	d := buildClean(t, edited(t, add(profF, profileChain("deep", 16))))
	if diff := cmp.Diff([]string{"chained"}, d.HostProfiles["deep16"].Spec.Tags); diff != "" {
		t.Errorf("deep16 tags (-want +got):\n%s", diff)
	}
	if got := d.HostProfiles["deep16"].Spec.Parent; got != "deep15" {
		t.Errorf("deep16 parent = %q", got)
	}

	f := edited(t, add(profF, profileChain("deep", 17)))
	_, fs := buildRoots(t, f)
	checkFindings(t, f, fs, []exp{fail("inheritance-cycle", "HostProfile", "deep17", profF+"@deep17-parent", "is deeper than 16 profiles")})
	for _, x := range fs {
		if !strings.Contains(x.Message, "deep1 ") || !strings.Contains(x.Message, "deep17") {
			t.Errorf("message %q does not name the chain", x.Message)
		}
	}

	// A node on a profile 16 deep (node = 17th level) is fine: the limit is
	// on HostProfile chains.
	f = edited(t, add(profF, strings.Replace(profileChain("deep", 14), "  tags: [chained]\n", "  parent: compute\n", 1)),
		rep(nodesF, "  hostProfile: compute # @n1-hp", "  hostProfile: deep14 # @n1-hp"))
	d = buildClean(t, f)
	if got := len(d.Nodes["n1"].Chain); got != 16 {
		t.Errorf("n1 chain has %d profiles, want 16", got)
	}
}

func TestInheritanceCycle(t *testing.T) {
	for _, tc := range []struct {
		name string
		docs string
		want []exp
	}{
		{"two profiles", "apiVersion: slipway/v1\nkind: HostProfile\nmetadata:\n  name: a\nspec:\n  parent: b # @a\n---\napiVersion: slipway/v1\nkind: HostProfile\nmetadata:\n  name: b\nspec:\n  parent: a # @b\n",
			[]exp{
				fail("inheritance-cycle", "HostProfile", "a", profF+"@a", "HostProfile chain a -> b -> a never ends"),
				fail("inheritance-cycle", "HostProfile", "b", profF+"@b", "HostProfile chain b -> a -> b never ends"),
			}},
		{"three profiles", "apiVersion: slipway/v1\nkind: HostProfile\nmetadata:\n  name: a\nspec:\n  parent: b # @a\n---\napiVersion: slipway/v1\nkind: HostProfile\nmetadata:\n  name: b\nspec:\n  parent: c # @b\n---\napiVersion: slipway/v1\nkind: HostProfile\nmetadata:\n  name: c\nspec:\n  parent: a # @c\n",
			[]exp{
				fail("inheritance-cycle", "HostProfile", "a", profF+"@a", "a -> b -> c -> a"),
				fail("inheritance-cycle", "HostProfile", "b", profF+"@b", "b -> c -> a -> b"),
				fail("inheritance-cycle", "HostProfile", "c", profF+"@c", "c -> a -> b -> c"),
			}},
		{"self", "apiVersion: slipway/v1\nkind: HostProfile\nmetadata:\n  name: a\nspec:\n  parent: a # @a\n",
			[]exp{fail("inheritance-cycle", "HostProfile", "a", profF+"@a", "HostProfile chain a -> a never ends")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := edited(t, add(profF, tc.docs))
			_, fs := buildRoots(t, f)
			checkFindings(t, f, fs, tc.want)
		})
	}
}

func TestResolveAndOverlay(t *testing.T) {
	p := design.Pos{File: "t.yaml", Line: 1}
	s := func(x string) *design.Value { return design.NewScalar(design.TagStr, x, p) }
	i := func(x string) *design.Value { return design.NewScalar(design.TagInt, x, p) }
	b := func(x string) *design.Value { return design.NewScalar(design.TagBool, x, p) }
	null := design.NewNull(p)
	list := func(xs ...string) *design.Value {
		var items []*design.Value
		for _, x := range xs {
			items = append(items, s(x))
		}
		return design.NewList(p, items)
	}
	m := func(kv ...any) *design.Value {
		var es []design.Entry
		for k := 0; k+1 < len(kv); k += 2 {
			es = append(es, design.Entry{Key: kv[k].(string), KeyPos: p, Value: kv[k+1].(*design.Value)})
		}
		return design.NewMap(p, es)
	}
	objs := func(vs ...*design.Value) *design.Value { return design.NewList(p, vs) }

	for _, tc := range []struct {
		name          string
		parent, child *design.Value
		want          any
	}{
		{"both absent", nil, nil, nil},
		{"absent child", m("a", s("1")), nil, map[string]any{"a": "1"}},
		{"absent parent strips directives", nil, m("a", null, "b", list("!x", "y")), map[string]any{"b": []any{"y"}}},
		{"scalar replaces", m("a", s("1"), "b", s("2")), m("a", s("3")), map[string]any{"a": "3", "b": "2"}},
		{"false wins", m("a", b("true")), m("a", b("false")), map[string]any{"a": "false"}},
		{"zero wins", m("a", i("7")), m("a", i("0")), map[string]any{"a": "0"}},
		{"empty string wins", m("a", s("x")), m("a", s("")), map[string]any{"a": ""}},
		{"null removes", m("a", s("1"), "b", s("2")), m("a", null), map[string]any{"b": "2"}},
		{"null of an absent key", m("a", s("1")), m("z", null), map[string]any{"a": "1"}},
		{"deep merge", m("a", m("b", m("c", s("1"), "d", s("2")))), m("a", m("b", m("d", s("3"), "e", s("4")))),
			map[string]any{"a": map[string]any{"b": map[string]any{"c": "1", "d": "3", "e": "4"}}}},
		{"empty mapping inherits", m("a", m("b", s("1"))), m("a", m()), map[string]any{"a": map[string]any{"b": "1"}}},
		{"list union", list("a", "b"), list("b", "c"), []any{"a", "b", "c"}},
		{"list removal", list("a", "b"), list("!a", "c"), []any{"b", "c"}},
		{"list drop all", list("a", "b"), list("!*", "c"), []any{"c"}},
		{"list of objects replaced", objs(m("n", s("1")), m("n", s("2"))), objs(m("n", s("3"))), []any{map[string]any{"n": "3"}}},
		{"mapping replaces scalar", m("a", s("1")), m("a", m("b", s("2"))), map[string]any{"a": map[string]any{"b": "2"}}},
		{"whole child null", m("a", s("1")), null, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, plain(design.Resolve(tc.parent, tc.child))); diff != "" {
				t.Errorf("Resolve (-want +got):\n%s", diff)
			}
		})
	}

	// Overlay keeps directives for the parents the document is later
	// resolved over; Resolve applies them there.
	grand := m("tags", list("g", "x", "a"), "od", m("k", s("g"), "j", s("g")))
	for _, tc := range []struct {
		name         string
		early, later *design.Value
		overlay      any
		resolved     any
	}{
		{"removal not found in the earlier layer",
			m("tags", list("a")), m("tags", list("!x", "b")),
			map[string]any{"tags": []any{"a", "!x", "b"}},
			map[string]any{"tags": []any{"g", "a", "b"}, "od": map[string]any{"k": "g", "j": "g"}}},
		// The removal also acts on the parents: the later layer says the
		// document has no "a", wherever it comes from.
		{"removal found in the earlier layer",
			m("tags", list("a", "x")), m("tags", list("!a")),
			map[string]any{"tags": []any{"x", "!a"}},
			map[string]any{"tags": []any{"g", "x"}, "od": map[string]any{"k": "g", "j": "g"}}},
		{"drop all",
			m("tags", list("a")), m("tags", list("!*", "b")),
			map[string]any{"tags": []any{"!*", "b"}},
			map[string]any{"tags": []any{"b"}, "od": map[string]any{"k": "g", "j": "g"}}},
		{"null kept for the parents",
			m("od", m("k", s("e"))), m("od", m("k", null)),
			map[string]any{"od": map[string]any{"k": nil}},
			map[string]any{"tags": []any{"g", "x", "a"}, "od": map[string]any{"j": "g"}}},
		{"null of a key only the parents have",
			m("od", m("z", s("e"))), m("od", m("j", null)),
			map[string]any{"od": map[string]any{"z": "e", "j": nil}},
			map[string]any{"tags": []any{"g", "x", "a"}, "od": map[string]any{"k": "g", "z": "e"}}},
	} {
		t.Run("overlay/"+tc.name, func(t *testing.T) {
			o := design.Overlay(tc.early, tc.later)
			if diff := cmp.Diff(tc.overlay, plain(o)); diff != "" {
				t.Errorf("Overlay (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.resolved, plain(design.Resolve(grand, o))); diff != "" {
				t.Errorf("Resolve over the parents (-want +got):\n%s", diff)
			}
		})
	}

	// Resolve leaves its inputs alone.
	parent := m("a", m("b", s("1")), "l", list("x"))
	design.Resolve(parent, m("a", m("b", null, "c", s("2")), "l", list("!x")))
	if diff := cmp.Diff(map[string]any{"a": map[string]any{"b": "1"}, "l": []any{"x"}}, plain(parent)); diff != "" {
		t.Errorf("parent changed (-want +got):\n%s", diff)
	}
}

// plain turns a Value into maps, lists, strings and nil for comparison.
func plain(v *design.Value) any {
	if v == nil {
		return nil
	}
	switch v.Kind {
	case design.NullValue:
		return nil
	case design.ScalarValue:
		return v.Str
	case design.ListValue:
		out := []any{}
		for _, it := range v.Items {
			out = append(out, plain(it))
		}
		return out
	case design.MapValue:
		out := map[string]any{}
		for _, e := range v.Entries {
			out[e.Key] = plain(e.Value)
		}
		return out
	}
	return "?"
}
