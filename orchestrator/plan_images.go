package orchestrator

import (
	"fmt"
	"slices"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// planImages adds to each Site's plan the images the change syncs into
// it: an Image document that is new, whose content or name changed, or
// that a node of the Site deploys now and none did before. They are
// synced when the next deploy starts (or by sync_images), before any
// node deploys them.
func planImages(sites []record.SitePlan, cur, d *design.Design) []record.SitePlan {
	for _, name := range sortedKeys(d.Images) {
		im := d.Images[name]
		var was *design.Image
		var wasSites []string
		if cur != nil {
			was, wasSites = cur.Images[name], cur.ImageSites(name)
		}
		for _, site := range d.ImageSites(name) {
			why := imageChange(im, was, slices.Contains(wasSites, site))
			if why == "" {
				continue
			}
			i := slices.IndexFunc(sites, func(s record.SitePlan) bool { return s.Site == site })
			if i < 0 {
				sites, i = append(sites, record.SitePlan{Site: site}), len(sites)
			}
			sites[i].Changes = append(sites[i].Changes, drivers.PlannedChange{Part: "image", Op: "sync", Object: im.ProvisionerName(),
				Detail: fmt.Sprintf("image %s (%s, %s) %s: synced into the site before its nodes deploy it", name, imageContent(im), im.Arch(), why)})
		}
	}
	return sites
}

// imageChange says why im needs a sync into a Site ("" when it does
// not): was is the current design's document of that name, used whether
// a node of the Site deploys it now.
func imageChange(im, was *design.Image, used bool) string {
	switch {
	case was == nil:
		return "is new"
	case was.ProvisionerName() != im.ProvisionerName() || was.Arch() != im.Arch():
		return "was " + was.ProvisionerName() + " " + was.Arch()
	case imageContent(was) != imageContent(im):
		return "changed content (was " + imageContent(was) + ")"
	case !used:
		return "is deployed in the site from now on"
	}
	return ""
}

// imageContent describes an image's content: a custom one's SHA-256 and
// size, a standard one's release.
func imageContent(im *design.Image) string {
	if c := im.Spec.Custom; c != nil {
		sum := c.Source.SHA256
		if len(sum) > 12 {
			sum = sum[:12]
		}
		return fmt.Sprintf("custom, sha256 %s…, %d bytes", sum, c.Size)
	}
	return "standard " + im.Spec.OS + "/" + im.Spec.Release
}
