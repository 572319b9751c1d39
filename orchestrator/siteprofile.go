package orchestrator

import (
	"context"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
)

// SiteProfile is what a site profile (server state: the site records'
// profiles) changes in a node's deployment. Empty fields change nothing.
type SiteProfile struct {
	Name string
	// Series and Kernel replace the design's platform image and kernel
	// (a series other than the design's image drops the design's kernel:
	// the profile's, else MAAS's default for the series, goes with it).
	Series, Kernel string
	// Erase is the erase policy of the node's releases when the design
	// says none for the node.
	Erase string
}

// SiteProfiles answers site profiles by the site's name and the
// profile's; name "" asks for the site's default profile. ok is false
// when there is none.
type SiteProfiles interface {
	SiteProfile(ctx context.Context, site, name string) (p SiteProfile, ok bool, err error)
}

// siteProfile is the node's site profile: the one its host spec names,
// else its site's default; ok false when none applies. A profile the
// node names that its site lacks is a permanent error naming both.
func (e *Engine) siteProfile(ctx context.Context, d *design.Design, n *design.Node) (SiteProfile, bool, error) {
	if e.cfg.SiteProfiles == nil || n == nil {
		return SiteProfile{}, false, nil
	}
	site, name := d.SiteNameOf(n), n.Spec.SiteProfile
	p, ok, err := e.cfg.SiteProfiles.SiteProfile(ctx, site, name)
	if err != nil {
		return SiteProfile{}, false, drivers.Errorf(drivers.Transient, "node %s: reading site %s's profile: %v", n.Metadata.Name, site, err)
	}
	if !ok && name != "" {
		return SiteProfile{}, false, drivers.Errorf(drivers.Permanent,
			"node %s: its host profile names site profile %q, which site %s does not have: create it (POST /api/v1/admin/maas-sites/{id}/profiles) or fix siteProfile in the design, then retry",
			n.Metadata.Name, name, site)
	}
	return p, ok, nil
}

// withSiteProfile applies the node's site profile to what the server
// driver is told.
func (e *Engine) withSiteProfile(ctx context.Context, d *design.Design, n *design.Node, dn *drivers.Node) error {
	p, ok, err := e.siteProfile(ctx, d, n)
	if err != nil || !ok {
		return err
	}
	if p.Series != "" && p.Series != dn.Platform.Image {
		// Another series: the design's kernel was chosen for its image;
		// the profile's kernel, else the series' default, goes with it.
		dn.Platform.Image, dn.Platform.Kernel = p.Series, p.Kernel
	}
	if p.Kernel != "" {
		dn.Platform.Kernel = p.Kernel
	}
	return nil
}
