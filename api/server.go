package api

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/internal/connlimit"
	"github.com/slipway-dev/slipway/internal/httpx"
	"github.com/slipway-dev/slipway/orchestrator/record"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/ingest/archive"
	"github.com/slipway-dev/slipway/statestore"
)

// Engine is what the API needs of the orchestrator engine.
type Engine interface {
	Submit(ctx context.Context, req record.Request) (record.Task, error)
	Task(ctx context.Context, id string) (record.Task, []record.NodeResult, error)
	Tasks(ctx context.Context) ([]record.Task, error)
	TaskVerb(ctx context.Context, id string, v record.Verb, who string) (record.Task, error)
	Node(ctx context.Context, name string) (record.NodeRecord, error)
	Nodes(ctx context.Context) ([]record.NodeRecord, error)
	Events(ctx context.Context, after uint64, limit int, task, node string) ([]record.Event, error)
	LastEvent(ctx context.Context) (uint64, error)
	Adopt(ctx context.Context, node, revision, who string) (record.NodeRecord, error)
	AdoptMachine(ctx context.Context, node, machineID, revision, who string) (record.NodeRecord, error)
	MarkManual(ctx context.Context, node, why, who string) (record.NodeRecord, error)
	ReleaseManual(ctx context.Context, node, who string) (record.NodeRecord, error)
	Rebootstrap(ctx context.Context, node, who string) (record.Rebootstrapped, error)
	// Plan is what applying d (revision id) and then deploying it would
	// do; read only (plan.go).
	Plan(ctx context.Context, d *design.Design, id string) (record.Plan, error)
}

// Authenticator checks a bearer token; any error is a 401.
type Authenticator func(ctx context.Context, token string) (Principal, error)

// Secrets is the encrypted secret store: values go in, never out.
type Secrets interface {
	Put(ctx context.Context, name, value string) error
	Delete(ctx context.Context, name string) error
	Names(ctx context.Context) ([]SecretInfo, error)
}

// Tokens manages API tokens (admin only).
type Tokens interface {
	Create(ctx context.Context, role Role, name string) (plaintext string, t apitypes.TokenInfo, err error)
	List(ctx context.Context) ([]apitypes.TokenInfo, error)
	Revoke(ctx context.Context, id string) error
}

