package introspection

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/internal/httpx"
)

// problemError is an error with its HTTP status and a detail safe to show
// the caller: it never holds a token.
type problemError struct {
	status int
	detail string
	cause  error // logged (5xx), never shown
}

func (p *problemError) Error() string { return p.detail }
func (p *problemError) Unwrap() error { return p.cause }

// HTTPStatus is the status an API answers the error with.
func (p *problemError) HTTPStatus() int { return p.status }

func problem(status int, detail string) error { return &problemError{status: status, detail: detail} }

// internal is a 5xx whose cause is logged but not shown.
func internal(status int, detail string, cause error) error {
	return &problemError{status: status, detail: detail, cause: cause}
}

// statusOf maps an error to its status and a detail for the caller.
// Anything unexpected is a 500 whose detail says nothing of the error.
func statusOf(err error) (int, string) {
	var pe *problemError
	var he *echo.HTTPError
	switch {
	case errors.As(err, &pe):
		return pe.status, pe.detail
	case errors.As(err, &he):
		// echo's own: route not found, method not allowed, body too large.
		return he.Code, http.StatusText(he.Code)
	}
	return http.StatusInternalServerError, "internal error"
}

// errorHandler writes every error as problem details.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, detail := statusOf(err)
	// Instance is the route pattern, never the request's path (the
	// NoCloud paths carry the token).
	p := httpx.NewProblem(status, detail, c.Path(), requestIDOf(c))
	if status >= 500 {
		ev := s.log.Error().Str("request_id", p.RequestID).Str("route", routeOf(c)).Str("detail", detail)
		var pe *problemError
		if errors.As(err, &pe) && pe.cause != nil {
			ev = ev.AnErr("cause", pe.cause)
		} else if pe == nil {
			ev = ev.Err(err)
		}
		ev.Msg("introspection request failed")
	}
	if status == http.StatusUnauthorized {
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="slipway-introspection"`)
	}
	httpx.WriteProblem(c, p)
}
