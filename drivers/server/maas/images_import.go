package maas

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// importRetry is how soon an import in progress is looked at again:
// MAAS fetches whole images from its boot source (minutes).
const importRetry = 10 * time.Second

type mBootSource struct {
	ID  int    `json:"id"`
	URL string `json:"url"`
}

type mSelection struct {
	ID      int      `json:"id"`
	OS      string   `json:"os"`
	Release string   `json:"release"`
	Arches  []string `json:"arches"`
}

// ImportImage makes MAAS import a standard image (os/release on an
// architecture): Done when a complete Synced resource of it is there;
// else the first boot source's selection is made to cover it (created,
// or the architecture added) and MAAS's import started unless one runs,
// InProgress.
func (d *Driver) ImportImage(ctx context.Context, img drivers.ImageRef) (drivers.Result, error) {
	osName, release, ok := strings.Cut(img.Name, "/")
	if img.Custom() || !ok || osName == "" || release == "" || osName == "custom" {
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "maas: image %q is not a standard image (os/release, e.g. ubuntu/noble): a custom image is uploaded, not imported", img.Name)
	}
	family, _, _ := strings.Cut(imageArch(img), "/")
	done, err := d.standardComplete(ctx, img.Name, family)
	if err != nil {
		return drivers.Result{}, imageErr("image "+img.Name+": read MAAS's synced images", err)
	}
	if done {
		return drivers.Done("maas: image %s for %s is imported", img.Name, family), nil
	}
	if err := d.ensureSelection(ctx, osName, release, family); err != nil {
		return drivers.Result{}, imageErr("image "+img.Name+": select it on the boot source", err)
	}
	var importing bool
	if err := d.c.call(ctx, http.MethodGet, "boot-resources/", "is_importing", nil, &importing); err != nil {
		return drivers.Result{}, imageErr("image "+img.Name+": ask whether MAAS imports", err)
	}
	if !importing {
		if err := d.c.call(ctx, http.MethodPost, "boot-resources/", "import", nil, nil); err != nil {
			return drivers.Result{}, imageErr("image "+img.Name+": start MAAS's import", err)
		}
	}
	return drivers.InProgress(importRetry, "maas: importing %s for %s from the boot source", img.Name, family), nil
}

// standardComplete reports whether a Synced resource of the image on that
// architecture (any subarchitecture: MAAS names the kernel there) has a
// complete version.
func (d *Driver) standardComplete(ctx context.Context, name, family string) (bool, error) {
	res, err := d.listResources(ctx, "synced")
	if err != nil {
		return false, err
	}
	for _, r := range res {
		if r.Name != name || !strings.HasPrefix(r.Architecture, family+"/") {
			continue
		}
		full, err := d.readResource(ctx, r.ID)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return false, err
		}
		if full.view().Complete {
			return true, nil
		}
	}
	return false, nil
}

// ensureSelection makes the first boot source's selections cover
// os/release on the architecture.
func (d *Driver) ensureSelection(ctx context.Context, osName, release, family string) error {
	var sources []mBootSource
	if err := d.c.callLimit(ctx, http.MethodGet, "boot-sources/", "", nil, &sources, maxImagesAnswer); err != nil {
		return err
	}
	if len(sources) == 0 {
		return drivers.Errorf(drivers.Permanent, "MAAS has no boot source to import from: add one (maas ADMIN boot-sources create url=...)")
	}
	src := slices.MinFunc(sources, func(a, b mBootSource) int { return a.ID - b.ID })
	path := fmt.Sprintf("boot-sources/%d/selections/", src.ID)
	var sels []mSelection
	if err := d.c.callLimit(ctx, http.MethodGet, path, "", nil, &sels, maxImagesAnswer); err != nil {
		return err
	}
	for _, s := range sels {
		if s.OS != osName || s.Release != release {
			continue
		}
		if slices.Contains(s.Arches, family) || slices.Contains(s.Arches, "*") {
			return nil
		}
		arches := append(slices.Clone(s.Arches), family)
		return d.c.call(ctx, http.MethodPut, fmt.Sprintf("%s%d/", path, s.ID), "", url.Values{"arches": arches}, nil)
	}
	params := url.Values{"os": {osName}, "release": {release}, "arches": {family}, "subarches": {"*"}, "labels": {"*"}}
	return d.c.call(ctx, http.MethodPost, path, "", params, nil)
}
