// Package apitest is a test fixture: a real control API ([api.Server])
// served over the virtual lab running the example site, with the real
// token and secret stores on the lab's memory state store and a token for
// each role. Every request and answer through it is checked against the
// API's OpenAPI document (see Contract): a test whose calls drift from the
// document fails.
package apitest

import (
	"bytes"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/designlayer"
	"github.com/slipway-dev/slipway/drivers"
	maasdrv "github.com/slipway-dev/slipway/drivers/server/maas"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/onboarding"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/powercreds"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/siteregistry"
	"github.com/slipway-dev/slipway/siteregistry/probe"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// Server is a served control API and what it runs on.
type Server struct {
	URL    string // the httptest server's base URL
	API    *api.Server
	Engine *orchestrator.Engine
	Env    *labrun.Env
	Store  statestore.Store
	// Token holds a real token per role, created through the token store;
	// each is named after its role.
	Token map[api.Role]string
	Node  string        // the example site's first node
	Logs  *bytes.Buffer // the API's log (zerolog JSON, debug level); read it with LogText

	logMu *sync.Mutex
}

// LogText returns what the API has logged so far.
func (s *Server) LogText() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.Logs.String()
}

type options struct {
	seed   int64
	config func(*api.Config)
	faults *maas.Faults
	design func(*design.Design)
	tune   func(*orchestrator.Config)
}

// WithDesign changes the example site before the lab starts (the lab and
// the engine run the changed design).
func WithDesign(f func(*design.Design)) Option {
	return func(o *options) { o.design = f }
}

// WithTune adjusts the engine's configuration before it is built (its
// drivers: a test's network driver).
func WithTune(f func(*orchestrator.Config)) Option {
	return func(o *options) { o.tune = f }
}

// WithFaults makes the virtual lab's MAAS and BMCs fail as f says.
func WithFaults(f *maas.Faults) Option {
	return func(o *options) { o.faults = f }
}

// Option changes what Start builds.
type Option func(*options)

// WithSeed seeds the virtual lab.
func WithSeed(seed int64) Option {
	return func(o *options) { o.seed = seed }
}

// WithConfig lets f change the API's configuration (stream timings,
// audit sampling) before the server is built.
func WithConfig(f func(*api.Config)) Option {
	return func(o *options) { o.config = f }
}

// Start serves the API over a new virtual lab and engine; tb's cleanup
// stops everything.
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	ctx := tb.Context()
	d := designtest.Example(tb)
	if o.design != nil {
		o.design(d)
	}
	store := memory.New()
	env, err := labrun.Start(ctx, labrun.Options{Design: d, Store: store, TimeScale: 0.001, Seed: o.seed, Faults: o.faults, Tune: o.tune})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(env.Close)
	e, err := env.Engine(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)

	tokens := auth.NewStore(store)
	tok := map[api.Role]string{}
	for _, r := range []api.Role{api.RoleViewer, api.RoleOperator, api.RoleAdmin} {
		plain, _, err := tokens.Create(ctx, auth.Role(r), string(r))
		if err != nil {
			tb.Fatal(err)
		}
		tok[r] = plain
	}
	// The API sets the secrets the engine resolves, as under serve: the
	// lab's encrypted store, which holds the example's secrets.
	sec := env.SecretStore

	s := &Server{Engine: e, Env: env, Store: store, Token: tok, Node: d.NodeNames()[0], Logs: &bytes.Buffer{}, logMu: &sync.Mutex{}}
	authenticate, tokenAdmin := api.TokenStore(tokens)
	siteReg := siteregistry.New(store, sec)
	cfg := api.Config{Engine: e, Consoles: e, Store: store, Authenticate: authenticate, Tokens: tokenAdmin,
		Secrets: api.SecretStore(sec), PowerCredentials: powercreds.New(sec), BootData: env.Introspection, Log: zerolog.New(lockedWriter{s}).Level(zerolog.DebugLevel),
		EventPoll: 20 * time.Millisecond, Sites: siteReg, SiteParts: siteReg, Layer: designlayer.New(store), Onboardings: onboarding.New(store),
		SiteProber: probe.Prober{NewServer: func(_ string, c drivers.Config) (drivers.Server, error) { return maasdrv.New(c) }, Sites: siteReg}}
	if o.config != nil {
		o.config(&cfg)
	}
	s.API, err = api.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	contract, err := NewContract()
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(contract.Wrap(s.API.Handler()))
	tb.Cleanup(func() {
		ts.Close()
		for _, f := range contract.Failures() {
			tb.Errorf("API contract (docs/openapi.json): %s", f)
		}
	})
	s.URL = ts.URL
	return s
}

// lockedWriter writes to the Server's Logs under its lock.
type lockedWriter struct{ s *Server }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.s.logMu.Lock()
	defer w.s.logMu.Unlock()
	return w.s.Logs.Write(p)
}
