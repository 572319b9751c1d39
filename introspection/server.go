package introspection

import (
	"context"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/rs/zerolog"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/httpx"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"

	"github.com/slipway-dev/slipway/statestore"
)

// Store is the part of [statestore.Records] the introspection API uses.
type Store interface {
	statestore.KeyedRecords
	ReadLog(ctx context.Context, log string, after uint64, limit int) ([]statestore.LogEntry, error)
}

// Revisions loads stored design revisions (a [statestore.Store] is one).
type Revisions interface {
	Revision(ctx context.Context, id string) (statestore.Revision, error)
}

// KeyLen is the length of [Config.Key].
const KeyLen = 32

// Config configures a Server.
type Config struct {
	// Store keeps the token hashes and the reports; the events go to the
	// engine's log "events" in it.
	Store Store
	// Revisions loads the design revision a token was issued with (nil:
	// Store, which must then implement Revisions).
	Revisions Revisions
	// URL is the base URL nodes reach this API at, e.g.
	// http://10.11.0.1:8701; it is written into the user data and the
	// boot actions' report URL (with SiteURL, only when the node's design
	// revision names none).
	URL string
	// SiteURL: what a node is told is the Site's introspection.url in the
	// design revision it deploys with, URL only the fallback (serve: a
	// design applied later counts without a restart). Without it URL is
	// always told (a lab whose nodes reach the API only where it listens).
	SiteURL bool
	// Key is the HMAC key tokens are derived from: KeyLen random bytes,
	// kept secret and stable across restarts (a new key invalidates every
	// issued token).
	Key []byte
	// TrustedProxies are CIDRs whose X-Forwarded-For is believed for the
	// request's source address.
	TrustedProxies []string
	// CheckSource: a request must also come from one of its node's design
	// addresses (a static address, or an address inside the dhcp ranges of
	// a network the node addresses by DHCP), else 403.
	CheckSource bool
	// Secret resolves the `secret "NAME"` calls of boot action templates
	// (nil: such templates fail to render).
	Secret func(ctx context.Context, name string) (string, error)
	// RoCE answers a node's RoCE addresses when its site profile enables
	// RoCE (orchestrator.NodeRoCE); network-config carries them (nil:
	// none).
	RoCE func(ctx context.Context, d *design.Design, n *design.Node) ([]driverspec.RoCEAddress, error)
	// ReportBurst and ReportEvery limit each node's boot action reports
	// (see DefaultReportBurst; zero: the defaults).
	ReportBurst int
	ReportEvery time.Duration
	// ConnsPerSource caps the connections of one source address (an
	// IPv6 /64) that Serve holds open before one of their requests
	// authenticates; more get a 429 and are closed (0:
	// DefaultConnsPerSource; negative: no cap).
	ConnsPerSource int
	Log            zerolog.Logger
}

// Server is the introspection API. It is safe for concurrent use.
type Server struct {
	cfg     Config
	key     []byte
	baseURL string
	store   Store
	viewer  statestore.RecordViewer // store, when it lends records (nil: Get)
	designs *designCache
	log     zerolog.Logger
	e       *echo.Echo
	locks   stripedLock
	udParts [][]byte // the user data around the token's two places, for baseURL
	// byURL caches the user data parts of the URLs design revisions name
	// (urlParts), under udMu.
	udMu    sync.Mutex
	byURL   map[string][][]byte
	tokens  tokenCache
	reports *reportLimiter
	macs    *sync.Pool // of *macState, keyed with key
	// onReport is called after a report is stored (NotifyReports).
	onReport atomic.Value // of func(node string)
}

// Body limit of every request (reports are small).
const maxBody = 64 << 10

