package design

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// RuleImage checks Image documents (a standard image's os and release, a
// custom image's source, format, size, base image and title, the
// architecture, one document per provisioner image) and the images nodes
// deploy: platform.image names an Image document or an Ubuntu series, and
// the image's architecture is the node's hardware profile's.
const RuleImage = "image"

// Bounds of the Image documents.
const (
	MaxImages         = 256
	MaxImageSize      = 64 << 30 // bytes of one custom image
	MaxImageTitleLen  = 256      // characters
	maxImageTokenLen  = 64
	imageTokenPattern = `[a-z0-9][a-z0-9._-]{0,63}`
)

var (
	imageTokenRE = regexp.MustCompile(`^` + imageTokenPattern + `$`)
	// imageArchRE is arch/subarch as MAAS names an architecture.
	imageArchRE = regexp.MustCompile(`^(amd64|arm64|ppc64el|s390x)/` + imageTokenPattern + `$`)
	// centosNameRE: MAAS keeps these names for its CentOS images.
	centosNameRE = regexp.MustCompile(`^centos[0-9][0-9]?$`)
)

// UbuntuSeries are the Ubuntu releases a platform.image may name without
// an Image document ("jammy", "ubuntu/jammy"): a standard image the
// provisioner imports from its boot source.
var UbuntuSeries = []string{
	"trusty", "xenial", "yakkety", "zesty", "artful", "bionic", "cosmic", "disco", "eoan",
	"focal", "groovy", "hirsute", "impish", "jammy", "kinetic", "lunar", "mantic",
	"noble", "oracular", "plucky", "questing",
}

// maasOSNames are the operating systems MAAS knows: MAAS refuses them, and
// every name of its boot source, as a custom image's name.
var maasOSNames = []string{"ubuntu", "ubuntu-core", "centos", "rhel", "ol", "suse", "windows", "esxi", "custom"}

// images checks the Image documents.
func (v *validator) images() {
	names := sortedNames(v.d.Images)
	if len(names) > MaxImages {
		im := v.d.Images[names[MaxImages]]
		v.r.errorf(RuleImage, KindImage, im.Metadata.Name, im.Metadata.Pos,
			"the design has %d Image documents, at most %d: remove the ones no node deploys", len(names), MaxImages)
	}
	seen := map[string]string{} // provisioner name + arch -> image
	for _, n := range names {
		im := v.d.Images[n]
		v.image(im)
		key := im.ProvisionerName() + " " + im.Arch()
		if other, dup := seen[key]; dup {
			v.r.errorf(RuleImage, KindImage, n, orPos(im.Spec.Pos, im.Metadata.Pos),
				"image %s is %s for %s, as image %s is: keep one and name it from the host profiles", n, im.ProvisionerName(), im.Arch(), other)
			continue
		}
		seen[key] = n
	}
}

// image checks one Image document.
func (v *validator) image(im *Image) {
	name, s := im.Metadata.Name, &im.Spec
	bad := func(pos Pos, format string, args ...any) {
		v.r.errorf(RuleImage, KindImage, name, orPos(pos, orPos(s.Pos, im.Metadata.Pos)), format, args...)
	}
	if s.Architecture != "" && !imageArchRE.MatchString(s.Architecture) {
		bad(s.ArchitecturePos, "architecture %.40q is not arch/subarch with arch amd64, arm64, ppc64el or s390x (amd64/generic, arm64/generic)", s.Architecture)
	}
	if s.Custom == nil {
		standardImage(bad, s)
		return
	}
	if s.OS != "" || s.Release != "" {
		bad(s.Pos, "image %s has custom and os/release: a custom image's OS is custom; remove os and release, or custom for a standard image", name)
	}
	if reservedImageName(name) {
		bad(im.Metadata.Pos, "custom image %s: MAAS keeps the name %q for its own images (an OS, a release or a centos name); rename the Image", name, name)
	}
	customImage(bad, s.Custom)
}

