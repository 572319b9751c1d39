package orchestrator

import (
	"context"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
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
	// RoCE: the node's RoCE assignments are configured at deploy.
	RoCE bool
	// CommissioningScripts and TestingScripts (names or tags) are what
	// the node's commissioning runs ("none" tests: none).
	CommissioningScripts, TestingScripts []string
}

// commissionScripts are the profile's choice of scripts (nil: none).
func (p SiteProfile) commissionScripts() *drivers.CommissionScripts {
	if len(p.CommissioningScripts) == 0 && len(p.TestingScripts) == 0 {
		return nil
	}
	return &drivers.CommissionScripts{Commissioning: p.CommissioningScripts, Testing: p.TestingScripts}
}

// RoCEAssignments answers the RoCE addresses of a site's node.
type RoCEAssignments interface {
	RoCEAddresses(ctx context.Context, site, hostname string) ([]driverspec.RoCEAddress, error)
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
	if !p.RoCE || e.cfg.RoCE == nil {
		return nil
	}
	addrs, err := e.cfg.RoCE.RoCEAddresses(ctx, d.SiteNameOf(n), n.Metadata.Name)
	if err != nil {
		return drivers.Errorf(drivers.Transient, "node %s: reading its RoCE assignments: %v", n.Metadata.Name, err)
	}
	if err := driverspec.AddRoCE(dn, n.Spec.Hardware, addrs); err != nil {
		return drivers.Errorf(drivers.Permanent, "node %s (site profile %s enables RoCE): %v; fix the assignment (send it again: POST /api/v1/admin/maas-sites/{id}/roce-assignments, or `orchestrator roce import`), then retry",
			n.Metadata.Name, p.Name, err)
	}
	return nil
}

// NodeRoCE answers the node's RoCE addresses when its site profile
// enables RoCE (none otherwise): what the introspection API adds to the
// node's network-config, as the engine adds them at deploy.
func NodeRoCE(ctx context.Context, profiles SiteProfiles, roce RoCEAssignments, d *design.Design, n *design.Node) ([]driverspec.RoCEAddress, error) {
	if profiles == nil || roce == nil || n == nil {
		return nil, nil
	}
	p, ok, err := profiles.SiteProfile(ctx, d.SiteNameOf(n), n.Spec.SiteProfile)
	if err != nil || !ok || !p.RoCE {
		return nil, err
	}
	return roce.RoCEAddresses(ctx, d.SiteNameOf(n), n.Metadata.Name)
}
