package maas

import (
	"context"
	"net/http"
	"sort"

	"github.com/slipway-dev/slipway/drivers"
)

// ProbeSite asks the region what it is (version/, which MAAS answers
// without authentication), whether the API key works (users/?op=whoami),
// which boot images it has synced (boot-resources/) and whether a rack
// controller is registered (rackcontrollers/): four GETs.
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
	var res []struct {
		Name         string `json:"name"`
		Type         string `json:"type"`
		Architecture string `json:"architecture"`
	}
	if err := d.c.call(ctx, http.MethodGet, "boot-resources/", "", nil, &res); err != nil {
		return info, err
	}
	seen := map[string]bool{}
	for _, r := range res {
		if r.Name != "" && !seen[r.Name] {
			seen[r.Name] = true
			info.BootImages = append(info.BootImages, r.Name)
		}
	}
	sort.Strings(info.BootImages)
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
