package design

import (
	"slices"
	"strings"
)

// DefaultImageArch is an Image's architecture when it names none.
const DefaultImageArch = "amd64/generic"

// DefaultArch is a hardware profile's architecture when it names none.
const DefaultArch = "amd64"

// StandardOS is the operating system of an image a host profile names
// by its series alone ("jammy").
const StandardOS = "ubuntu"

// Arch is the image's architecture, arch/subarch as the provisioner
// names it: Spec.Architecture, else DefaultImageArch.
func (im *Image) Arch() string {
	if im.Spec.Architecture != "" {
		return im.Spec.Architecture
	}
	return DefaultImageArch
}

// ProvisionerName is the image's name in the provisioner:
// "custom/<name>" for a custom image, "<os>/<release>" for a standard one.
func (im *Image) ProvisionerName() string {
	if im.Spec.Custom != nil {
		return "custom/" + im.Metadata.Name
	}
	return im.Spec.OS + "/" + im.Spec.Release
}

// Arch is the profile's CPU architecture: Architecture, else DefaultArch.
func (h *HardwareProfileSpec) Arch() string {
	if h == nil || h.Architecture == "" {
		return DefaultArch
	}
	return h.Architecture
}

// ImageOf returns the image node n deploys: the Image document its
// resolved platform.image names; else, for a name that is no Image
// document, a standard image synthesized from it ("jammy" is
// ubuntu/jammy, "ubuntu/noble" is itself) of the node's hardware
// architecture, named as written; nil when platform.image is empty (the
// provisioner's default image). The synthesized image is a new value on
// every call.
func (d *Design) ImageOf(n *Node) *Image {
	if n == nil || n.Spec.Platform.Image == "" {
		return nil
	}
	name := n.Spec.Platform.Image
	if im := d.Images[name]; im != nil {
		return im
	}
	os, release := StandardOS, name
	if o, r, ok := strings.Cut(name, "/"); ok {
		os, release = o, r
	}
	return &Image{
		Metadata: ObjectMeta{Name: name},
		Spec:     ImageSpec{OS: os, Release: release, Architecture: n.Spec.Hardware.Arch() + "/generic"},
	}
}

// ImageSites returns the Sites, sorted, whose nodes deploy the image
// called name (an Image document's name, or a series as ImageOf names a
// synthesized image).
func (d *Design) ImageSites(name string) []string {
	var out []string
	for _, nn := range sortedNames(d.Nodes) {
		n := d.Nodes[nn]
		if im := d.ImageOf(n); im != nil && im.Metadata.Name == name {
			out = append(out, d.SiteNameOf(n))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
