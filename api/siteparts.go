package api

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"slices"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/siteregistry"
)

// A site's profiles and RoCE assignments (package siteregistry), admins only.

// SiteParts are the registry's profile and RoCE operations.
type SiteParts interface {
	CreateProfile(ctx context.Context, site string, p siteregistry.ProfileSpec) (siteregistry.Profile, error)
	Profiles(ctx context.Context, site string) ([]siteregistry.Profile, error)
	Profile(ctx context.Context, site, pid string) (siteregistry.Profile, error)
	UpdateProfile(ctx context.Context, site, pid string, p siteregistry.ProfileSpec) (siteregistry.Profile, error)
	DeleteProfile(ctx context.Context, site, pid string) error
	UpsertRoCE(ctx context.Context, site string, items []siteregistry.RoCEItem, d siteregistry.RoCEDesign) ([]siteregistry.RoCEAssignment, error)
	RoCE(ctx context.Context, site, hostname string) ([]siteregistry.RoCEAssignment, error)
	DeleteRoCE(ctx context.Context, site, aid string) error
}

func (s *Server) sitePartRoutes() []route {
	admin := auth.RoleAdmin
	base := v1 + "/admin/maas-sites/:id"
	none := []int{http.StatusNotImplemented}
	return []route{
		{Method: "GET", Path: base + "/profiles", Role: admin, Response: []apitypes.Profile{}, Problems: none,
			Summary: "the site's profiles (named policy bundles)", handler: s.listProfiles},
		{Method: "POST", Path: base + "/profiles", Role: admin, Mutating: true, Request: apitypes.ProfileSpec{}, OK: []int{http.StatusCreated},
			Response: apitypes.Profile{}, Problems: []int{http.StatusConflict, http.StatusNotImplemented}, Summary: "create a profile", handler: s.createProfile},
		{Method: "GET", Path: base + "/profiles/:profile_id", Role: admin, Response: apitypes.Profile{}, Problems: none,
			Summary: "a profile", handler: s.getProfile},
		{Method: "PATCH", Path: base + "/profiles/:profile_id", Role: admin, Mutating: true, Request: apitypes.ProfileSpec{}, Response: apitypes.Profile{},
			Problems: []int{http.StatusConflict, http.StatusNotImplemented}, Summary: "replace what a profile says", handler: s.patchProfile},
		{Method: "DELETE", Path: base + "/profiles/:profile_id", Role: admin, Mutating: true, OK: []int{http.StatusNoContent},
			Problems: []int{http.StatusConflict, http.StatusNotImplemented}, Summary: "delete a profile (not the site's default)", handler: s.deleteProfile},
		{Method: "GET", Path: base + "/roce-assignments", Role: admin, Response: apitypes.RoCEAssignments{}, Problems: none,
			Query: []param{{Name: "hostname", Doc: "only this node's"}}, Summary: "the site's RoCE assignments", handler: s.listRoCE},
		{Method: "POST", Path: base + "/roce-assignments", Role: admin, Mutating: true, Request: apitypes.RoCEUpsert{}, Response: apitypes.RoCEAssignments{},
			Problems: []int{http.StatusConflict, http.StatusUnprocessableEntity, http.StatusNotImplemented},
			Summary:  "bulk upsert of RoCE assignments, checked whole (422 with every finding, nothing stored)", handler: s.upsertRoCE},
		{Method: "DELETE", Path: base + "/roce-assignments/:assignment_id", Role: admin, Mutating: true, OK: []int{http.StatusNoContent},
			Problems: none, Summary: "delete a RoCE assignment", handler: s.deleteRoCE},
	}
}

func (s *Server) listProfiles(c echo.Context) error {
	if s.cfg.SiteParts == nil {
		return errNoSites
	}
	if _, err := s.cfg.Sites.Get(c.Request().Context(), c.Param("id")); err != nil {
		return siteErr(err)
	}
	ps, err := s.cfg.SiteParts.Profiles(c.Request().Context(), c.Param("id"))
	if err != nil {
		return siteErr(err)
	}
	return c.JSON(http.StatusOK, apitypes.Convert(ps, apitypes.FromProfile))
}

func (s *Server) createProfile(c echo.Context) error {
	if s.cfg.SiteParts == nil {
		return errNoSites
	}
	auditWhat(c, AuditWhat{Action: "site.profile.create", Targets: []string{c.Param("id")}})
	var b apitypes.ProfileSpec
	if err := bindStrict(c, &b); err != nil {
		return err
	}
	p, err := s.cfg.SiteParts.CreateProfile(c.Request().Context(), c.Param("id"), b.ToRegistry())
	if err != nil {
		return siteErr(err)
	}
	auditWhat(c, AuditWhat{Action: "site.profile.create", Targets: []string{c.Param("id"), p.ID, p.Name}})
	return c.JSON(http.StatusCreated, apitypes.FromProfile(p))
}

func (s *Server) getProfile(c echo.Context) error {
	if s.cfg.SiteParts == nil {
		return errNoSites
	}
	p, err := s.cfg.SiteParts.Profile(c.Request().Context(), c.Param("id"), c.Param("profile_id"))
	if err != nil {
		return siteErr(err)
	}
	return c.JSON(http.StatusOK, apitypes.FromProfile(p))
}

