package introspection

import (
	"bytes"
	"errors"
	"io"

	"github.com/labstack/echo/v4"
	"github.com/valyala/fasthttp"
)

// DefaultConnsPerSource is Config.ConnsPerSource's default: connections
// of one source address that have not authenticated a request, open at
// once. A node needs one or two; the cap is for a proxy or NAT in front
// of many nodes, whose connections count only until their first request
// authenticates.
const DefaultConnsPerSource = 256

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

// hasBody reports whether a request announces a body: a length, or a
// chunked one (-1; -2 is no Content-Length at all).
func hasBody(h *fasthttp.RequestHeader) bool {
	n := h.ContentLength()
	return n > 0 || n == -1
}

// unreadBody is the user value (and so the request context's value, as
// the adaptor's requests carry the fasthttp context) of a request whose
// body takeBody did not read: its announced length (-1: chunked).
type unreadBody struct{}

// errBodyNotRead is what reading a body takeBody left unread gives.
var errBodyNotRead = errors.New("the request's body was not read: its token did not authenticate")

// takeBody reads a request's body for the echo routes, which the adaptor
// hands them in full, once its bearer token authenticates: as it
// arrives, into a buffer that grows with what came, up to one byte over
// maxBody (bodyLimit answers 413 past it). fasthttp has read at most one
// byte of it (Serve). A body over the limit by its announced length is
// read and dropped (up to maxDrained) when its token authenticates; a
// request that does not authenticate has its body left unread. Either
// way the connection is closed after the answer, and echo answers from
// the announced length (413) or the token (401) as before (unread).
func (s *Server) takeBody(c *fasthttp.RequestCtx) {
	r := &c.Request
	if !hasBody(&r.Header) || r.BodyStream() == nil {
		return
	}
	n := r.Header.ContentLength()
	if authentic := s.tokenAuthenticates(c, &r.Header); n > maxBody || !authentic {
		if authentic && n <= maxDrained {
			discardBody(r)
		}
		c.SetUserValue(unreadBody{}, n)
		r.ResetBody()
		c.SetConnectionClose()
		return
	}
	var b bytes.Buffer
	_, err := b.ReadFrom(io.LimitReader(r.BodyStream(), maxBody+1))
	if err != nil || b.Len() > maxBody { // cut short (the read timeout) or over the limit
		c.SetConnectionClose()
	}
	if err != nil {
		c.SetUserValue(unreadBody{}, n)
		r.ResetBody()
		return
	}
	r.SetBodyRaw(b.Bytes())
}

// maxDrained bounds the oversized body of an authenticated request that
// is read and dropped before the 413: a socket closed with data unread
// is reset by the kernel, and the node would lose the answer that says
// what was wrong. Larger bodies, and any body of a request that does not
// authenticate, are not read.
const maxDrained = 1 << 20

// discardBody reads what is left of r's body, at most maxDrained bytes
// (the read timeout bounds a slow sender).
func discardBody(r *fasthttp.Request) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.BodyStream(), maxDrained))
}

// tokenAuthenticates reports whether the request's bearer token is a
// valid node token (a panic counts as no).
func (s *Server) tokenAuthenticates(c *fasthttp.RequestCtx, h *fasthttp.RequestHeader) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			ok = false
		}
	}()
	tok, found := fastBearer(h)
	if !found || !wellFormed(tok) {
		return false
	}
	_, err := s.authenticateToken(c, tok, false)
	return err == nil
}

// unread gives a request whose body takeBody left unread its announced
// length back (bodyLimit refuses one over the limit by it) and a body
// that fails when read.
func unread(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if n, ok := r.Context().Value(unreadBody{}).(int); ok {
			r.ContentLength = int64(n)
			r.Body = io.NopCloser(failingReader{})
		}
		return next(c)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errBodyNotRead }
