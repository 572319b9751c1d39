package client

import (
	"context"
	"fmt"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// SiteProfiles lists a site's profiles (admin).
func (c *Client) SiteProfiles(ctx context.Context, siteID string) ([]apitypes.Profile, error) {
	var out []apitypes.Profile
	return out, c.get(ctx, v1+"/admin/maas-sites/"+seg(siteID)+"/profiles", nil, &out)
}

// SiteProfileNamed finds one of a site's profiles by ID or name.
func (c *Client) SiteProfileNamed(ctx context.Context, siteID, ref string) (apitypes.Profile, error) {
	all, err := c.SiteProfiles(ctx, siteID)
	if err != nil {
		return apitypes.Profile{}, err
	}
	for _, p := range all {
		if p.ID == ref || p.Name == ref {
			return p, nil
		}
	}
	return apitypes.Profile{}, fmt.Errorf("site %s has no profile of the ID or name %q (GET /api/v1/admin/maas-sites/%s/profiles lists them)", siteID, ref, siteID)
}