func (s *Server) patchProfile(c echo.Context) error {
	if s.cfg.SiteParts == nil {
		return errNoSites
	}
	auditWhat(c, AuditWhat{Action: "site.profile.update", Targets: []string{c.Param("id"), c.Param("profile_id")}})
	var b apitypes.ProfileSpec
	if err := bindStrict(c, &b); err != nil {
		return err
	}
	p, err := s.cfg.SiteParts.UpdateProfile(c.Request().Context(), c.Param("id"), c.Param("profile_id"), b.ToRegistry())
	if err != nil {
		return siteErr(err)
	}
	return c.JSON(http.StatusOK, apitypes.FromProfile(p))
}

func (s *Server) deleteProfile(c echo.Context) error {
	if s.cfg.SiteParts == nil {
		return errNoSites
	}
	auditWhat(c, AuditWhat{Action: "site.profile.delete", Targets: []string{c.Param("id"), c.Param("profile_id")}})
	if err := s.cfg.SiteParts.DeleteProfile(c.Request().Context(), c.Param("id"), c.Param("profile_id")); err != nil {
		return siteErr(err)
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) listRoCE(c echo.Context) error {
	if s.cfg.SiteParts == nil {
		return errNoSites
	}
	if _, err := s.cfg.Sites.Get(c.Request().Context(), c.Param("id")); err != nil {
		return siteErr(err)
	}
	as, err := s.cfg.SiteParts.RoCE(c.Request().Context(), c.Param("id"), c.QueryParam("hostname"))
	if err != nil {
		return siteErr(err)
	}
	return c.JSON(http.StatusOK, apitypes.RoCEAssignments{Items: apitypes.Convert(as, apitypes.FromRoCEAssignment)})
}

func (s *Server) upsertRoCE(c echo.Context) error {
	if s.cfg.SiteParts == nil {
		return errNoSites
	}
	ctx := c.Request().Context()
	auditWhat(c, AuditWhat{Action: "site.roce.upsert", Targets: []string{c.Param("id")}})
	var b apitypes.RoCEUpsert
	if err := bindStrict(c, &b); err != nil {
		return err
	}
	d, err := s.currentDesignOrNil(ctx)
	if err != nil {
		return err
	}
	as, err := s.cfg.SiteParts.UpsertRoCE(ctx, c.Param("id"), apitypes.Convert(b.Items, apitypes.RoCEItem.ToRegistry), roceDesign{d})
	var re *siteregistry.RoCEError
	if errors.As(err, &re) {
		return &problemError{status: http.StatusUnprocessableEntity, detail: re.Error(), findings: apitypes.Convert(re.Findings, apitypes.FromRoCEFinding)}
	}
	if err != nil {
		return siteErr(err)
	}
	return c.JSON(http.StatusOK, apitypes.RoCEAssignments{Items: apitypes.Convert(as, apitypes.FromRoCEAssignment)})
}

func (s *Server) deleteRoCE(c echo.Context) error {
	if s.cfg.SiteParts == nil {
		return errNoSites
	}
	auditWhat(c, AuditWhat{Action: "site.roce.delete", Targets: []string{c.Param("id"), c.Param("assignment_id")}})
	if err := s.cfg.SiteParts.DeleteRoCE(c.Request().Context(), c.Param("id"), c.Param("assignment_id")); err != nil {
		return siteErr(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// currentDesignOrNil is the current design; nil when none is stored.
func (s *Server) currentDesignOrNil(ctx context.Context) (*design.Design, error) {
	id, err := s.currentID(ctx)
	if err != nil || id == "" {
		return nil, nil //nolint:nilerr // no design stored: the checks say so per item
	}
	return s.design(ctx, id)
}

// roceDesign answers the RoCE checks from the current design (nil: no
// design, so no node is known).
type roceDesign struct{ d *design.Design }

// Interfaces are the node's interface names and its hardware profile's
// device aliases, when the node belongs to the design's Site named site.
func (r roceDesign) Interfaces(site, hostname string) ([]string, bool) {
	if r.d == nil || r.d.Site == nil || r.d.Site.Metadata.Name != site {
		return nil, false
	}
	n := r.d.Nodes[hostname]
	if n == nil {
		return nil, false
	}
	var names []string
	for name := range n.Spec.Interfaces {
		names = append(names, name)
	}
	if hp := r.d.HardwareProfiles[n.Spec.HardwareProfile]; hp != nil {
		for alias := range hp.Spec.DeviceAliases {
			names = append(names, alias)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), true
}

// Carries checks the address as a deploy of the node adds it
// (driverspec.CheckRoCE, what the engine's deploy spec is built with).
func (r roceDesign) Carries(site, hostname, iface, cidr string) error {
	if r.d == nil || r.d.Site == nil || r.d.Site.Metadata.Name != site || r.d.Nodes[hostname] == nil {
		return nil // Interfaces refused it already
	}
	return driverspec.CheckRoCE(r.d, r.d.Nodes[hostname], []driverspec.RoCEAddress{{Interface: iface, CIDR: cidr}})
}

// Networks are the design's networks' CIDRs.
func (r roceDesign) Networks() map[string]netip.Prefix {
	out := map[string]netip.Prefix{}
	if r.d == nil {
		return out
	}
	for name, nw := range r.d.Networks {
		if p, err := netip.ParsePrefix(nw.Spec.CIDR); err == nil {
			out[name] = p.Masked()
		}
	}
	return out
}
