package server

import (
	"context"
	"errors"

	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/siteregistry"
)

// siteProfiles gives the engine the site records' profiles.
type siteProfiles struct{ reg *siteregistry.Registry }

func (s siteProfiles) SiteProfile(ctx context.Context, site, name string) (orchestrator.SiteProfile, bool, error) {
	p, ok, err := s.reg.ProfileNamed(ctx, site, name)
	if err != nil || !ok {
		return orchestrator.SiteProfile{}, ok, err
	}
	return orchestrator.SiteProfile{Name: p.Name, Series: p.Series, Kernel: p.Kernel, Erase: p.Erase, RoCE: p.RoCE,
		CommissioningScripts: p.CommissioningScripts, TestingScripts: p.TestingScripts}, true, nil
}

// RoCEAddresses are the node's RoCE assignments in its site's record.
func (s siteProfiles) RoCEAddresses(ctx context.Context, site, hostname string) ([]driverspec.RoCEAddress, error) {
	rec, err := s.reg.ByName(ctx, site)
	if errors.Is(err, siteregistry.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	as, err := s.reg.RoCE(ctx, rec.ID, hostname)
	if err != nil {
		return nil, err
	}
	out := make([]driverspec.RoCEAddress, len(as))
	for i, a := range as {
		out[i] = driverspec.RoCEAddress{Interface: a.Interface, CIDR: a.IPv4CIDR}
	}
	return out, nil
}
