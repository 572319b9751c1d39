package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/powercreds"
	"github.com/slipway-dev/slipway/siteregistry"
)

var errNoSecrets = problem(http.StatusNotImplemented, "this server has no secret store configured")
var errNoTokens = problem(http.StatusNotImplemented, "this server has no token store configured")

func (s *Server) listSecrets(c echo.Context) error {
	if s.cfg.Secrets == nil {
		return errNoSecrets
	}
	return answerList(c, s.cfg.Secrets.Names)
}

// answerList answers what list returns, an empty JSON array rather than
// null when there is nothing.
func answerList[T any](c echo.Context, list func(context.Context) ([]T, error)) error {
	items, err := list(c.Request().Context())
	if err != nil {
		return err
	}
	if items == nil {
		items = []T{}
	}
	return c.JSON(http.StatusOK, items)
}

func (s *Server) putSecret(c echo.Context) error {
	if s.cfg.Secrets == nil {
		return errNoSecrets
	}
	auditWhat(c, AuditWhat{Action: "secret.put", Targets: []string{c.Param("name")}}) // the name, never the value
	if err := reservedSecret(c.Param("name")); err != nil {
		return err
	}
	var b apitypes.SecretValue
	if err := bindStrict(c, &b); err != nil {
		return err
	}
	if b.Value == "" {
		return problem(http.StatusBadRequest, "value is empty: send {\"value\": \"...\"}")
	}
	if err := s.cfg.Secrets.Put(c.Request().Context(), c.Param("name"), b.Value); err != nil {
		return problem(http.StatusBadRequest, err.Error())
	}
	return c.JSON(http.StatusOK, apitypes.SecretStored{Name: c.Param("name"), Status: "stored"})
}

// errSiteSecret refuses the secret routes a site record's API key.
var errSiteSecret = problem(http.StatusBadRequest, "the name is reserved for a site record's API key: write it with POST /api/v1/admin/maas-sites/{id}/credentials")

// errPowerSecret refuses the secret routes a node's power-credential override.
var errPowerSecret = problem(http.StatusBadRequest, "the name is reserved for a node's power-credential override: write it with PUT /api/v1/admin/nodes/{name}/power-credentials")

// reservedSecret refuses the names the secret routes can't write or delete.
func reservedSecret(name string) error {
	switch name = strings.ToLower(name); {
	case siteregistry.ReservedSecret(name):
		return errSiteSecret
	case powercreds.Reserved(name):
		return errPowerSecret
	}
	return nil
}

func (s *Server) deleteSecret(c echo.Context) error {
	if s.cfg.Secrets == nil {
		return errNoSecrets
	}
	auditWhat(c, AuditWhat{Action: "secret.delete", Targets: []string{c.Param("name")}})
	if err := reservedSecret(c.Param("name")); err != nil {
		return err
	}
	if err := s.cfg.Secrets.Delete(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) createToken(c echo.Context) error {
	if s.cfg.Tokens == nil {
		return errNoTokens
	}
	var b apitypes.TokenRequest
	if err := bindStrict(c, &b); err != nil {
		return err
	}
	role := b.Role
	auditWhat(c, AuditWhat{Action: "token.create", Verb: string(role)})
	if !role.Valid() {
		return problem(http.StatusBadRequest, "role "+string(role)+": use viewer, operator or admin")
	}
	plain, info, err := s.cfg.Tokens.Create(c.Request().Context(), role, b.Name)
	if err != nil {
		return err
	}
	auditWhat(c, AuditWhat{Action: "token.create", Verb: string(role), Targets: []string{info.ID}}) // the ID, never the token
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, apitypes.CreatedToken{TokenInfo: info, Token: plain})
}

func (s *Server) listTokens(c echo.Context) error {
	if s.cfg.Tokens == nil {
		return errNoTokens
	}
	return answerList(c, s.cfg.Tokens.List)
}

func (s *Server) revokeToken(c echo.Context) error {
	if s.cfg.Tokens == nil {
		return errNoTokens
	}
	id := strings.ToLower(strings.TrimSpace(c.Param("id")))
	if !auth.ValidID(id) {
		// Neither audited nor repeated: it may be a token pasted by mistake.
		auditWhat(c, AuditWhat{Action: "token.revoke"})
		return problem(http.StatusNotFound, fmt.Sprintf("not a token ID: give the %d-character hex ID that GET /tokens lists", auth.IDLen))
	}
	auditWhat(c, AuditWhat{Action: "token.revoke", Targets: []string{id}})
	if err := s.cfg.Tokens.Revoke(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
