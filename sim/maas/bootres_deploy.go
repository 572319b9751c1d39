package maas

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Deploying with an image. MAAS's deploy takes distro_series only (its
// osystem parameter is not read: src/maasserver/api/machines.py deploy)
// and resolves it as MachineForm.set_distro_series does
// (src/maasserver/forms/__init__.py): a bare release is looked up among
// the releases of every usable OS ("gpu-golden" is the custom OS's
// release when an uploaded image has that name), "os/release" is taken
// as written; the result must be one of the usable os/release choices
// (clean_distro_series_field), else 400 on distro_series with MAAS's
// compose_invalid_choice_text. The usable operating systems
// (list_all_usable_osystems) are every boot resource's, complete or not,
// of any architecture: the deploy is accepted and fails at install
// (get_curtin_image's MissingBootImage, Failed deployment) when the
// machine's architecture has no complete set of the image. The set
// installed is the newest complete one when the install runs (the end
// of the lab's deploy phase).

// ImageHooks, when the MachineHooks implement it too, hear of a finished
// deployment with the image it installed (instead of Deployed).
type ImageHooks interface {
	DeployedWith(systemID string, macs []string, userData []byte, image DeployedImage)
}

// deployImage resolves a deploy's distro_series for m: the OS and
// release it deploys (the set is chosen at install, installImage).
func (s *Server) deployImage(series string) (DeployedImage, *apiError) {
	osys, rel, slash := strings.Cut(series, "/")
	if !slash {
		osys, rel = s.osOfRelease(series), series
	}
	shown := series
	if osys != "" && !slash {
		shown = osys + "/" + rel
	}
	if osys == "" || !contains(s.releaseChoices(), osys+"/"+rel) {
		choices := append([]string{""}, s.releaseChoices()...)
		return DeployedImage{}, badRequest("distro_series", "%s", msgInvalidChoiceOf(shown, "distro_series", choices))
	}
	return DeployedImage{OSystem: osys, Series: rel}, nil
}

// installImage is the image m's install takes: the newest complete set of
// its OS and release for m's architecture, recorded on m and its
// resource; else MAAS's MissingBootImage message (s.mu is held).
func (s *Server) installImage(m *machine) string {
	arch, sub, _ := strings.Cut(orDefault(m.Arch, "amd64/generic"), "/")
	res := s.usableResource(m.OSystem, m.DistroSeries, arch)
	if res == nil {
		return fmt.Sprintf("Error generating the URL of curtin's image file.  No image could be found for the given selection: "+
			"os=%s, arch=%s, subarch=%s, series=%s, purpose=xinstall.", m.OSystem, arch, orDefault(sub, "generic"), m.DistroSeries)
	}
	if m.OSystem == "custom" {
		m.ImageSHA256 = res.latestComplete().Files[0].SHA256
	}
	res.LastDeployed = time.Now()
	return ""
}

// imageOS is the OS a resource's image is a release of: custom for an
// uploaded image without an OS prefix.
func imageOS(b *bootResource) (osys, rel string) {
	if o, r, ok := strings.Cut(b.Name, "/"); ok {
		return o, r
	}
	return "custom", b.Name
}

// osOfRelease finds the OS that has a release of that name (any
// architecture, complete or not), "" when none.
func (s *Server) osOfRelease(rel string) string {
	for _, b := range s.bootRes {
		if o, r := imageOS(b); r == rel {
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

// releaseChoices are the os/release values of every boot resource,
// sorted.
func (s *Server) releaseChoices() []string {
	var out []string
	for _, b := range s.bootRes {
		if o, r := imageOS(b); !contains(out, o+"/"+r) {
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
