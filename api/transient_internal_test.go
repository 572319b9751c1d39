package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/drivers"
)

// TestTransientDriverErrorIs503: a driver's transient error that reaches
// the API (a provisioner's 500 after the engine's retries) is 503 with
// Retry-After, the provisioner being unavailable now, not 500 "internal
// error"; a permanent one and any other error stay 500.
func TestTransientDriverErrorIs503(t *testing.T) {
	s := &Server{log: zerolog.Nop()}
	e := echo.New()
	for _, c := range []struct {
		err        error
		status     int
		retryAfter bool
	}{
		{fmt.Errorf("adopt n1: %w", drivers.Errorf(drivers.Transient, "maas GET machines/: 500")), http.StatusServiceUnavailable, true},
		{drivers.Errorf(drivers.Permanent, "maas: no such machine"), http.StatusInternalServerError, false},
		{errors.New("boom"), http.StatusInternalServerError, false},
	} {
		rec := httptest.NewRecorder()
		s.errorHandler(c.err, e.NewContext(httptest.NewRequest(http.MethodPost, "/api/v1/nodes/n1/adopt", nil), rec))
		if rec.Code != c.status || (rec.Header().Get("Retry-After") != "") != c.retryAfter {
			t.Errorf("%v: %d (Retry-After %q), want %d (Retry-After set: %v)", c.err, rec.Code, rec.Header().Get("Retry-After"), c.status, c.retryAfter)
		}
		if rec.Header().Get(NotRun) != "" {
			t.Errorf("%v: marked not run; a provisioner error may follow a change", c.err)
		}
	}
}