// standardImage checks a standard image's os and release.
func standardImage(bad baselineReport, s *ImageSpec) {
	switch {
	case s.OS == "" || s.Release == "":
		bad(s.Pos, "a standard image needs os and release (os: ubuntu, release: noble); a custom image needs custom (source, format, size)")
	case !imageTokenRE.MatchString(s.OS) || !imageTokenRE.MatchString(s.Release):
		bad(s.Pos, "os %.40q and release %.40q must each be 1 to %d characters a-z, 0-9, '.', '_' or '-', as the provisioner names them (ubuntu, noble)", s.OS, s.Release, maxImageTokenLen)
	case s.OS == "custom":
		bad(s.Pos, "os custom is for uploaded images: give the image custom (source, format, size) instead of os and release")
	}
}

// customImage checks a custom image's content description.
func customImage(bad baselineReport, c *CustomImage) {
	firmwareImage(bad, orPos(c.Source.Pos, c.Pos), "custom.source", osImageDir, &c.Source)
	switch {
	case c.Size <= 0 && c.SizePos.IsSet():
		bad(c.SizePos, "custom.size is %d: write the image's exact size in bytes (stat -c %%s FILE)", c.Size)
	case c.Size > MaxImageSize:
		bad(c.SizePos, "custom.size is %d bytes, more than the %d (64 GiB) an image may have", c.Size, int64(MaxImageSize))
	}
	if c.BaseImage != "" || c.BaseImagePos.IsSet() {
		os, rel, ok := strings.Cut(c.BaseImage, "/")
		if !ok || !imageTokenRE.MatchString(os) || !imageTokenRE.MatchString(rel) || os == "custom" {
			bad(orPos(c.BaseImagePos, c.Pos), "custom.baseImage %.40q is not os/release of a standard image (ubuntu/jammy): the provisioner boots its kernel", c.BaseImage)
		}
	}
	if p := titleProblem(c.Title); p != "" {
		bad(orPos(c.TitlePos, c.Pos), "custom.title %s", p)
	}
}

// titleProblem is the problem of an image's title ("" when none).
func titleProblem(t string) string {
	switch n := utf8.RuneCountInString(t); {
	case n > MaxImageTitleLen:
		return fmt.Sprintf("is %d characters long, at most %d", n, MaxImageTitleLen)
	case !utf8.ValidString(t) || strings.ContainsFunc(t, func(r rune) bool { return !unicode.IsPrint(r) }):
		return "has a character that is not printable (a control character, a tab, a newline): write it on one line"
	}
	return ""
}

// reservedImageName reports whether MAAS refuses name for an uploaded
// image: an operating system's, an Ubuntu series', or centosN.
func reservedImageName(name string) bool {
	return slices.Contains(maasOSNames, name) || slices.Contains(UbuntuSeries, name) || centosNameRE.MatchString(name)
}

// platformImage checks the image a host profile or a node deploys: an
// Image document or an Ubuntu series, of the hardware profile's
// architecture (hw nil: not known here). A node inherits its profile's
// findings, which the report folds into one.
func (v *validator) platformImage(kind, name string, p *Platform, hw *HardwareProfileSpec, hwName string) {
	if p.Image == "" {
		return
	}
	im := v.d.Images[p.Image]
	if im == nil {
		if !isUbuntuSeries(p.Image) {
			v.r.errorf(RuleImage, kind, name, p.ImagePos,
				"platform.image %.60q is neither an Image document nor an Ubuntu series: declare it (kind: Image) or name a series such as jammy or noble", p.Image)
		}
		return
	}
	if hw == nil {
		return
	}
	arch, _, _ := strings.Cut(im.Arch(), "/")
	if arch != hw.Arch() {
		v.r.errorf(RuleImage, kind, name, p.ImagePos,
			"image %s is %s (%s), hardware profile %s is %s: its machines cannot boot it; give the profile an image of %s, or fix architecture",
			im.Metadata.Name, arch, im.Arch(), hwName, hw.Arch(), hw.Arch())
	}
}

// isUbuntuSeries reports whether image names an Ubuntu series, alone or
// as ubuntu/<series>.
func isUbuntuSeries(image string) bool {
	return slices.Contains(UbuntuSeries, strings.TrimPrefix(image, StandardOS+"/"))
}
