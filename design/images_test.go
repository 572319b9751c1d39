package design_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
)

// goldenImage is a custom Image document (sha is rules_baseline_test's).
var goldenImage = `apiVersion: slipway/v1 # @img-golden
kind: Image
metadata:
  name: gpu-golden
spec:
  custom:
    source: {file: gpu-golden.ddraw, sha256: ` + sha + `} # @img-golden-source
    format: ddraw # @img-golden-format
    size: 8388608 # @img-golden-size
    baseImage: ubuntu/jammy # @img-golden-base
    title: GPU golden image # @img-golden-title
`

// nobleImage is a standard Image document.
const nobleImage = `apiVersion: slipway/v1 # @img-noble
kind: Image
metadata:
  name: noble
spec: {os: ubuntu, release: noble} # @img-noble-spec
`

const imgF = "images.yaml"

// withImage makes the compute profile's nodes deploy image.
func withImage(image string) edit {
	return rep(profF, "  hardwareProfile: hw1 # @compute-hw\n", "  hardwareProfile: hw1 # @compute-hw\n  platform:\n    image: "+image+" # @compute-image\n")
}

func buildEdited(t *testing.T, edits ...edit) (*design.Design, design.Findings, files) {
	t.Helper()
	f := baseDesign.clone()
	for _, e := range edits {
		e(t, f)
	}
	d, fs := buildRoots(t, f)
	return d, fs, f
}

// TestImageOfDocument: a node whose platform.image names an Image
// document deploys that document, a custom one by custom/<name>.
func TestImageOfDocument(t *testing.T) {
	d, fs, _ := buildEdited(t, add(imgF, goldenImage), withImage("gpu-golden"))
	if fs.HasErrors() {
		t.Fatalf("findings: %v", fs)
	}
	im := d.ImageOf(d.Nodes["n1"])
	if im != d.Images["gpu-golden"] || im == nil {
		t.Fatalf("ImageOf(n1) = %+v, want the Image document gpu-golden", im)
	}
	if got := im.ProvisionerName(); got != "custom/gpu-golden" {
		t.Errorf("ProvisionerName = %q, want custom/gpu-golden", got)
	}
	if got := im.Arch(); got != "amd64/generic" {
		t.Errorf("Arch = %q, want the default amd64/generic", got)
	}
	c := im.Spec.Custom
	if c == nil || c.Format != "ddraw" || c.Size != 8388608 || c.BaseImage != "ubuntu/jammy" || c.Title != "GPU golden image" || c.Source.File != "gpu-golden.ddraw" || c.Source.SHA256 != sha {
		t.Errorf("custom = %+v", c)
	}
	if got := d.Counts()[design.KindImage]; got != 1 {
		t.Errorf("Counts()[Image] = %d, want 1", got)
	}
}

// TestImageOfStandard: a series with no Image document of its name is a
// standard Ubuntu image named as written; "os/release" keeps its OS; the
// architecture is the node's hardware profile's; an Image document of a
// standard image is itself.
func TestImageOfStandard(t *testing.T) {
	d, fs, _ := buildEdited(t, add(imgF, nobleImage))
	if fs.HasErrors() {
		t.Fatalf("findings: %v", fs)
	}
	n := d.Nodes["n1"] // the Site defaults' jammy
	im := d.ImageOf(n)
	if im == nil || im.Metadata.Name != "jammy" || im.Spec.OS != "ubuntu" || im.Spec.Release != "jammy" || im.Spec.Custom != nil ||
		im.ProvisionerName() != "ubuntu/jammy" || im.Arch() != "amd64/generic" {
		t.Fatalf("ImageOf(n1) = %+v", im)
	}
	if d.Images["jammy"] != nil {
		t.Error("ImageOf added the synthesized image to the design")
	}
	for _, tc := range []struct{ image, arch, name, prov, archWant string }{
		{"ubuntu/noble", "", "ubuntu/noble", "ubuntu/noble", "amd64/generic"},
		{"focal", "arm64", "focal", "ubuntu/focal", "arm64/generic"},
		{"noble", "arm64", "noble", "ubuntu/noble", "amd64/generic"}, // the document's, whatever the node
	} {
		n := &design.Node{Metadata: design.ObjectMeta{Name: "x"}}
		n.Spec.Platform.Image = tc.image
		n.Spec.Hardware = &design.HardwareProfileSpec{Architecture: tc.arch}
		im := d.ImageOf(n)
		if im == nil || im.Metadata.Name != tc.name || im.ProvisionerName() != tc.prov || im.Arch() != tc.archWant {
			t.Errorf("%s on %q: ImageOf = %+v", tc.image, tc.arch, im)
		}
	}
	if tc := d.Images["noble"]; d.ImageOf(&design.Node{Spec: design.NodeSpec{HostSpec: design.HostSpec{Platform: design.Platform{Image: "noble"}}}}) != tc {
		t.Error("ImageOf(noble) is not the Image document noble")
	}
	if im := d.ImageOf(&design.Node{}); im != nil {
		t.Errorf("ImageOf(no platform.image) = %+v, want nil (the provisioner's default)", im)
	}
}

