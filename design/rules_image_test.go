package design_test

import (
	"fmt"
	"strings"
	"testing"
)

const imgKind = "Image"

// customImg is a custom Image document called name whose custom section
// is body (lines indented for custom), marked @<name>.
func customImg(name, body string) string {
	return "apiVersion: slipway/v1 # @" + name + "\nkind: Image\nmetadata:\n  name: " + name + "\nspec:\n  custom:\n" + body
}

// goldenBody is a valid custom section; its lines carry marks.
var goldenBody = "    source: {file: gpu-golden.ddraw, sha256: " + sha + "} # @src\n" +
	"    format: ddraw # @format\n" +
	"    size: 8388608 # @size\n" +
	"    baseImage: ubuntu/jammy # @base\n" +
	"    title: GPU golden image # @title\n"

// goldenWith is goldenBody with old replaced by new.
func goldenWith(old, new string) string {
	if strings.Count(goldenBody, old) != 1 {
		panic("goldenWith: " + old)
	}
	return strings.Replace(goldenBody, old, new, 1)
}

// golden adds the custom image gpu-golden with body and makes the compute
// profile's nodes deploy it.
func golden(body string) []edit {
	return []edit{add(imgF, customImg("gpu-golden", body)), withImage("gpu-golden")}
}

// stdImg is a standard Image document called name, its spec on one line
// marked @<name>-spec.
func stdImg(name, spec string) string {
	return "apiVersion: slipway/v1 # @" + name + "\nkind: Image\nmetadata:\n  name: " + name + "\nspec: " + spec + " # @" + name + "-spec\n"
}

// hwArch gives the base hardware profile an architecture.
func hwArch(arch string) edit {
	return rep(hwF, "  vendor: Acme\n", "  vendor: Acme\n  architecture: "+arch+" # @hw-arch\n")
}

func manyImages(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "apiVersion: slipway/v1 # @img%03d\nkind: Image\nmetadata:\n  name: img%03d\nspec: {os: ubuntu, release: r%03d}\n", i, i, i)
	}
	return b.String()
}

