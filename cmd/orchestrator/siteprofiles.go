package main

import (
	"context"

	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/sites"
)

// siteProfiles gives the engine the site records' profiles.
type siteProfiles struct{ reg *sites.Registry }

func (s siteProfiles) SiteProfile(ctx context.Context, site, name string) (orchestrator.SiteProfile, bool, error) {
	p, ok, err := s.reg.ProfileNamed(ctx, site, name)
	if err != nil || !ok {
		return orchestrator.SiteProfile{}, ok, err
	}
	return orchestrator.SiteProfile{Name: p.Name, Series: p.Series, Kernel: p.Kernel, Erase: p.Erase}, true, nil
}
