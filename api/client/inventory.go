package client

import (
	"context"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// Inventory is what commissioning found on the node's machine (GET
// /nodes/{name}/inventory); a 404 (IsStatus) when it was not commissioned
// yet.
func (c *Client) Inventory(ctx context.Context, name string) (apitypes.NodeInventory, error) {
	var out apitypes.NodeInventory
	return out, c.get(ctx, v1+"/nodes/"+seg(name)+"/inventory", nil, &out)
}
