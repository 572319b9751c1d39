package client

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// FabricQuery narrows and pages GET /fabric.
type FabricQuery struct {
	Nodes    []string // only these nodes' ports
	Switches []string // only these switches' ports
	After    string   // a page's Next
	Limit    int      // ports in a page (0: the server's default)
}

// Fabric is one page of the current design's fabric: switches, cabled
// ports, what the switches report and the LLDP findings.
func (c *Client) Fabric(ctx context.Context, q FabricQuery) (apitypes.Fabric, error) {
	var out apitypes.Fabric
	v := url.Values{}
	for _, n := range q.Nodes {
		v.Add("node", n)
	}
	for _, s := range q.Switches {
		v.Add("switch", s)
	}
	if q.After != "" {
		v.Set("after", q.After)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return out, c.get(ctx, v1+"/fabric", v, &out)
}

// maxFabricPages bounds the pages FabricPages follows (10,000 pages of
// the default 1,000 ports).
const maxFabricPages = 10000

// FabricPages asks for every page of the fabric from q.After on, giving
// each to page as it comes; it stops at page's error.
func (c *Client) FabricPages(ctx context.Context, q FabricQuery, page func(apitypes.Fabric) error) error {
	for range maxFabricPages {
		f, err := c.Fabric(ctx, q)
		if err != nil {
			return err
		}
		if err := page(f); err != nil {
			return err
		}
		if f.Next == "" {
			return nil
		}
		if f.Next == q.After {
			return fmt.Errorf("GET /fabric: the page after %q named itself as next", q.After)
		}
		q.After = f.Next
	}
	return fmt.Errorf("GET /fabric: more than %d pages", maxFabricPages)
}
