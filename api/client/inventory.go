package client

import (
	"context"
	"net/http"
	"slices"

	"golang.org/x/sync/errgroup"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// Inventory is what commissioning found on the node's machine (GET
// /nodes/{name}/inventory); a 404 (IsStatus) when it was not commissioned
// yet.
func (c *Client) Inventory(ctx context.Context, name string) (apitypes.NodeInventory, error) {
	var out apitypes.NodeInventory
	return out, c.get(ctx, v1+"/nodes/"+seg(name)+"/inventory", nil, &out)
}

// InventoryRead is one node's answer to Inventories. Commissioned is
// false when the node has no inventory yet; Inventory then holds only the
// node's name and its hardware profile in the current design ("" when
// that cannot be read).
type InventoryRead struct {
	Inventory    apitypes.NodeInventory
	Commissioned bool
}

// inventoryReaders bounds the requests Inventories has in flight.
const inventoryReaders = 8

// Inventories reads the inventories of the named nodes, a few requests at
// a time, and answers them by node name. A node not commissioned yet is
// not an error; any other failed request is, and ends the reading.
func (c *Client) Inventories(ctx context.Context, names []string) ([]InventoryRead, error) {
	names = slices.Sorted(slices.Values(names))
	res := make([]InventoryRead, len(names))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inventoryReaders)
	for i, n := range names {
		g.Go(func() error {
			ni, err := c.Inventory(gctx, n)
			switch {
			case err == nil:
				res[i] = InventoryRead{Inventory: ni, Commissioned: true}
			case IsStatus(err, http.StatusNotFound):
				res[i] = InventoryRead{Inventory: apitypes.NodeInventory{Node: n, HardwareProfile: c.hardwareProfile(gctx, n)}}
			default:
				return err
			}
			return nil
		})
	}
	return res, g.Wait()
}

// hardwareProfile is the node's hardware profile in the current design,
// "" when it cannot be read.
func (c *Client) hardwareProfile(ctx context.Context, node string) string {
	n, err := c.DesignNode(ctx, "current", node)
	if err != nil {
		return ""
	}
	return n.Spec.HardwareProfile
}
