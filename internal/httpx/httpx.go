// Package httpx holds the echo middleware both of Slipway's HTTP APIs
// (control and introspection) share.
package httpx

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
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
