package api

import (
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/internal/connlimit"
)

// DefaultConnsPerSource is Config.ConnsPerSource's default: connections
// of one source address open at once before one of their requests
// authenticates (an operator's CLI and dashboard need a handful; a
// connection counts only until its first request authenticates).
const DefaultConnsPerSource = 64

// MaxHeaderBytes bounds a request's line and headers on Serve's listener
// (net/http's default, 1 MiB, let a connection that sent 128 KiB of a
// header and stopped hold about 150 KiB until the header timeout). A
// client sends a few hundred bytes: a token, a request ID of at most 64
// characters.
const MaxHeaderBytes = 16 << 10

// connsPerSource is the cap Serve puts on a source's unauthenticated
// connections (0: none).
func (s *Server) connsPerSource() int {
	switch n := s.cfg.ConnsPerSource; {
	case n < 0:
		return 0
	case n == 0:
		return DefaultConnsPerSource
	default:
		return n
	}
}

// limitConns wraps ln in the per-source cap (issue 33, S3); a refused
// connection is answered 429 on a plain listener, and only closed under
// TLS (ln is the TCP listener the TLS one wraps).
func (s *Server) limitConns(ln net.Listener, tls bool) net.Listener {
	n := s.connsPerSource()
	if n == 0 {
		return ln
	}
	var refuse func(net.Conn)
	if !tls {
		refuse = connlimit.Refuse429(n)
	}
	l := connlimit.New(n)
	l.Warn = func(src netip.Prefix, refused uint64) {
		s.log.Warn().Str("source", src.String()).Int("limit", n).Uint64("refused_total", refused).
			Msg("connections refused: this source has the most connections open that have not authenticated a request (connsPerSource; logged at most once a minute)")
	}
	return l.Listen(ln, refuse)
}

// trustConn: the request authenticated, so its connection no longer
// counts against its source's cap (Serve keeps the connection in the
// request's context: http.Server.ConnContext).
func trustConn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		connlimit.TrustFrom(c.Request().Context())
		return next(c)
	}
}

// unreadGrace is how long the rest of a refused request's body is still
// read (and dropped) before its connection is given up: a client that
// sent it is drained at once (its bytes are already here); each one that
// did not costs about 30 KiB (its goroutine, buffers, request) that long.
const unreadGrace = 250 * time.Millisecond

// dropUnreadBody: a request that announced a body and is answered with
// an error (a refusal: no valid token, a body over the limit by its
// length, no such route) has unreadGrace for the rest of its body to
// arrive. net/http reads up to 256 KiB of a body the handler did not read
// before it answers (to keep the connection), and waited for it until the
// 2-minute read timeout: a client announcing a body and sending it slowly
// kept its answer, and the connection, that long. A client that sent its
// body gets its answer as before, on a connection kept alive; one that
// did not gets it when the grace ends, and the connection is closed.
func dropUnreadBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if r := c.Request(); err != nil && r.ContentLength != 0 && !c.Response().Committed {
			_ = http.NewResponseController(c.Response()).SetReadDeadline(time.Now().Add(unreadGrace))
		}
		return err
	}
}