// Config configures the API.
type Config struct {
	Engine       Engine
	Store        statestore.Store // designs, audit log
	Authenticate Authenticator
	Secrets      Secrets   // nil: the secret routes answer 501
	Tokens       Tokens    // nil: the token routes answer 501
	BootData     BootData  // nil: the bootdata route answers 501
	Consoles     Consoles  // nil: the console routes answer 501
	Sites        Sites     // nil: the site routes answer 501
	SiteParts    SiteParts // profiles and RoCE assignments (with Sites)
	SiteProber   SiteProber
	// Layer keeps applied uploads' sources and the design's API-managed
	// layer; Onboardings the onboarding records (nil: those routes answer
	// 501 and uploads are built without a layer).
	Layer       DesignLayer
	Onboardings Onboardings

	// PowerCredentials keeps the per-node BMC credential overrides
	// (powercreds.go; nil: those routes answer 501).
	PowerCredentials PowerCredentials

	// Git is the git remote serve follows (git.go; nil: the git routes
	// answer 404).
	Git GitSync

	// Cluster is the replica group the server is one of (nil: alone, and
	// leading). A standby forwards mutating calls to the leader through
	// ForwardTransport (nil: http.DefaultTransport).
	Cluster          Cluster
	ForwardTransport http.RoundTripper
	// UI is the web dashboard (package ui), served at /ui/ (nil: none).
	UI http.Handler
	// Ready reports whether the drivers answer (nil: not checked).
	// GET /readyz runs it with the state store's check at most once at a
	// time and reuses the result for ReadyTTL (0: DefaultReadyTTL; at most
	// MaxReadyTTL): see readiness.go.
	Ready    func(ctx context.Context) error
	ReadyTTL time.Duration
	// TrustedProxies are CIDRs whose X-Forwarded-For is believed for the
	// audit's remote address.
	TrustedProxies []string
	// ConnsPerSource caps the connections of one source address (an
	// IPv6 /64) that Serve holds open before one of their requests
	// authenticates; more are refused (a 429, or closed under TLS) and
	// closed (0: DefaultConnsPerSource; negative: no cap).
	ConnsPerSource int
	Log            zerolog.Logger
	// Registry receives the API's metrics (nil: a new one).
	Registry *prometheus.Registry
	// EventPoll is how often the event stream looks for new events (default 500ms).
	EventPoll time.Duration
	// StreamMaxLifetime is how long one event stream connection lasts at
	// most before the server closes it; the client reconnects with
	// Last-Event-ID (default DefaultStreamMaxLifetime).
	StreamMaxLifetime time.Duration
	// StreamRecheck is how often an event stream checks its token again;
	// a revoked token's stream ends (default DefaultStreamRecheck).
	StreamRecheck time.Duration
	// AuditRefusalsPerAddress and AuditRefusalsTotal bound the audit
	// records of unauthenticated refusals (401) per minute: per source
	// address and in all (defaults DefaultAuditRefusalsPerAddress and
	// DefaultAuditRefusalsTotal). The rest are counted, not recorded.
	AuditRefusalsPerAddress int
	AuditRefusalsTotal      int

	// Design uploads (validate and apply). DesignLimits bound the YAML of
	// one file and of the whole design, counted while decompressing, and
	// the files of an archive (defaults in ingest/archive); DesignBodyBytes
	// bounds the request body (default DefaultDesignBodyBytes). Over a
	// limit: 413. At most DesignParses uploads are read and parsed at once
	// (default DefaultDesignParses); one more waits DesignWait (default
	// DefaultDesignWait), then gets a 503 with Retry-After.
	DesignLimits    archive.Limits
	DesignBodyBytes int64
	DesignParses    int
	DesignWait      time.Duration
	// UploadDir holds uploads while they are parsed, each in a directory
	// of its own removed when the request ends. When set, New removes what
	// a previous process left there (a crash mid-upload): give each server
	// its own. Empty: the system's temporary directory, never swept.
	UploadDir string

	// Backup takes the online backups GET /admin/store/backup streams
	// (nil: it answers 501); at most Backups at once (default
	// DefaultBackups), one more gets a 503 with Retry-After.
	Backup  StoreBackup
	Backups int

	// IdempotencyWindow is how long the key of a mutating call is
	// remembered (default DefaultIdempotencyWindow); IdempotencyRecords
	// bounds the keys remembered of all principals (default
	// DefaultIdempotencyRecords), IdempotencyPrincipalRecords those of one
	// principal (default DefaultIdempotencyPrincipalRecords): past it a
	// principal's oldest go, not others'.
	IdempotencyWindow           time.Duration
	IdempotencyRecords          int
	IdempotencyPrincipalRecords int
}

// Server is the control API.
type Server struct {
	cfg     Config
	e       *echo.Echo
	log     zerolog.Logger
	metrics *metrics
	routes  []route
	// refusals samples the audit records of unauthenticated refusals.
	refusals  *refusalSampler
	uploads   *uploads
	readiness *readiness // GET /readyz's cached upstream checks (readiness.go)

	mu      sync.Mutex
	designs map[string]*design.Design // by revision ID
	// designMu: one design change (an apply, an onboarding) at a time.
	designMu sync.Mutex
	idem     idemState // Idempotency-Key (idempotency.go)
	// timelines: what GET /tasks/{id}/timeline read so far (timeline.go).
	timelines timelines
}

// Body limits.
const (
	maxBody     = 1 << 20   // JSON requests
	maxTaskBody = 512 << 10 // POST /tasks (its node filter)
)

// Event stream defaults (Config.StreamMaxLifetime, Config.StreamRecheck).
const (
	DefaultStreamMaxLifetime = 15 * time.Minute
	DefaultStreamRecheck     = 5 * time.Second
)

