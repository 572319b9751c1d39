package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/siteregistry"
)

// Sites lists the site records (admin).
func (c *Client) Sites(ctx context.Context) ([]apitypes.Record, error) {
	var out []apitypes.Record
	return out, c.get(ctx, v1+"/admin/maas-sites", nil, &out)
}

// SiteNamed finds a site record by ID or name.
func (c *Client) SiteNamed(ctx context.Context, ref string) (apitypes.Record, error) {
	all, err := c.Sites(ctx)
	if err != nil {
		return apitypes.Record{}, err
	}
	for _, s := range all {
		if s.ID == ref || s.Name == ref {
			return s, nil
		}
	}
	return apitypes.Record{}, fmt.Errorf("no site record has the ID or name %q (GET /api/v1/admin/maas-sites lists them)", ref)
}

// UpsertRoCE stores RoCE assignments in a site (bulk upsert; a refusal
// is a *ProblemError with status 422 whose detail lists every finding).
func (c *Client) UpsertRoCE(ctx context.Context, siteID string, items []siteregistry.RoCEItem) (apitypes.RoCEAssignments, error) {
	var out apitypes.RoCEAssignments
	err := c.sendJSON(ctx, http.MethodPost, v1+"/admin/maas-sites/"+seg(siteID)+"/roce-assignments", apitypes.RoCEUpsert{Items: apitypes.Convert(items, apitypes.FromRoCEItem)}, &out)
	return out, err
}

// RoCE lists a site's RoCE assignments (of hostname, when given).
func (c *Client) RoCE(ctx context.Context, siteID, hostname string) (apitypes.RoCEAssignments, error) {
	var out apitypes.RoCEAssignments
	var q url.Values
	if hostname != "" {
		q = url.Values{"hostname": {hostname}}
	}
	return out, c.get(ctx, v1+"/admin/maas-sites/"+seg(siteID)+"/roce-assignments", q, &out)
}
