package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/httpx"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/statestore"
)

// problemError is an error with its HTTP status and detail.
type problemError struct {
	status   int
	detail   string
	findings any
	// destructive and approve: an apply refused for want of an
	// approval (plan.go).
	destructive []string
	approve     string
}

func (p *problemError) Error() string { return p.detail }

func problem(status int, detail string) error { return &problemError{status: status, detail: detail} }

// unavailableError is an error that says the service can't do it now
// (a replica not leading, a store without its quorum): 503.
type unavailableError interface {
	error
	Unavailable() bool
}

// statusOf maps an error to its HTTP status.
func statusOf(err error) (int, string) {
	var pe *problemError
	var he *echo.HTTPError
	var ua unavailableError
	switch {
	case errors.As(err, &ua) && ua.Unavailable():
		return http.StatusServiceUnavailable, err.Error()
	case errors.As(err, &pe):
		return pe.status, pe.detail
	case errors.As(err, &he):
		msg, _ := he.Message.(string)
		if msg == "" {
			msg = http.StatusText(he.Code)
		}
		return he.Code, msg
	case errors.Is(err, orchestrator.ErrNotFound), errors.Is(err, statestore.ErrNotFound), errors.Is(err, statestore.ErrNoRecord):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, orchestrator.ErrConflict), errors.Is(err, statestore.ErrAmbiguous):
		return http.StatusConflict, err.Error()
	case providerUnavailable(err):
		return http.StatusServiceUnavailable, err.Error() + "; the provisioner or BMC is unavailable now: try again"
	}
	return http.StatusInternalServerError, "internal error: " + err.Error()
}

// providerUnavailable tells whether err is a driver's transient error
// (a provisioner's 5xx or a BMC that did not answer, after the engine's
// own retries): the call may succeed when made again.
func providerUnavailable(err error) bool {
	var de *drivers.Error
	return errors.As(err, &de) && de.Class == drivers.Transient
}

// errorHandler writes every error as problem details.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, detail := statusOf(err)
	p := httpx.NewProblem(status, detail, shownPath(c), c.Response().Header().Get(echo.HeaderXRequestID))
	var pe *problemError
	if errors.As(err, &pe) {
		p.Findings, p.Destructive, p.Approve = pe.findings, pe.destructive, pe.approve
	}
	if status >= 500 {
		s.log.Error().Str("request_id", p.RequestID).Str("path", p.Instance).Err(err).Msg("request failed")
	}
	if status == http.StatusServiceUnavailable && providerUnavailable(err) {
		c.Response().Header().Set("Retry-After", "5")
	}
	var nr interface{ NotRun() bool }
	if status == http.StatusServiceUnavailable && errors.As(err, &nr) && nr.NotRun() {
		c.Response().Header().Set("Retry-After", "1")
		c.Response().Header().Set(NotRun, "1")
	}
	httpx.WriteProblem(c, p)
}

// shownPath is the request's path as the audit log, the request log and
// problem details show it: the route's pattern instead when the path holds
// what looks like an API token (one pasted where an ID belongs), so that a
// token never reaches a log or an answer.
func shownPath(c echo.Context) string {
	p := c.Request().URL.Path
	if strings.Contains(p, auth.Prefix) || strings.Contains(c.Request().URL.RawPath, auth.Prefix) {
		if route := c.Path(); route != "" {
			return route
		}
		return "(a path holding a token)"
	}
	return p
}