// New builds the API.
func New(cfg Config) (*Server, error) {
	if cfg.Engine == nil || cfg.Store == nil || cfg.Authenticate == nil {
		return nil, errors.New("api: Engine, Store and Authenticate are required")
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	defaults(&cfg)
	cfg.Authenticate = localFirst(cfg.Authenticate) // the local socket's callers (local.go)
	s := &Server{cfg: cfg, log: cfg.Log, designs: map[string]*design.Design{},
		refusals: newRefusalSampler(cfg.AuditRefusalsPerAddress, cfg.AuditRefusalsTotal)}
	if err := s.startUploads(); err != nil {
		return nil, err
	}
	s.metrics = newMetrics(cfg.Registry, s)
	s.readiness = newReadiness(cfg.ReadyTTL, cfg.Log, s.readyChecks)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.IPExtractor = httpx.IPExtractor(cfg.TrustedProxies)
	e.Use(requestID)
	e.Use(s.requestLog().Middleware)
	e.Use(dropUnreadBody) // connlimits.go
	s.routes = s.table()
	for i := range s.routes {
		r := &s.routes[i]
		e.Add(r.Method, r.Path, r.handler, s.middleware(r)...)
	}
	s.mountUI(e) // ui.go
	s.e = e
	return s, nil
}

// defaults fills cfg's unset durations and limits.
func defaults(cfg *Config) {
	for _, d := range []struct {
		p   *time.Duration
		def time.Duration
	}{{&cfg.EventPoll, 500 * time.Millisecond}, {&cfg.StreamMaxLifetime, DefaultStreamMaxLifetime},
		{&cfg.StreamRecheck, DefaultStreamRecheck}} {
		if *d.p <= 0 {
			*d.p = d.def
		}
	}
	if cfg.AuditRefusalsPerAddress <= 0 {
		cfg.AuditRefusalsPerAddress = DefaultAuditRefusalsPerAddress
	}
	if cfg.AuditRefusalsTotal <= 0 {
		cfg.AuditRefusalsTotal = DefaultAuditRefusalsTotal
	}
	designDefaults(cfg)
}

// middleware is a route's chain, outermost first: metrics, the audit (so
// that it sees what authorisation or the body limit refuses), the token
// check, then the body limit (no body is read for a caller without a
// valid token).
func (s *Server) middleware(r *route) []echo.MiddlewareFunc {
	mw := []echo.MiddlewareFunc{s.instrument(r)}
	if r.Mutating || r.Leader {
		mw = append(mw, s.forward(r)) // cluster.go: a standby's go to the leader
	}
	if r.Mutating || r.Audited {
		mw = append(mw, s.audit(r))
	}
	if r.Role != "" {
		mw = append(mw, s.authorize(r), trustConn)
	}
	mw = append(mw, httpx.BodyLimit(s.bodyLimit(r)))
	if r.Mutating {
		mw = append(mw, s.idempotent(r)) // idempotency.go
	}
	return mw
}

func (s *Server) bodyLimit(r *route) int64 {
	switch {
	case r.Upload:
		return s.cfg.DesignBodyBytes
	case r.Path == "/api/v1/tasks" && r.Method == http.MethodPost:
		return maxTaskBody
	}
	return maxBody
}

// Handler is the API as an http.Handler.
func (s *Server) Handler() http.Handler { return s.e }

// Serve serves on ln until ctx ends; with certFile and keyFile it speaks
// TLS. Read, write and idle timeouts are set (the event stream extends its
// own write deadline), the request line and headers are at most
// MaxHeaderBytes (431 past it); at most Config.ConnsPerSource connections of a
// source that have not authenticated a request are open at once
// (connlimits.go).
func (s *Server) Serve(ctx context.Context, ln net.Listener, certFile, keyFile string) error {
	srv := &http.Server{Handler: s.e, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 2 * time.Minute,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute, ErrorLog: nil, ConnContext: connlimit.WithConn,
		MaxHeaderBytes: MaxHeaderBytes}
	tlsOn := certFile != "" || keyFile != ""
	ln = s.limitConns(ln, tlsOn)
	if tlsOn {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return fmt.Errorf("TLS certificate %s / key %s: %w", certFile, keyFile, err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	return serveUntil(ctx, srv, ln)
}

// serveUntil serves srv on ln until ctx ends, then shuts it down
// gracefully (5 s for the requests under way).
func serveUntil(ctx context.Context, srv *http.Server, ln net.Listener) error {
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	}
}

// requestLog logs every request with its request ID and path (never a
// header or body).
func (s *Server) requestLog() httpx.RequestLog {
	return httpx.RequestLog{Log: s.log, Msg: "api request",
		StatusOf:  func(err error) int { st, _ := statusOf(err); return st },
		RequestID: requestIDOf,
		Where:     func(c echo.Context) (string, string) { return "path", clampJSON(shownPath(c), maxAuditPath) },
		Fields: func(c echo.Context, ev *zerolog.Event) *zerolog.Event {
			if id := clientRequestID(c); id != "" {
				ev = ev.Str("client_request_id", id)
			}
			return ev
		}}
}
