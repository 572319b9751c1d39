package client

import (
	"context"
	"net/url"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// Fabric is the current design's fabric: switches, cabled ports, what
// the switches report and the LLDP findings; of the given nodes only,
// when any.
func (c *Client) Fabric(ctx context.Context, nodes ...string) (apitypes.Fabric, error) {
	var out apitypes.Fabric
	q := url.Values{}
	for _, n := range nodes {
		q.Add("node", n)
	}
	return out, c.get(ctx, v1+"/fabric", q, &out)
}