// New checks cfg and builds the API.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("introspection: no state store")
	}
	if cfg.Revisions == nil {
		r, ok := cfg.Store.(Revisions)
		if !ok {
			return nil, errors.New("introspection: no Revisions and the store keeps none")
		}
		cfg.Revisions = r
	}
	if len(cfg.Key) != KeyLen {
		return nil, fmt.Errorf("introspection: the token key is %d bytes long: give %d random bytes", len(cfg.Key), KeyLen)
	}
	base, err := checkURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	for _, c := range cfg.TrustedProxies {
		if _, _, err := net.ParseCIDR(strings.TrimSpace(c)); err != nil {
			return nil, fmt.Errorf("introspection: trusted proxy %q: not a CIDR (like 10.0.0.0/24)", c)
		}
	}
	ud, err := encodeUserData(base)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, key: append([]byte(nil), cfg.Key...), baseURL: base, store: cfg.Store,
		designs: newDesignCache(cfg.Revisions), log: cfg.Log, udParts: ud, reports: newReportLimiter(cfg.ReportBurst, cfg.ReportEvery)}
	s.macs = newMACs(s.key)
	s.viewer, _ = cfg.Store.(statestore.RecordViewer)
	s.designs.evicted = s.tokens.dropDesign
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.IPExtractor = httpx.IPExtractor(cfg.TrustedProxies)
	e.Use(s.requestID, s.requestLog().Middleware, s.recoverPanics, unread, bodyLimit(maxBody))
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	self := s.authenticate(false, true)
	e.GET("/v1/self", s.getSelf, s.authenticate(false, s.cfg.CheckSource))
	e.GET("/v1/self/assets", s.getAssets, self)
	e.GET("/v1/self/packages", s.getPackages, self)
	e.POST("/v1/self/actions/:action", s.postReport, self)
	seed := s.authenticate(true, true)
	e.GET("/v1/nocloud/:token/meta-data", s.metaData, seed)
	e.GET("/v1/nocloud/:token/user-data", s.seedUserData, seed)
	e.GET("/v1/nocloud/:token/vendor-data", s.vendorData, seed)
	e.GET("/v1/nocloud/:token/network-config", s.networkConfig, seed)
	s.e = e
	return s, nil
}

// checkURL checks the base URL nodes use and returns it without a
// trailing slash. It is written into a shell environment file, so it is
// held to a plain form.
func checkURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("introspection: URL %q: give the base URL nodes reach the API at, like http://10.11.0.1:8701", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("introspection: URL %q: give no user, query or fragment", raw)
	}
	for _, r := range raw {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune(`'"\$`+"`", r) {
			return "", fmt.Errorf("introspection: URL %q has a character nodes can't take in a shell environment file", raw)
		}
	}
	return strings.TrimSuffix(raw, "/"), nil
}

// Handler is the API as an http.Handler.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// serveHTTP answers GET /v1/self with a valid token straight away: the
// same answer and headers as through echo and its middleware (request ID,
// Cache-Control, the session's bytes), less the routing, the context and
// the middleware calls, which were a fifth of the handler's time for a
// cached answer. Only when nothing else would happen on the way: no body
// to limit, no source address to check, the request log's level above
// Debug (successes are logged at Debug). Anything else, and any request
// this path would not answer 200 (a missing, malformed, unknown or
// revoked token, a store or design that does not answer, a panic), goes
// through echo as before, which answers and logs it.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if s.fastPath(r) {
		if tok, ok := bearer(r.Header); ok && s.fastSelf(w, r, tok) {
			return
		}
	}
	s.e.ServeHTTP(w, r)
}

// fastPath reports whether serveHTTP may answer r without echo.
func (s *Server) fastPath(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Path == "/v1/self" && r.URL.RawPath == "" &&
		(r.Body == nil || r.Body == http.NoBody) && s.fastAllowed()
}

// fastAllowed: no source address to check, and the request log's level
// above Debug (successes are logged at Debug).
func (s *Server) fastAllowed() bool {
	debug := s.log.GetLevel() <= zerolog.DebugLevel && zerolog.GlobalLevel() <= zerolog.DebugLevel
	return !s.cfg.CheckSource && !debug
}

// fastSelf answers /v1/self when the token authenticates; false (nothing
// written) when it does not, or when authenticating or rendering
// panicked.
func (s *Server) fastSelf(w http.ResponseWriter, r *http.Request, tok string) bool {
	buf := scratchBufs.Get().(*[]byte)
	defer scratchBufs.Put(buf)
	sink := &bufSink{b: (*buf)[:0]}
	if !s.fastBody(r.Context(), tok, sink) {
		return false
	}
	body := sink.b
	*buf = body
	h := w.Header()
	h[echo.HeaderXRequestID] = []string{newRequestID()}
	h["Cache-Control"] = noStore
	h[echo.HeaderContentType] = jsonType
	h[echo.HeaderContentLength] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return true
}

// answerSink takes a /v1/self answer: kept, it is immutable and may be
// kept as it is; else it is lent (by the store) and must be copied. put
// does no I/O.
type answerSink interface {
	put(answer []byte, kept bool)
}

// bufSink is an answerSink that appends to b.
type bufSink struct{ b []byte }

