package api

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/orchestrator"
)

// nodeInventory answers GET /nodes/:name/inventory: read from the
// store's inventory collection (never held in the engine's memory); 404
// naming the node when it was not commissioned yet.
func (s *Server) nodeInventory(c echo.Context) error {
	ctx := c.Request().Context()
	name := c.Param("name")
	inv, ok, err := orchestrator.NodeInventory(ctx, s.cfg.Store, name)
	if err != nil {
		return err
	}
	if !ok {
		return problem(http.StatusNotFound, fmt.Sprintf("node %q has no inventory: not commissioned yet (a prepare_nodes or deploy_nodes task records it when commissioning ends)", name))
	}
	out := apitypes.NodeInventory{Node: name, Inventory: apitypes.FromInventory(inv)}
	if cur, err := s.currentID(ctx); err == nil {
		if d, err := s.design(ctx, cur); err == nil {
			if n := d.Nodes[name]; n != nil {
				out.HardwareProfile = n.Spec.HardwareProfile
			}
		}
	}
	return c.JSON(http.StatusOK, out)
}
