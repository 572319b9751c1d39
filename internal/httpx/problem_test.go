package httpx_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/internal/httpx"
)

// TestWriteProblem: problem details go out as application/problem+json
// with the status they name; an answer already begun is left alone.
func TestWriteProblem(t *testing.T) {
	e := echo.New()
	rec := httptest.NewRecorder()
	c := e.NewContext(httptest.NewRequest(http.MethodGet, "/x", nil), rec)
	httpx.WriteProblem(c, httpx.NewProblem(http.StatusConflict, "taken", "/x", "REQ"))
	var p httpx.Problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusConflict || rec.Header().Get("Content-Type") != "application/problem+json" ||
		!reflect.DeepEqual(p, httpx.Problem{Type: "about:blank", Title: "Conflict", Status: 409, Detail: "taken", Instance: "/x", RequestID: "REQ"}) {
		t.Errorf("answer %d %q %+v", rec.Code, rec.Header().Get("Content-Type"), p)
	}
	httpx.WriteProblem(c, httpx.NewProblem(http.StatusInternalServerError, "late", "/x", "REQ"))
	if strings.Contains(rec.Body.String(), "late") {
		t.Errorf("a second problem was written into a begun answer: %s", rec.Body)
	}
}

// TestRequestLog: one line per request with the server's fields, at
// debug, info (refusals, when asked) or warn (5xx); an error's status is
// the one it is answered with.
func TestRequestLog(t *testing.T) {
	var out bytes.Buffer
	l := httpx.RequestLog{Log: zerolog.New(&out).Level(zerolog.DebugLevel), Msg: "test request", InfoOn4xx: true,
		StatusOf:  func(error) int { return http.StatusTeapot },
		RequestID: func(echo.Context) string { return "REQ" },
		Where:     func(echo.Context) (string, string) { return "route", "/r" },
		Fields:    func(_ echo.Context, ev *zerolog.Event) *zerolog.Event { return ev.Str("node", "n1") }}
	for _, c := range []struct {
		h     echo.HandlerFunc
		level string
		code  float64
	}{
		{func(c echo.Context) error { return c.NoContent(http.StatusNoContent) }, "debug", 204},
		{func(echo.Context) error { return errors.New("refused") }, "info", 418},
		{func(c echo.Context) error { return c.NoContent(http.StatusBadGateway) }, "warn", 502},
	} {
		out.Reset()
		e := echo.New()
		_ = l.Middleware(c.h)(e.NewContext(httptest.NewRequest(http.MethodPost, "/r?secret=1", nil), httptest.NewRecorder()))
		var line map[string]any
		if err := json.Unmarshal(out.Bytes(), &line); err != nil {
			t.Fatalf("log %q: %v", out.String(), err)
		}
		if line["level"] != c.level || line["status"] != c.code || line["node"] != "n1" || line["request_id"] != "REQ" ||
			line["method"] != "POST" || line["route"] != "/r" || line["message"] != "test request" {
			t.Errorf("log line %v, want level %s status %v", line, c.level, c.code)
		}
		if strings.Contains(out.String(), "secret") {
			t.Errorf("the query string was logged: %s", out.String())
		}
	}
}