func (k *bufSink) put(a []byte, _ bool) { k.b = append(k.b, a...) }

// fastBody hands sink the token's /v1/self answer: the cached one, or,
// for a token not cached, the one its stored record carries, read in
// place (answerFromStore), else the one authenticateHashed finds. The
// token is checked for form and hashed once, and the cache looked up
// once. false when the token does not authenticate or anything panicked
// (echo then answers). tok is only read, never kept (the fasthttp path
// lends it from the request's buffer).
func (s *Server) fastBody(ctx context.Context, tok string, sink answerSink) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			ok = false
		}
	}()
	if !wellFormed(tok) {
		return false
	}
	h := hashOf(tok)
	ss, cached := s.tokens.get(h)
	if cached && subtle.ConstantTimeCompare(ss.hash[:], h[:]) == 1 {
		sink.put(s.answer(ss).body, true)
		return true
	}
	if !cached && !s.tokens.seenOnce(h) && s.answerFromStore(ctx, tok, h, sink) {
		return true // a token's first answer; its second is cached (authenticateHashed)
	}
	ss, err := s.authenticateHashed(ctx, tok, h, false)
	if err != nil {
		return false
	}
	sink.put(s.answer(ss).body, true)
	return true
}

const (
	ctxRequestID = "slipway.request_id"
	ctxSession   = "slipway.session"
)

// requestID gives every request an ID of the server's own (an incoming
// X-Request-Id is ignored: nothing a node sends is logged): 96 bits from
// the runtime's ChaCha8 generator (seeded from the OS; an ID only has to
// be unique, and this costs no system call).
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := newRequestID()
		c.Set(ctxRequestID, id)
		h := c.Response().Header()
		h[echo.HeaderXRequestID] = []string{id}
		h["Cache-Control"] = noStore
		return next(c)
	}
}

func newRequestID() string {
	var b [2 * requestIDLen]byte
	return string(appendRequestID(b[:0]))
}

// requestIDLen is the length of a request ID in bytes (in hex, twice
// that).
const requestIDLen = 12

// appendRequestID appends a new request ID, in hex, to b.
func appendRequestID(b []byte) []byte {
	var r [requestIDLen]byte
	binary.LittleEndian.PutUint64(r[:8], mrand.Uint64())
	binary.LittleEndian.PutUint32(r[8:], mrand.Uint32())
	return hex.AppendEncode(b, r[:])
}

// noStore is every answer's Cache-Control (shared: a header value slice
// is only ever replaced, never written to).
var noStore = []string{"no-store"}

// bodyLimit is httpx.BodyLimit for requests that have a body (a request
// without one, such as every GET a node sends, needs no reader wrapped
// around its empty body).
func bodyLimit(n int64) echo.MiddlewareFunc {
	limit := httpx.BodyLimit(n)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		limited := limit(next)
		return func(c echo.Context) error {
			if r := c.Request(); r.Body == http.NoBody || r.Body == nil {
				return next(c)
			}
			return limited(c)
		}
	}
}

func requestIDOf(c echo.Context) string { id, _ := c.Get(ctxRequestID).(string); return id }

// routeOf names the request's route by its pattern: the NoCloud paths
// carry the token, so the path itself is never logged or echoed.
func routeOf(c echo.Context) string {
	if p := c.Path(); p != "" {
		return p
	}
	return "(no route)"
}

// requestLog logs every request: method, route pattern, status, node
// (once authenticated), source address. Never a path, header or body.
func (s *Server) requestLog() httpx.RequestLog {
	return httpx.RequestLog{Log: s.log, Msg: "introspection request", InfoOn4xx: true,
		StatusOf:  func(err error) int { st, _ := statusOf(err); return st },
		RequestID: requestIDOf,
		Where:     func(c echo.Context) (string, string) { return "route", routeOf(c) },
		Fields: func(c echo.Context, ev *zerolog.Event) *zerolog.Event {
			if ss := sessionOf(c); ss != nil {
				ev = ev.Str("node", ss.rec.Node).Str("deployment", ss.rec.Deployment)
			}
			return ev
		}}
}

// recoverPanics turns a handler's panic into a 500.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				s.log.Error().Str("request_id", requestIDOf(c)).Str("route", routeOf(c)).
					Str("panic", fmt.Sprintf("%T", r)).Msg("handler panicked")
				err = problem(http.StatusInternalServerError, "internal error (request "+requestIDOf(c)+")")
			}
		}()
		return next(c)
	}
}
