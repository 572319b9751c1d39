// Package httpx holds what both of Slipway's HTTP APIs (control and
// introspection) share: echo middleware, the problem details body and its
// writer, the request log.
package httpx

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"
)

// BodyLimit refuses request bodies over n bytes: at once when the length
// is announced, else when the reader passes the limit.
func BodyLimit(n int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.ContentLength > n {
				return echo.NewHTTPError(http.StatusRequestEntityTooLarge,
					fmt.Sprintf("request body of %d bytes is over the limit of %d bytes", r.ContentLength, n))
			}
			r.Body = http.MaxBytesReader(c.Response(), r.Body, n)
			return next(c)
		}
	}
}

// IPExtractor gives the client's address: the connection's, or the
// X-Forwarded-For's when the connection comes from one of the trusted
// proxies' CIDRs (and only then).
func IPExtractor(cidrs []string) echo.IPExtractor {
	if len(cidrs) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, c := range cidrs {
		if _, n, err := net.ParseCIDR(strings.TrimSpace(c)); err == nil {
			opts = append(opts, echo.TrustIPRange(n))
		}
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// Problem is an RFC 9457 problem details body, as both APIs write them.
type Problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail,omitempty"`
	Instance  string `json:"instance,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// Findings carries validation findings (the control API's 422 on a
	// design).
	Findings any `json:"findings,omitempty"`
	// Destructive and Approve: a design apply refused (409) for want of
	// an approval: the plan's destructive actions in words, and the
	// approval of exactly those (?approve=).
	Destructive []string `json:"destructive,omitempty"`
	Approve     string   `json:"approve,omitempty"`
}

// NewProblem is the problem details of an answer with status.
func NewProblem(status int, detail, instance, requestID string) Problem {
	return Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail,
		Instance: instance, RequestID: requestID}
}

// WriteProblem answers p as application/problem+json, unless the answer
// was already begun.
func WriteProblem(c echo.Context, p Problem) {
	if c.Response().Committed {
		return
	}
	c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
	_ = c.JSON(p.Status, p)
}

// RequestLog logs every request in one line once it is answered: the
// server's fields (Fields), then request_id, method, where (Where: a path
// or a route pattern), status, took and remote. Never a header or body.
type RequestLog struct {
	Log zerolog.Logger
	Msg string
	// StatusOf is the status an error returned by the handler is
	// answered with.
	StatusOf  func(error) int
	RequestID func(echo.Context) string
	Where     func(echo.Context) (key, value string)
	Fields    func(echo.Context, *zerolog.Event) *zerolog.Event // may be nil
	// InfoOn4xx logs refusals at info; else they are at debug like
	// successes. 5xx are at warn.
	InfoOn4xx bool
}

// Middleware is the logging middleware.
func (l RequestLog) Middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		status := c.Response().Status
		if err != nil {
			status = l.StatusOf(err)
		}
		ev := l.Log.Debug()
		switch {
		case status >= 500:
			ev = l.Log.Warn()
		case status >= 400 && l.InfoOn4xx:
			ev = l.Log.Info()
		}
		if !ev.Enabled() {
			return err
		}
		if l.Fields != nil {
			ev = l.Fields(c, ev)
		}
		k, v := l.Where(c)
		ev.Str("request_id", l.RequestID(c)).Str("method", c.Request().Method).Str(k, v).Int("status", status).
			Dur("took", time.Since(start)).Str("remote", c.RealIP()).Msg(l.Msg)
		return err
	}
}
