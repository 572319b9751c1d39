package httpx_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/internal/httpx"
)

func TestBodyLimitAndIP(t *testing.T) {
	e := echo.New()
	e.IPExtractor = httpx.IPExtractor([]string{"10.0.0.0/8"})
	e.POST("/", func(c echo.Context) error {
		b := make([]byte, 100)
		if _, err := c.Request().Body.Read(b); err != nil && err.Error() != "EOF" {
			return echo.NewHTTPError(http.StatusRequestEntityTooLarge, err.Error())
		}
		return c.String(http.StatusOK, c.RealIP())
	}, httpx.BodyLimit(8))
	for _, tc := range []struct {
		body, remote, xff string
		code              int
		ip                string
	}{
		{"small", "10.1.2.3:5", "192.0.2.7", 200, "192.0.2.7"},      // a trusted proxy: its XFF counts
		{"small", "203.0.113.9:5", "192.0.2.7", 200, "203.0.113.9"}, // not trusted: the connection counts
		{"far too large", "10.1.2.3:5", "", 413, ""},
	} {
		req := httptest.NewRequest("POST", "/", strings.NewReader(tc.body))
		req.RemoteAddr = tc.remote
		if tc.xff != "" {
			req.Header.Set("X-Forwarded-For", tc.xff)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != tc.code || (tc.ip != "" && rec.Body.String() != tc.ip) {
			t.Errorf("%+v: %d %q", tc, rec.Code, rec.Body.String())
		}
	}
}
