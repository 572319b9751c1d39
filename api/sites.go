package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/siteregistry"
	"github.com/slipway-dev/slipway/siteregistry/probe"
)

// Sites are the site records (package siteregistry), admins only.
type Sites interface {
	Create(ctx context.Context, c siteregistry.Create) (siteregistry.Record, error)
	List(ctx context.Context) ([]siteregistry.Record, error)
	Get(ctx context.Context, id string) (siteregistry.Record, error)
	Update(ctx context.Context, id string, p siteregistry.Patch) (siteregistry.Record, error)
	Disable(ctx context.Context, id string) (siteregistry.Record, error)
	SetCredentials(ctx context.Context, id, apiKey string) (siteregistry.Record, error)
}

// SiteProber checks a site's provisioner with its stored credentials.
type SiteProber interface {
	ProbeSite(ctx context.Context, id string) (probe.Result, error)
}

var errNoSites = problem(http.StatusNotImplemented, "this server keeps no site records")

func (s *Server) siteRoutes() []route {
	admin := auth.RoleAdmin
	base := v1 + "/admin/maas-sites"
	bad := []int{http.StatusConflict, http.StatusNotImplemented}
	return []route{
		{Method: "POST", Path: base, Role: admin, Mutating: true, Request: apitypes.MAASSiteRequest{}, OK: []int{http.StatusCreated},
			Response: apitypes.Record{}, Problems: bad, Summary: "create a site: its name (the design's Site binds to it), MAAS URL and API key (write-only), policy", handler: s.createSite},
		{Method: "GET", Path: base, Role: admin, Response: []apitypes.Record{}, Problems: []int{http.StatusNotImplemented},
			Summary: "the sites (never their keys)", handler: s.listSites},
		{Method: "GET", Path: base + "/:id", Role: admin, Response: apitypes.Record{}, Problems: []int{http.StatusNotImplemented},
			Summary: "a site", handler: s.getSite},
		{Method: "PATCH", Path: base + "/:id", Role: admin, Mutating: true, Request: apitypes.MAASSitePatch{}, Response: apitypes.Record{}, Problems: bad,
			Summary: "change a site's name, URL, status (enabled, disabled) or policy", handler: s.patchSite},
		{Method: "DELETE", Path: base + "/:id", Role: admin, Mutating: true, Response: apitypes.Record{}, Problems: []int{http.StatusNotImplemented},
			Summary: "disable a site (the record and its key stay; the engine drives none of its machines)", handler: s.disableSite},
		{Method: "POST", Path: base + "/:id/credentials", Role: admin, Mutating: true, Request: apitypes.MAASSiteCredentials{}, Response: apitypes.Record{},
			Problems: []int{http.StatusNotImplemented}, Summary: "write or rotate a site's API key (write-only)", handler: s.siteCredentials},
		{Method: "POST", Path: base + "/:id/probe", Role: admin, Mutating: true, Response: apitypes.MAASSiteProbe{}, Problems: []int{http.StatusNotImplemented},
			Summary: "check the site's MAAS with its stored key: reachable, authenticated, version, capabilities, boot images", handler: s.probeSite},
	}
}

func (s *Server) createSite(c echo.Context) error {
	if s.cfg.Sites == nil {
		return errNoSites
	}
	auditWhat(c, AuditWhat{Action: "site.create", Targets: []string{"maas-sites"}}) // until the body names the site
	var b apitypes.MAASSiteRequest
	if err := bindStrict(c, &b); err != nil {
		return err
	}
	auditWhat(c, AuditWhat{Action: "site.create", Targets: []string{b.Name}}) // never the key
	rec, err := s.cfg.Sites.Create(c.Request().Context(), siteregistry.Create{Name: b.Name, Kind: b.Kind, URL: b.URL, APIKey: b.APIKey, Policy: b.Policy.ToRegistry()})
	if err != nil {
		return siteErr(err)
	}
	auditWhat(c, AuditWhat{Action: "site.create", Targets: []string{rec.ID, rec.Name}})
	return c.JSON(http.StatusCreated, apitypes.FromRecord(rec))
}

func (s *Server) listSites(c echo.Context) error {
	if s.cfg.Sites == nil {
		return errNoSites
	}
	all, err := s.cfg.Sites.List(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apitypes.Convert(all, apitypes.FromRecord))
}

