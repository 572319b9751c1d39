package client

import (
	"context"
	"net/http"
	"net/url"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/onboarding"
)

// Onboard onboards the request's rows (POST /admin/onboardings/batch):
// they join the design's API-managed layer and are deployed.
func (c *Client) Onboard(ctx context.Context, req onboarding.Request) (apitypes.Onboarding, error) {
	var out apitypes.Onboarding
	return out, c.sendJSON(ctx, http.MethodPost, v1+"/admin/onboardings/batch", apitypes.FromOnboardingBatch(req), &out)
}

// Onboardings lists onboardings, newest first (site and hostname filter
// when given).
func (c *Client) Onboardings(ctx context.Context, siteID, hostname string) (apitypes.Page[apitypes.Onboarding], error) {
	var out apitypes.Page[apitypes.Onboarding]
	q := url.Values{"limit": {"10000"}}
	if siteID != "" {
		q.Set("site_id", siteID)
	}
	if hostname != "" {
		q.Set("hostname", hostname)
	}
	return out, c.get(ctx, v1+"/admin/onboardings", q, &out)
}

// Onboarding reads one onboarding.
func (c *Client) Onboarding(ctx context.Context, id string) (apitypes.Onboarding, error) {
	var out apitypes.Onboarding
	return out, c.get(ctx, v1+"/admin/onboardings/"+seg(id), nil, &out)
}

// OnboardingVerb applies a workflow verb (retry, resume, rerun,
// restart-clean, cancel, adopt, mark-manual-intervention).
func (c *Client) OnboardingVerb(ctx context.Context, id, verb string) (apitypes.Onboarding, error) {
	var out apitypes.Onboarding
	return out, c.sendJSON(ctx, http.MethodPost, v1+"/admin/onboardings/"+seg(id)+"/"+seg(verb), nil, &out)
}

// DesignLayer is the design's API-managed layer as YAML.
func (c *Client) DesignLayer(ctx context.Context) ([]byte, error) {
	return c.doRaw(ctx, request{method: http.MethodGet, path: v1 + "/designs/layer", header: http.Header{"Accept": {"application/yaml"}}}, true)
}