// TestImageArchDefaults: an Image with no architecture is amd64/generic,
// a hardware profile with none amd64; both default without changing the
// canonical JSON of a design that has no Image.
func TestImageArchDefaults(t *testing.T) {
	if got := (&design.Image{}).Arch(); got != "amd64/generic" {
		t.Errorf("Image{}.Arch() = %q", got)
	}
	if got := (&design.Image{Spec: design.ImageSpec{Architecture: "arm64/generic"}}).Arch(); got != "arm64/generic" {
		t.Errorf("Arch() = %q", got)
	}
	var nilHW *design.HardwareProfileSpec
	if got := nilHW.Arch(); got != "amd64" {
		t.Errorf("nil hardware Arch() = %q", got)
	}
	d, fs, _ := buildEdited(t, rep(hwF, "  vendor: Acme\n", "  vendor: Acme\n  architecture: arm64\n"))
	if fs.HasErrors() {
		t.Fatalf("findings: %v", fs)
	}
	if got := d.HardwareProfiles["hw1"].Spec.Arch(); got != "arm64" {
		t.Errorf("hw1 Arch() = %q, want arm64", got)
	}
	d, _, _ = buildEdited(t)
	body, _, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if s := string(body); strings.Contains(s, `"images"`) || strings.Contains(s, `"architecture"`) {
		t.Errorf("a design without images gained a key in its canonical JSON: %s", s)
	}
}

// TestImageSites: the Sites whose nodes deploy an image, sorted, each
// once; none for an image no node deploys.
func TestImageSites(t *testing.T) {
	golden := &design.Image{Metadata: design.ObjectMeta{Name: "gpu-golden"}, Spec: design.ImageSpec{Custom: &design.CustomImage{Format: "ddraw", Size: 1}}}
	node := func(name, site, image string) *design.Node {
		n := &design.Node{Metadata: design.ObjectMeta{Name: name}}
		n.Spec.Site, n.Spec.Platform.Image = site, image
		return n
	}
	site := func(name string) *design.Site { return &design.Site{Metadata: design.ObjectMeta{Name: name}} }
	d := &design.Design{
		Sites:  map[string]*design.Site{"east": site("east"), "west": site("west"), "north": site("north")},
		Images: map[string]*design.Image{"gpu-golden": golden},
		Nodes: map[string]*design.Node{
			"w1": node("w1", "west", "gpu-golden"), "e1": node("e1", "east", "gpu-golden"), "e2": node("e2", "east", "gpu-golden"),
			"n1": node("n1", "north", "jammy"), "w2": node("w2", "west", ""),
		},
	}
	d.Site = d.Sites["east"]
	for _, tc := range []struct {
		image string
		want  []string
	}{{"gpu-golden", []string{"east", "west"}}, {"jammy", []string{"north"}}, {"noble", nil}} {
		if got := d.ImageSites(tc.image); !slices.Equal(got, tc.want) {
			t.Errorf("ImageSites(%s) = %v, want %v", tc.image, got, tc.want)
		}
	}
}
