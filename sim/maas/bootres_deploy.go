package maas

import (
	"sort"
	"strings"
)

// Deploying with an image. MAAS's deploy takes distro_series only (its
// osystem parameter is not read: src/maasserver/api/machines.py deploy)
// and resolves it as MachineForm.set_distro_series does
// (src/maasserver/forms/__init__.py): a bare release is looked up among
// the releases of every usable OS ("gpu-golden" is the custom OS's
// release when an uploaded image has that name), "os/release" is taken
// as written; the result must be one of the usable os/release choices
// (clean_distro_series_field), else 400 on distro_series with MAAS's
// compose_invalid_choice_text. An image is usable when a set of it is
// complete, so an upload under way is refused. The lab also refuses an
// image that has no complete set for the machine's architecture (MAAS
// refuses it later, when it renders the machine's preseed); docs/lab.md.

// ImageHooks, when the MachineHooks implement it too, hear of a finished
// deployment with the image it installed (instead of Deployed).
type ImageHooks interface {
	DeployedWith(systemID string, macs []string, userData []byte, image DeployedImage)
}

// deployImage resolves a deploy's distro_series for m: the image, and the
// resource whose newest complete set it deploys.
func (s *Server) deployImage(m *machine, series string) (DeployedImage, *bootResource, *apiError) {
	arch := archOnly(orDefault(m.Arch, "amd64/generic"))
	osys, rel, slash := strings.Cut(series, "/")
	if !slash {
		osys, rel = s.osOfRelease(series), series
	}
	shown := series
	if osys != "" && !slash {
		shown = osys + "/" + rel
	}
	res := s.usableResource(osys, rel, arch)
	if osys == "" || res == nil {
		choices := append([]string{""}, s.releaseChoices(arch)...)
		return DeployedImage{}, nil, badRequest("distro_series", "%s", msgInvalidChoiceOf(shown, "distro_series", choices))
	}
	img := DeployedImage{OSystem: osys, Series: rel}
	if osys == "custom" {
		img.SHA256 = res.latestComplete().Files[0].SHA256
	}
	return img, res, nil
}

// imageOS is the OS a resource's image is a release of: custom for an
// uploaded image without an OS prefix.
func imageOS(b *bootResource) (osys, rel string) {
	if o, r, ok := strings.Cut(b.Name, "/"); ok {
		return o, r
	}
	return "custom", b.Name
}

// osOfRelease finds the OS that has a usable release of that name (any
// architecture), "" when none.
func (s *Server) osOfRelease(rel string) string {
	for _, b := range s.bootRes {
		if o, r := imageOS(b); r == rel && b.latestComplete() != nil {
			return o
		}
	}
	return ""
}

// usableResource is the resource of os/release for the architecture with
// a complete set (the newest resource when several), nil when none.
func (s *Server) usableResource(osys, rel, arch string) *bootResource {
	var out *bootResource
	for _, b := range s.bootRes {
		if o, r := imageOS(b); o == osys && r == rel && archOnly(b.Architecture) == arch && b.latestComplete() != nil {
			out = b
		}
	}
	return out
}

// releaseChoices are the usable os/release values for the architecture,
// sorted.
func (s *Server) releaseChoices(arch string) []string {
	var out []string
	for _, b := range s.bootRes {
		if o, r := imageOS(b); archOnly(b.Architecture) == arch && b.latestComplete() != nil && !contains(out, o+"/"+r) {
			out = append(out, o+"/"+r)
		}
	}
	sort.Strings(out)
	return out
}

// deployedImage is the image m was deployed with (zero when none).
func (m *machine) deployedImage() DeployedImage {
	if m.OSystem == "" {
		return DeployedImage{}
	}
	return DeployedImage{OSystem: m.OSystem, Series: m.DistroSeries, SHA256: m.ImageSHA256}
}

// DeployedImage returns the image a machine was deployed with (ok false
// when the region has no such machine).
func (s *Server) DeployedImage(systemID string) (DeployedImage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.machines[systemID]
	if m == nil {
		return DeployedImage{}, false
	}
	return m.deployedImage(), true
}