var imageCases = []ruleCase{
	// platform.image: an Image document or an Ubuntu series
	{rule: "image", name: "ok: a custom image, a standard one and series with and without ubuntu/",
		edits: append(golden(goldenBody), add(imgF, stdImg("noble", "{os: ubuntu, release: noble}")),
			rep(nodesF, "  hostProfile: compute # @n2-hp\n", "  hostProfile: compute # @n2-hp\n  platform: {image: noble}\n"),
			rep(nodesF, "  hostProfile: compute # @n3-hp\n", "  hostProfile: compute # @n3-hp\n  platform: {image: ubuntu/focal}\n"))},
	{rule: "image", name: "unknown image name",
		edits: []edit{withImage("gpu-golden")},
		want:  []exp{fail("image", "HostProfile", "compute", profF+"@compute-image", `platform.image "gpu-golden" is neither an Image document nor an Ubuntu series`)}},
	{rule: "image", name: "another OS without an Image document",
		edits: []edit{rep(nodesF, "  hostProfile: compute # @n1-hp\n", "  hostProfile: compute # @n1-hp\n  platform:\n    image: centos/centos8 # @n1-image\n")},
		want:  []exp{fail("image", "Node", "n1", nodesF+"@n1-image", `platform.image "centos/centos8" is neither`)}},
	{rule: "image", name: "ok: another OS through an Image document",
		edits: []edit{add(imgF, stdImg("centos8", "{os: centos, release: centos8}")), withImage("centos8")}},
	// architecture
	{rule: "image", name: "an amd64 image on an arm64 hardware profile",
		edits: append(golden(goldenBody), hwArch("arm64")),
		want:  []exp{fail("image", "HostProfile", "compute", profF+"@compute-image", "image gpu-golden is amd64 (amd64/generic), hardware profile hw1 is arm64")}},
	{rule: "image", name: "ok: an arm64 image on an arm64 hardware profile, a series too",
		edits: append(golden(goldenBody), hwArch("arm64"), rep(imgF, "spec:\n  custom:\n", "spec:\n  architecture: arm64/generic\n  custom:\n"),
			rep(nodesF, "  hostProfile: compute # @n3-hp\n", "  hostProfile: compute # @n3-hp\n  platform: {image: jammy}\n"))},
	{rule: "image", name: "architecture not arch/subarch",
		edits: []edit{add(imgF, "apiVersion: slipway/v1\nkind: Image\nmetadata:\n  name: a\nspec:\n  os: ubuntu\n  release: noble\n  architecture: amd64 # @arch-a\n---\n"+
			"apiVersion: slipway/v1\nkind: Image\nmetadata:\n  name: b\nspec:\n  os: ubuntu\n  release: noble\n  architecture: i386/generic # @arch-b\n")},
		want: []exp{fail("image", imgKind, "a", imgF+"@arch-a", `architecture "amd64" is not arch/subarch`),
			fail("image", imgKind, "b", imgF+"@arch-b", `architecture "i386/generic" is not arch/subarch`)}},
	{rule: "schema", name: "hardware architecture not in the enum",
		edits: []edit{hwArch("i386")},
		want:  []exp{fail("schema", "HardwareProfile", "hw1", hwF+"@hw-arch", `"i386" is not one of amd64, arm64, ppc64el, s390x`)}},
	// custom: source, checksum
	{rule: "image", name: "sha256 not 64 hex digits",
		edits: golden(goldenWith("sha256: "+sha+"} # @src", "sha256: abc} # @src")),
		want:  []exp{fail("image", imgKind, "gpu-golden", imgF+"@src", "custom.source.sha256 must be 64 hex digits")}},
	{rule: "schema", name: "sha256 missing",
		edits: golden(goldenWith(", sha256: "+sha+"} # @src", "} # @src")),
		want:  []exp{fail("schema", imgKind, "gpu-golden", imgF+"@src", "spec.custom.source.sha256 is required")}},
	{rule: "image", name: "source with both url and file",
		edits: golden(goldenWith("{file: gpu-golden.ddraw,", "{file: gpu-golden.ddraw, url: \"https://img.example/g.ddraw\",")),
		want:  []exp{fail("image", imgKind, "gpu-golden", imgF+"@src", "custom.source has both url and file")}},
	{rule: "image", name: "source with neither url nor file",
		edits: golden(goldenWith("{file: gpu-golden.ddraw,", "{")),
		want:  []exp{fail("image", imgKind, "gpu-golden", imgF+"@src", "custom.source needs url (where Slipway fetches it) or file (a file in Slipway's image directory (serve --image-dir))")}},
	{rule: "image", name: "a URL with user information, not repeated",
		edits: golden(goldenWith("{file: gpu-golden.ddraw,", "{url: \"https://op:hunter2@img.example/g.ddraw\",")),
		want: []exp{fail("image", imgKind, "gpu-golden", imgF+"@src",
			"custom.source.url: the URL carries user information: a design holds no credentials; serve the file without them (or put it in Slipway's image directory (serve --image-dir) and name it with file)")},
		secret: "hunter2"},
	{rule: "image", name: "a file outside the image directory",
		edits: golden(goldenWith("{file: gpu-golden.ddraw,", "{file: ../etc/shadow,")),
		want:  []exp{fail("image", imgKind, "gpu-golden", imgF+"@src", `custom.source.file: "../etc/shadow" is not a file in the image directory (serve --image-dir): write a relative name like gpu-golden.ddraw`)}},
	{rule: "image", name: "ok: a URL source, the largest size, the longest title",
		edits: golden(text{goldenWith("{file: gpu-golden.ddraw,", "{url: \"http://10.0.0.1:8080/g.ddraw?v=2\",")}.
			replaceAll("size: 8388608", fmt.Sprint("size: ", int64(64<<30))).
			replaceAll("title: GPU golden image", "title: "+strings.Repeat("é", 256)).s)},
	// custom: format, size, base image, title
	{rule: "schema", name: "format not one MAAS takes",
		edits: golden(goldenWith("format: ddraw", "format: qcow2")),
		want:  []exp{fail("schema", imgKind, "gpu-golden", imgF+"@format", `spec.custom.format: "qcow2" is not one of tgz, tbz, txz, ddtgz, ddtbz, ddtxz, ddtar, ddbz2, ddgz, ddxz, ddraw`)}},
	{rule: "image", name: "size 0",
		edits: golden(goldenWith("size: 8388608", "size: 0")),
		want:  []exp{fail("image", imgKind, "gpu-golden", imgF+"@size", "custom.size is 0: write the image's exact size in bytes")}},
	{rule: "image", name: "size over 64 GiB",
		edits: golden(goldenWith("size: 8388608", fmt.Sprint("size: ", int64(64<<30)+1))),
		want:  []exp{fail("image", imgKind, "gpu-golden", imgF+"@size", "custom.size is 68719476737 bytes, more than the 68719476736 (64 GiB)")}},
	{rule: "schema", name: "size missing",
		edits: golden(goldenWith("    size: 8388608 # @size\n", "")),
		want:  []exp{fail("schema", imgKind, "gpu-golden", imgF+"@src", "spec.custom.size is required")}},
	{rule: "image", name: "baseImage not os/release",
		edits: golden(goldenWith("baseImage: ubuntu/jammy", "baseImage: jammy")),
		want:  []exp{fail("image", imgKind, "gpu-golden", imgF+"@base", `custom.baseImage "jammy" is not os/release of a standard image`)}},
	{rule: "image", name: "title too long",
		edits: golden(goldenWith("title: GPU golden image", "title: "+strings.Repeat("t", 257))),
		want:  []exp{fail("image", imgKind, "gpu-golden", imgF+"@title", "custom.title is 257 characters long, at most 256")}},
	{rule: "image", name: "title with a control character",
		edits: golden(goldenWith("title: GPU golden image", `title: "GPU\tgolden"`)),
		want:  []exp{fail("image", imgKind, "gpu-golden", imgF+"@title", "custom.title has a character that is not printable")}},
	{rule: "image", name: "a custom image named as MAAS's own",
		edits: []edit{add(imgF, customImg("noble", goldenBody)), add(imgF, strings.ReplaceAll(customImg("centos7", goldenBody), "# @", "# @c7-"))},
		want: []exp{fail("image", imgKind, "centos7", imgF+"@c7-centos7", `MAAS keeps the name "centos7" for its own images`),
			fail("image", imgKind, "noble", imgF+"@noble", `MAAS keeps the name "noble" for its own images`)}},
	// standard
	{rule: "image", name: "standard image without release",
		edits: []edit{add(imgF, stdImg("std", "{os: ubuntu}"))},
		want:  []exp{fail("image", imgKind, "std", imgF+"@std-spec", "a standard image needs os and release")}},
	{rule: "image", name: "standard image with a malformed release",
		edits: []edit{add(imgF, stdImg("std", "{os: ubuntu, release: \"No ble\"}"))},
		want:  []exp{fail("image", imgKind, "std", imgF+"@std-spec", `os "ubuntu" and release "No ble" must each be 1 to 64 characters`)}},
	{rule: "image", name: "standard image of os custom",
		edits: []edit{add(imgF, stdImg("std", "{os: custom, release: golden}"))},
		want:  []exp{fail("image", imgKind, "std", imgF+"@std-spec", "os custom is for uploaded images")}},
	{rule: "image", name: "os and release with custom",
		edits: []edit{add(imgF, strings.Replace(customImg("gpu-golden", goldenBody), "spec:\n", "spec:\n  os: ubuntu # @spec\n  release: noble\n", 1))},
		want:  []exp{fail("image", imgKind, "gpu-golden", imgF+"@spec", "image gpu-golden has custom and os/release")}},
	{rule: "image", name: "two documents of one standard image",
		edits: []edit{add(imgF, stdImg("noble", "{os: ubuntu, release: noble}")), add(imgF, stdImg("noble2", "{os: ubuntu, release: noble, architecture: amd64/generic}")),
			add(imgF, stdImg("noble-arm", "{os: ubuntu, release: noble, architecture: arm64/generic}"))},
		want: []exp{fail("image", imgKind, "noble2", imgF+"@noble2-spec", "image noble2 is ubuntu/noble for amd64/generic, as image noble is")}},
	// bounds
	{rule: "image", name: "more Image documents than the bound",
		edits: []edit{add(imgF, manyImages(257))},
		want:  []exp{fail("image", imgKind, "img256", imgF+"@img256", "the design has 257 Image documents, at most 256")}},
	{rule: "image", name: "ok: as many Image documents as the bound",
		edits: []edit{add(imgF, manyImages(256))}},
}

// text is a string with chained replacements, for a case's YAML.
type text struct{ s string }

func (t text) replaceAll(old, new string) text { return text{strings.ReplaceAll(t.s, old, new)} }

func init() { ruleCases = append(ruleCases, imageCases...) }

// TestImageRuleInheritedOnce: an image problem a profile's nodes inherit
// is one finding, at the profile's line, not one per node.
func TestImageRuleInheritedOnce(t *testing.T) {
	_, fs, _ := buildEdited(t, withImage("nosuch"))
	n := 0
	for _, f := range fs {
		if f.Rule == "image" {
			n++
			if !strings.Contains(f.Message, "3 more objects share it") {
				t.Errorf("finding does not say the nodes share it: %s", f)
			}
		}
	}
	if n != 1 {
		t.Errorf("got %d image findings, want 1: %v", n, fs)
	}
}
