package client

import (
	"context"
	"net/http"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// AcceptHardware accepts a node's machine as its last as-built check
// found it: the next check of the same inventory passes (retry the
// task), one of any other fails.
func (c *Client) AcceptHardware(ctx context.Context, name string) (apitypes.AsBuiltRecord, error) {
	var out apitypes.AsBuiltRecord
	return out, c.sendJSON(ctx, http.MethodPost, v1+"/nodes/"+seg(name)+"/as-built/accept", nil, &out)
}

// AsBuilt is a node's last as-built check (404 when it had none).
func (c *Client) AsBuilt(ctx context.Context, name string) (apitypes.AsBuiltRecord, error) {
	var out apitypes.AsBuiltRecord
	return out, c.get(ctx, v1+"/nodes/"+seg(name)+"/as-built", nil, &out)
}
