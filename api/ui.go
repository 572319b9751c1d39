package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
)

// dashboardRoutes are what the web dashboard (package ui) asks besides the
// rest of the API: who the token stands for (what the page shows follows
// the role) and where the event log ends (the site view streams from
// there, after loading the nodes).
func (s *Server) dashboardRoutes() []route {
	view := auth.RoleViewer
	return []route{
		{Method: "GET", Path: v1 + "/whoami", Role: view, Response: apitypes.Principal{},
			Summary: "who the token stands for: its ID, name and role (never the token)", handler: s.whoami},
		{Method: "GET", Path: v1 + "/events/last", Role: view, Response: apitypes.EventSeq{},
			Summary: "the sequence number of the last event (a stream started with since= it misses nothing after)", handler: s.lastEvent},
	}
}

func (s *Server) whoami(c echo.Context) error {
	return c.JSON(http.StatusOK, apitypes.Principal(principal(c)))
}

func (s *Server) lastEvent(c echo.Context) error {
	n, err := s.cfg.Engine.LastEvent(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apitypes.EventSeq{Seq: n})
}

// mountUI serves the dashboard at /ui/ (GET and HEAD, no token: the page
// signs in with one and sends it on each API call) and sends / there.
func (s *Server) mountUI(e *echo.Echo) {
	if s.cfg.UI == nil {
		return
	}
	h := echo.WrapHandler(http.StripPrefix("/ui", s.cfg.UI))
	e.GET("/ui/*", h)
	e.HEAD("/ui/*", h)
	e.GET("/ui", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, "/ui/") })
}
