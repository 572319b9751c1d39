package client

import (
	"context"
	"net/http"
	"net/url"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// Images lists the current design's images per Site (site "": all).
func (c *Client) Images(ctx context.Context, site string) (apitypes.Images, error) {
	var out apitypes.Images
	var q url.Values
	if site != "" {
		q = url.Values{"site": {site}}
	}
	return out, c.get(ctx, v1+"/images", q, &out)
}

// Image is one Image document of the current design, per Site.
func (c *Client) Image(ctx context.Context, name string) (apitypes.Images, error) {
	var out apitypes.Images
	return out, c.get(ctx, v1+"/images/"+seg(name), nil, &out)
}

// SyncImages starts a sync_images task (site, image "": all).
func (c *Client) SyncImages(ctx context.Context, req apitypes.ImageSyncRequest) (apitypes.Task, error) {
	var out apitypes.Task
	return out, c.sendJSON(ctx, http.MethodPost, v1+"/images/sync", req, &out)
}