func (s *Server) getSite(c echo.Context) error {
	if s.cfg.Sites == nil {
		return errNoSites
	}
	rec, err := s.cfg.Sites.Get(c.Request().Context(), c.Param("id"))
	if err != nil {
		return siteErr(err)
	}
	return c.JSON(http.StatusOK, apitypes.FromRecord(rec))
}

func (s *Server) patchSite(c echo.Context) error {
	if s.cfg.Sites == nil {
		return errNoSites
	}
	auditWhat(c, AuditWhat{Action: "site.update", Targets: []string{c.Param("id")}})
	var b apitypes.MAASSitePatch
	if err := bindStrict(c, &b); err != nil {
		return err
	}
	rec, err := s.cfg.Sites.Update(c.Request().Context(), c.Param("id"), siteregistry.Patch{Name: b.Name, URL: b.URL, Status: b.Status, Policy: registryPolicy(b.Policy)})
	if err != nil {
		return siteErr(err)
	}
	return c.JSON(http.StatusOK, apitypes.FromRecord(rec))
}

func (s *Server) disableSite(c echo.Context) error {
	if s.cfg.Sites == nil {
		return errNoSites
	}
	auditWhat(c, AuditWhat{Action: "site.disable", Targets: []string{c.Param("id")}})
	rec, err := s.cfg.Sites.Disable(c.Request().Context(), c.Param("id"))
	if err != nil {
		return siteErr(err)
	}
	return c.JSON(http.StatusOK, apitypes.FromRecord(rec))
}

func (s *Server) siteCredentials(c echo.Context) error {
	if s.cfg.Sites == nil {
		return errNoSites
	}
	auditWhat(c, AuditWhat{Action: "site.credentials", Targets: []string{c.Param("id")}}) // never the key
	var b apitypes.MAASSiteCredentials
	if err := bindStrict(c, &b); err != nil {
		return err
	}
	rec, err := s.cfg.Sites.SetCredentials(c.Request().Context(), c.Param("id"), b.APIKey)
	if err != nil {
		return siteErr(err)
	}
	return c.JSON(http.StatusOK, apitypes.FromRecord(rec))
}

func (s *Server) probeSite(c echo.Context) error {
	if s.cfg.Sites == nil || s.cfg.SiteProber == nil {
		return errNoSites
	}
	auditWhat(c, AuditWhat{Action: "site.probe", Targets: []string{c.Param("id")}})
	p, err := s.cfg.SiteProber.ProbeSite(c.Request().Context(), c.Param("id"))
	if err != nil {
		return siteErr(err)
	}
	return c.JSON(http.StatusOK, wireProbe(p))
}

// wireProbe is a probe's result as the API answers it.
func wireProbe(r probe.Result) apitypes.MAASSiteProbe {
	out := apitypes.MAASSiteProbe{Site: r.Site, Name: r.Name, URL: r.URL, Checked: r.Checked, Info: apitypes.FromSiteInfo(r.Info), Error: r.Error}
	if r.Scripts != nil {
		out.Scripts = make([]apitypes.ScriptCheck, 0, len(r.Scripts))
	}
	for _, c := range r.Scripts {
		out.Scripts = append(out.Scripts, apitypes.ScriptCheck{Name: c.Name, Profiles: c.Profiles, Present: c.Present, Matches: apitypes.Convert(c.Matches, apitypes.FromScript)})
	}
	return out
}

// registryPolicy is a patch's policy for the registry (nil: unchanged).
func registryPolicy(p *apitypes.Policy) *siteregistry.Policy {
	if p == nil {
		return nil
	}
	rp := p.ToRegistry()
	return &rp
}

// siteErr maps the site registry's errors to statuses.
func siteErr(err error) error {
	switch {
	case errors.Is(err, siteregistry.ErrNotFound):
		return problem(http.StatusNotFound, err.Error())
	case errors.Is(err, siteregistry.ErrConflict):
		return problem(http.StatusConflict, err.Error())
	case errors.Is(err, siteregistry.ErrInvalid):
		return problem(http.StatusBadRequest, err.Error())
	}
	return err
}
