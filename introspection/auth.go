package introspection

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"

	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/connlimit"
)

// session is an authenticated request: the token's record, the design
// revision it was issued from and the node. A session read with its
// stored /v1/self answer has no design (d and n nil) until a route that
// needs it asks (authenticateToken); self or d is always set.
type session struct {
	hash tokenHash // of the token; zero when the session is not a request's
	rec  tokenRecord
	d    *design.Design
	n    *design.Node
	// parts are d's parts of /v1/self answers (nil: looked up when needed).
	parts *selfParts
	self  atomic.Pointer[selfAnswer] // the /v1/self answer, once rendered
}

func sessionOf(c echo.Context) *session { ss, _ := c.Get(ctxSession).(*session); return ss }

// authenticate checks the node token, from the Authorization header or,
// for the NoCloud routes, from the path; with CheckSource, the source
// address too. withDesign: the route needs the session's design and node
// (every route but /v1/self, which answers the stored rendering).
func (s *Server) authenticate(fromPath, withDesign bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			tok, ok := "", false
			if fromPath {
				tok, ok = c.Param("token"), true
			} else {
				tok, ok = bearer(c.Request().Header)
			}
			if !ok {
				return errUnauthorized
			}
			ss, err := s.authenticateToken(c.Request().Context(), tok, withDesign || s.cfg.CheckSource)
			if err != nil {
				return err
			}
			d, n, rec := ss.d, ss.n, ss.rec
			if s.cfg.CheckSource {
				src := c.RealIP()
				if !sourceAllowed(d, n, src) {
					s.log.Warn().Str("request_id", requestIDOf(c)).Str("node", rec.Node).Str("remote", src).
						Str("route", routeOf(c)).Msg("node token used from an address that is not the node's: refused")
					return problem(http.StatusForbidden, fmt.Sprintf("this token's requests must come from one of its node's design addresses; this one came from %s", src))
				}
			}
			c.Set(ctxSession, ss)
			connlimit.TrustFrom(c.Request().Context()) // the connection no longer counts against its source (Serve)
			return next(c)
		}
	}
}

// bearer returns the token of the one Authorization header, if it is a
// bearer credential.
func bearer(h http.Header) (string, bool) {
	v := h.Values(echo.HeaderAuthorization)
	if len(v) != 1 {
		return "", false
	}
	scheme, tok, ok := strings.Cut(strings.TrimSpace(v[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// sourceAllowed reports whether addr is one of the node's design
// addresses: a static address, or an address inside the dhcp ranges (the
// whole network when it declares none) of a network it addresses by DHCP.
func sourceAllowed(d *design.Design, n *design.Node, addr string) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, ad := range n.Spec.Addressing {
		if !strings.EqualFold(ad.Address, "dhcp") {
			if s, err := netip.ParseAddr(ad.Address); err == nil && s.Unmap() == a {
				return true
			}
		} else if nw := d.Networks[ad.Network]; nw != nil && inDHCP(nw, a) {
			return true
		}
	}
	return false
}

// inDHCP reports whether a is in one of the network's dhcp ranges, or in
// the network when it declares none.
func inDHCP(nw *design.Network, a netip.Addr) bool {
	ranged := false
	for _, r := range nw.Spec.Ranges {
		if r.Type != "dhcp" {
			continue
		}
		ranged = true
		lo, err1 := netip.ParseAddr(r.Start)
		hi, err2 := netip.ParseAddr(r.End)
		if err1 == nil && err2 == nil && lo.Unmap().Compare(a) <= 0 && a.Compare(hi.Unmap()) <= 0 {
			return true
		}
	}
	if ranged {
		return false
	}
	p, err := netip.ParsePrefix(nw.Spec.CIDR)
	return err == nil && p.Contains(a)
}
