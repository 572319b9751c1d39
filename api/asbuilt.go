package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// HardwareAcceptor is what the as-built routes need of the engine (the
// orchestrator's Engine is one). An Engine that is not one answers 501.
type HardwareAcceptor interface {
	AsBuilt(ctx context.Context, node string) (record.AsBuiltRecord, error)
	AcceptHardware(ctx context.Context, node, who string) (record.AsBuiltRecord, error)
}

func (s *Server) acceptor() (HardwareAcceptor, error) {
	a, ok := s.cfg.Engine.(HardwareAcceptor)
	if !ok {
		return nil, problem(http.StatusNotImplemented, "this server's engine has no as-built check")
	}
	return a, nil
}

// asBuilt answers a node's last as-built check: the inventory's digest,
// the differences found, the acceptance. 404 when it had none.
func (s *Server) asBuilt(c echo.Context) error {
	a, err := s.acceptor()
	if err != nil {
		return err
	}
	ab, err := a.AsBuilt(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wireAsBuilt(ab))
}

// acceptHardware records that an operator accepts the machine of a node
// as it was found by its last as-built check (the inventory's digest):
// the next check of that inventory passes, retried with the task's
// retry. 409 when the last check found nothing to accept.
func (s *Server) acceptHardware(c echo.Context) error {
	name := c.Param("name")
	auditWhat(c, AuditWhat{Action: "node.accept-hardware", Verb: "accept-hardware", Targets: []string{name}})
	a, err := s.acceptor()
	if err != nil {
		return err
	}
	ab, err := a.AcceptHardware(c.Request().Context(), name, who(c))
	if err != nil {
		return err
	}
	auditWhat(c, AuditWhat{Action: "node.accept-hardware", Verb: "accept-hardware", Targets: []string{name, "inventory:" + ab.Inventory}})
	return c.JSON(http.StatusOK, wireAsBuilt(ab))
}
