package maas

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/drivers"
)

// ProbeSite asks the region what it is (version/, which MAAS answers
// without authentication), whether the API key works (users/?op=whoami),
// which boot images and kernels it has synced (boot-resources/), which
// image a node gets that names none or names a series without its
// operating system (maas/?op=get_config of default_osystem and
// default_distro_series) and whether a rack controller is registered
// (rackcontrollers/): six GETs.
//
// A refused API key answers the info (Reachable, not Authenticated) with
// a Permanent error; an unreachable region a Transient error.
func (d *Driver) ProbeSite(ctx context.Context) (drivers.SiteInfo, error) {
	var info drivers.SiteInfo
	var ver struct {
		Version      string   `json:"version"`
		Subversion   string   `json:"subversion"`
		Capabilities []string `json:"capabilities"`
	}
	if err := d.c.call(ctx, http.MethodGet, "version/", "", nil, &ver); err != nil {
		return info, err
	}
	info.Reachable = true
	info.Version = ver.Version
	if ver.Subversion != "" {
		info.Version += " (" + ver.Subversion + ")"
	}
	info.Capabilities = ver.Capabilities
	var who struct {
		Username string `json:"username"`
	}
	if err := d.c.call(ctx, http.MethodGet, "users/", "whoami", nil, &who); err != nil {
		return info, err
	}
	info.Authenticated = true
	if err := d.probeImages(ctx, &info); err != nil {
		return info, err
	}
	if err := d.probeDHCP(ctx, &info); err != nil {
		return info, err
	}
	if err := d.probeScripts(ctx, &info); err != nil {
		return info, err
	}
	var racks []struct {
		SystemID string `json:"system_id"`
	}
	if err := d.c.call(ctx, http.MethodGet, "rackcontrollers/", "", nil, &racks); err != nil {
		return info, err
	}
	if len(racks) == 0 {
		// Reachable and authenticated, but nothing can PXE-boot a machine.
		return info, drivers.Errorf(drivers.NeedsIntervention,
			"maas: the region has no rack controller: machines cannot PXE-boot until one is registered")
	}
	if len(info.BootImages) == 0 {
		return info, drivers.Errorf(drivers.NeedsIntervention,
			"maas: the region has no synced boot images: import images (boot-resources) before deploying")
	}
	return info, nil
}

// probeDHCP lists the subnets whose VLAN has DHCP on, or is relayed
// (subnets/: each subnet carries its VLAN's dhcp_on and relay_vlan).
func (d *Driver) probeDHCP(ctx context.Context, info *drivers.SiteInfo) error {
	var subnets []struct {
		CIDR string `json:"cidr"`
		VLAN struct {
			DHCPOn    bool            `json:"dhcp_on"`
			RelayVLAN json.RawMessage `json:"relay_vlan"`
		} `json:"vlan"`
	}
	if err := d.c.call(ctx, http.MethodGet, "subnets/", "", nil, &subnets); err != nil {
		return err
	}
	info.DHCPSubnets = []string{}
	for _, s := range subnets {
		relayed := len(s.VLAN.RelayVLAN) > 0 && string(s.VLAN.RelayVLAN) != "null"
		if s.VLAN.DHCPOn || relayed {
			info.DHCPSubnets = append(info.DHCPSubnets, s.CIDR)
		}
	}
	slices.Sort(info.DHCPSubnets)
	return nil
}

// scriptTypes are MAAS's script types by number (metadataserver/enum.py).
var scriptTypes = map[int]string{0: "commissioning", 2: "testing", 3: "release", 4: "deployment"}

// probeScripts lists MAAS's scripts, each with its current version (the
// ID of its newest history entry); a MAAS without scripts/ leaves them
// unknown (nil).
func (d *Driver) probeScripts(ctx context.Context, info *drivers.SiteInfo) error {
	var ss []struct {
		Name    string   `json:"name"`
		Type    int      `json:"type"`
		Tags    []string `json:"tags"`
		History []struct {
			ID      int    `json:"id"`
			Created string `json:"created"`
		} `json:"history"`
	}
	if err := d.c.call(ctx, http.MethodGet, "scripts/", "", nil, &ss); err != nil {
		if isNotFound(err) {
			return nil
		}
		return err
	}
	info.Scripts = []drivers.Script{}
	for _, sc := range ss {
		out := drivers.Script{Name: sc.Name, Type: cmp.Or(scriptTypes[sc.Type], strconv.Itoa(sc.Type)), Tags: sc.Tags}
		newest := -1
		for _, h := range sc.History {
			if h.ID > newest {
				newest, out.Version, out.Updated = h.ID, strconv.Itoa(h.ID), h.Created
			}
		}
		info.Scripts = append(info.Scripts, out)
	}
	slices.SortFunc(info.Scripts, func(a, b drivers.Script) int { return cmp.Compare(a.Name, b.Name) })
	return nil
}

// bootResource is an entry of boot-resources/: one per image and
// architecture, e.g. ubuntu/jammy on amd64/ga-22.04 and on
// amd64/hwe-22.04 (the part after the slash names the kernel).
type bootResource struct {
	Name         string `json:"name"`
	Type         string `json:"type"`
	Architecture string `json:"architecture"`
}

// probeImages fills the boot images, their kernels and the defaults.
func (d *Driver) probeImages(ctx context.Context, info *drivers.SiteInfo) error {
	var res []bootResource
	if err := d.c.call(ctx, http.MethodGet, "boot-resources/", "", nil, &res); err != nil {
		return err
	}
	info.BootImages, info.Kernels = imagesAndKernels(res)
	var osys, series string
	for _, c := range []struct {
		name string
		dst  *string
	}{{"default_osystem", &osys}, {"default_distro_series", &series}} {
		if err := d.c.call(ctx, http.MethodGet, "maas/", "get_config", url.Values{"name": {c.name}}, c.dst); err != nil {
			return err
		}
	}
	info.DefaultOS = osys
	if osys != "" && series != "" {
		info.DefaultImage = osys + "/" + series
	}
	return nil
}

// imagesAndKernels lists the image names, sorted, and by image the
// kernels (ga-* and hwe-* subarchitectures: what MAAS accepts as a
// deploy's hwe_kernel), sorted; an image with none is left out of the
// map (a custom image: MAAS picks its kernel itself).
func imagesAndKernels(res []bootResource) ([]string, map[string][]string) {
	var images []string
	kernels := map[string][]string{}
	seen := map[string]bool{}
	for _, r := range res {
		if r.Name == "" {
			continue
		}
		name := provisionerName(r.Type, r.Name) // an upload's bare name is custom/<name>
		if !seen[name] {
			seen[name] = true
			images = append(images, name)
		}
		_, k, _ := strings.Cut(r.Architecture, "/")
		if (strings.HasPrefix(k, "ga-") || strings.HasPrefix(k, "hwe-")) && !slices.Contains(kernels[r.Name], k) {
			kernels[r.Name] = append(kernels[r.Name], k)
		}
	}
	sort.Strings(images)
	for _, ks := range kernels {
		sort.Strings(ks)
	}
	return images, kernels
}
