package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"
)

type notRunErr struct{ ran bool }

func (e notRunErr) Error() string     { return "this replica does not run the engine now" }
func (e notRunErr) Unavailable() bool { return true }
func (e notRunErr) NotRun() bool      { return !e.ran }

// TestNotRunHeader: a 503 for a call refused before anything ran says so
// (X-Slipway-Not-Run, Retry-After); one that may have run does not.
func TestNotRunHeader(t *testing.T) {
	s := &Server{log: zerolog.Nop()}
	e := echo.New()
	for _, c := range []struct {
		err  error
		want string
	}{{notRunErr{}, "1"}, {notRunErr{ran: true}, ""}, {errors.New("boom"), ""}} {
		rec := httptest.NewRecorder()
		s.errorHandler(c.err, e.NewContext(httptest.NewRequest(http.MethodPost, "/api/v1/tokens", nil), rec))
		if got := rec.Header().Get(NotRun); got != c.want || (c.want != "" && rec.Header().Get("Retry-After") == "") {
			t.Errorf("%v: %s %q (Retry-After %q), want %q", c.err, NotRun, got, rec.Header().Get("Retry-After"), c.want)
		}
	}
}
