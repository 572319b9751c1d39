package introspection

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"time"
	"unsafe"

	"github.com/labstack/echo/v4"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/slipway-dev/slipway/internal/connlimit"
)

// Serve serves on ln until ctx ends, then shuts down gracefully.
//
// The listener is fasthttp's (github.com/valyala/fasthttp): a fleet's
// nodes fetch /v1/self as they boot, each with its own token, and on a
// small control host net/http's per-request work (a goroutine's request
// and response objects, header maps) cost as much CPU as the answer's
// read from the store. GET /v1/self with a token that authenticates is
// answered in place, as serveHTTP does on net/http; every other request
// goes to the same echo routes and middleware through fasthttpadaptor.
// Read, write and idle timeouts are set; headers are limited to 8 KiB
// and bodies to maxBody.
//
// What a connection can make the server hold before its token is known
// is bounded (issue 33, S3): fasthttp reads no body before the handler
// (StreamRequestBody, with a limit of one byte: it would otherwise size a
// buffer from the announced Content-Length and wait for it to fill), the
// handler reads a body only once the token authenticates, as it arrives
// (takeBody), and at most Config.ConnsPerSource connections of a source
// that have not authenticated a request are open at once (a 429 past
// it; package connlimit).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := s.fastServer()
	if n := s.connsPerSource(); n > 0 {
		l := connlimit.New(n)
		l.Warn = func(src netip.Prefix, refused uint64) {
			s.log.Warn().Str("source", src.String()).Int("limit", n).Uint64("refused_total", refused).
				Msg("connections refused: this source has the most connections open that have not authenticated a request (introspectionConnsPerSource; logged at most once a minute)")
		}
		ln = l.Listen(ln, connlimit.Refuse429(n))
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.ShutdownWithContext(sctx)
		return nil
	}
}

// fastServer is the fasthttp server Serve runs on its listener.
func (s *Server) fastServer() *fasthttp.Server {
	slow := fasthttpadaptor.NewFastHTTPHandler(s.Handler())
	return &fasthttp.Server{
		Handler: func(c *fasthttp.RequestCtx) {
			if s.fastCtx(c) {
				connlimit.Trust(c.Conn())
				return
			}
			c.SetUserValue(connlimit.ConnKey{}, connlimit.Hold(c.Conn())) // authenticate trusts it (connlimit.TrustFrom)
			s.takeBody(c)
			slow(c)
		},
		ReadTimeout: 30 * time.Second, WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute,
		// A connection's read buffer bounds its request headers (a
		// node's are a few hundred bytes; 431 past it) and costs memory
		// per connection: 8 KiB. No body is read before the handler
		// (see above); multipart bodies are not parsed ahead either.
		ReadBufferSize: 8 << 10, MaxRequestBodySize: 1, StreamRequestBody: true,
		DisablePreParseMultipartForm: true, MaxIdleWorkerDuration: time.Second,
		NoDefaultServerHeader: true, Logger: fastLogger{s}, Name: "slipway",
	}
}

// fastCtx answers c when it is GET /v1/self with a bearer token that
// authenticates, under the rules of fastPath; false (nothing written)
// otherwise. Nothing is allocated: the token is read where the request
// holds it, a cached answer is sent from where it is kept (immutable),
// and the headers are set from constant bytes.
func (s *Server) fastCtx(c *fasthttp.RequestCtx) bool {
	r := &c.Request
	if !c.IsGet() || !isSelfPath(r) || hasBody(&r.Header) || !s.fastAllowed() {
		return false
	}
	tok, ok := fastBearer(&r.Header)
	if !ok {
		return false
	}
	if !s.fastBody(c, tok, (*fastResponse)(&c.Response)) {
		return false
	}
	var id [2 * requestIDLen]byte
	h := &c.Response.Header
	h.SetCanonical(hdrRequestID, appendRequestID(id[:0]))
	h.SetCanonical(hdrCacheControl, hdrNoStore)
	h.SetContentTypeBytes(hdrJSONType)
	return true
}

// fastResponse is an answerSink that sets a fasthttp response's body.
type fastResponse fasthttp.Response

func (r *fastResponse) put(a []byte, kept bool) {
	if kept {
		(*fasthttp.Response)(r).SetBodyRaw(a) // immutable: sent as it is
	} else {
		(*fasthttp.Response)(r).SetBody(a) // lent by the store: copied into the response's pooled buffer
	}
}

// The fast path's header names (canonical) and values.
var (
	hdrRequestID    = []byte(echo.HeaderXRequestID)
	hdrCacheControl = []byte("Cache-Control")
	hdrNoStore      = []byte(noStore[0])
	hdrJSONType     = []byte(jsonType[0])
	selfPath        = []byte("/v1/self")
)

// isSelfPath reports whether r's path is /v1/self: its request target
// as sent when that is the path alone (no parse), else its URI's path.
func isSelfPath(r *fasthttp.Request) bool {
	return bytes.Equal(r.Header.RequestURI(), selfPath) || bytes.Equal(r.URI().PathOriginal(), selfPath)
}

// fastBearer is bearer for fasthttp's headers: the token of the one
// Authorization header, if it is a bearer credential. The token is the
// request's own bytes, not a copy: it is valid only while the request
// is, and must not be kept (fastBody only reads it).
func fastBearer(h *fasthttp.RequestHeader) (string, bool) {
	var v []byte
	n := 0
	for _, x := range h.PeekAll(echo.HeaderAuthorization) {
		v, n = x, n+1
	}
	if n != 1 {
		return "", false
	}
	scheme, tok, ok := bytes.Cut(bytes.TrimSpace(v), []byte(" "))
	if !ok || !bytes.EqualFold(scheme, []byte("Bearer")) {
		return "", false
	}
	tok = bytes.TrimSpace(tok)
	return unsafe.String(unsafe.SliceData(tok), len(tok)), true
}

// fastLogger sends fasthttp's own messages (never a URL) to the logger.
type fastLogger struct{ s *Server }

func (l fastLogger) Printf(format string, args ...any) {
	l.s.log.Warn().Msgf(format, args...)
}
