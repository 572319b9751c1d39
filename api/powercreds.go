package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/powercreds"
	"github.com/slipway-dev/slipway/secrets/store"
)

// PowerCredentials keeps the per-node BMC credential overrides (a
// *powercreds.Overrides): written, rotated and deleted, never read back.
type PowerCredentials interface {
	Put(ctx context.Context, node, username, password string) (powercreds.Info, error)
	Info(ctx context.Context, node string) (powercreds.Info, error)
	Delete(ctx context.Context, node string) error
}

var errNoPowerCredentials = problem(http.StatusNotImplemented, "this server has no secret store configured, so it keeps no power-credential overrides")

// powerCredentialRoutes are the per-node power-credential overrides'
// routes (admin only; the mutating ones audited, without the secret).
func (s *Server) powerCredentialRoutes() []route {
	admin := auth.RoleAdmin
	path := v1 + "/admin/nodes/:name/power-credentials"
	none := []int{http.StatusNotImplemented}
	return []route{
		{Method: "GET", Path: path, Role: admin, Response: apitypes.PowerCredentialInfo{}, Problems: none,
			Summary: "whether the node has a power-credential override, its version and when it was last written (never the credentials); 404 when it has none", handler: s.getPowerCredentials},
		{Method: "PUT", Path: path, Role: admin, Mutating: true, Request: apitypes.PowerCredentials{}, Response: apitypes.PowerCredentialInfo{}, Problems: none,
			Summary: "write or rotate the node's BMC credentials override, stored encrypted: its power calls use them instead of the design's from the next call on", handler: s.putPowerCredentials},
		{Method: "DELETE", Path: path, Role: admin, Mutating: true, OK: []int{http.StatusNoContent}, Problems: none,
			Summary: "delete the node's power-credential override: the design's credentials apply again", handler: s.deletePowerCredentials},
	}
}

func (s *Server) getPowerCredentials(c echo.Context) error {
	if s.cfg.PowerCredentials == nil {
		return errNoPowerCredentials
	}
	info, err := s.cfg.PowerCredentials.Info(c.Request().Context(), c.Param("name"))
	if err != nil {
		return powerCredentialsErr(err)
	}
	return c.JSON(http.StatusOK, powerCredentialInfo(info))
}

func (s *Server) putPowerCredentials(c echo.Context) error {
	if s.cfg.PowerCredentials == nil {
		return errNoPowerCredentials
	}
	node := c.Param("name")
	auditWhat(c, AuditWhat{Action: "node.power-credentials.put", Targets: []string{node}}) // the node, never the credentials
	var b apitypes.PowerCredentials
	if err := bindStrict(c, &b); err != nil {
		return err
	}
	info, err := s.cfg.PowerCredentials.Put(c.Request().Context(), node, b.Username, b.Password)
	if err != nil {
		return powerCredentialsErr(err)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, powerCredentialInfo(info))
}

func (s *Server) deletePowerCredentials(c echo.Context) error {
	if s.cfg.PowerCredentials == nil {
		return errNoPowerCredentials
	}
	node := c.Param("name")
	auditWhat(c, AuditWhat{Action: "node.power-credentials.delete", Targets: []string{node}})
	if err := s.cfg.PowerCredentials.Delete(c.Request().Context(), node); err != nil {
		return powerCredentialsErr(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// powerCredentialsErr answers the overrides' errors (none holds a secret).
func powerCredentialsErr(err error) error {
	switch {
	case errors.Is(err, powercreds.ErrInvalid):
		return problem(http.StatusBadRequest, err.Error())
	case errors.Is(err, powercreds.ErrNotFound):
		return problem(http.StatusNotFound, err.Error()+": write one with PUT (body {\"username\", \"password\"})")
	case errors.Is(err, store.ErrNoKey):
		return problem(http.StatusNotImplemented, "this server holds no secret key, so it can't store power-credential overrides: give it a key (its key file or "+store.KeyEnv+") and restart it")
	}
	return err
}

func powerCredentialInfo(i powercreds.Info) apitypes.PowerCredentialInfo {
	return apitypes.PowerCredentialInfo{Node: i.Node, Set: i.Set, Version: i.Version, Rotated: i.Rotated}
}
