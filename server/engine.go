package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/server/sitemux"
	"github.com/slipway-dev/slipway/firmwarestore"
	"github.com/slipway-dev/slipway/introspection"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/drivermetrics"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/powercreds"
	"github.com/slipway-dev/slipway/secrets"
	secretstore "github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/siteregistry"
	"github.com/slipway-dev/slipway/siteregistry/probe"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// Env is an engine with what it was built from.
type Env struct {
	engine  *orchestrator.Engine
	store   statestore.Store
	secrets *secretstore.Store     // nil without a key
	sites   *siteregistry.Registry // nil without a key
	prober  probe.Prober
	drivers orchestrator.Drivers
	metrics *prometheus.Registry
	close   func()
	// Under serve --store etcd:// (servegroup.go): the API's engine (the leading
	// one, else one that only reads), the replica group, and how the
	// standby reaches the leader.
	api     apiEngine
	cluster api.Cluster
	forward http.RoundTripper
	git     api.GitSync // serve's git source (gitsource.go), nil without one
}

// OpenEngine opens the state store, builds the drivers the current
// design's Site names (with their secrets resolved) and starts an engine,
// which resumes every unfinished task: what a CLI command runs in its own
// process when no server holds the state. The caller closes the Env.
func OpenEngine(ctx context.Context, c Config, o Options) (*Env, error) {
	return o.openEngineKey(ctx, c, false)
}

// Close stops the engine and closes what it was built from.
func (e *Env) Close() { e.close() }

// openEngineKey is openEngine; createKey makes the secret key at first
// start (serve) instead of using it only when it exists.
func (o Options) openEngineKey(ctx context.Context, c Config, createKey bool) (*Env, error) {
	st, err := bolt.Open(c.State, bolt.Options{Verify: c.serving})
	if err != nil {
		return nil, err
	}
	p, err := o.openParts(ctx, c, st, createKey)
	if err != nil {
		st.Close()
		return nil, err
	}
	p.closers = append(p.closers, func() { st.Close() })
	e, err := p.engine(o, c, st)
	if err == nil {
		err = e.Start(ctx)
	}
	if err != nil {
		closeAll(p.closers)
		return nil, err
	}
	p.closers = append([]func(){e.Close}, p.closers...)
	return &Env{engine: e, store: st, secrets: p.sec, sites: p.sites, prober: p.prober, drivers: p.drv, metrics: p.metrics,
		close: func() { closeAll(p.closers) }}, nil
}

// engineParts are what an engine is built from besides its store, built
// once per process: under serve --store etcd:// the replica builds an
// engine on them each time it wins the leadership.
type engineParts struct {
	st       statestore.Store // what the parts themselves read and write
	sec      *secretstore.Store
	resolver secrets.Resolver
	sites    *siteregistry.Registry
	design   *design.Design
	rev      string // design's revision ID ("": the empty design)
	drv      orchestrator.Drivers
	metrics  *prometheus.Registry
	intro    *introspection.Server // nil without introspectionListen
	firmware *firmwarestore.Store  // nil without firmwareDir or firmwareListen (firmware.go)
	prober   probe.Prober
	closers  []func() // in order; the caller closes the store
}

// openParts builds the drivers the current design's Site names (their
// secrets resolved) and, when configured, starts the introspection API.
func (o Options) openParts(ctx context.Context, c Config, st statestore.Store, createKey bool) (*engineParts, error) {
	p := &engineParts{st: st}
	fail := func(err error) (*engineParts, error) { closeAll(p.closers); return nil, err }
	var err error
	if p.sec, p.resolver, err = c.secrets(st, createKey); err != nil {
		return fail(err)
	}
	var empty bool
	if p.design, p.rev, empty, err = currentOrEmpty(ctx, c, st); err != nil { // nodesign.go
		return fail(err)
	}
	reg, err := o.registry(c.PluginDir, c.PluginSHA256)
	if err != nil {
		return fail(err)
	}
	p.closers = append(p.closers, func() { reg.Close() })
	var bind binder
	if p.sec != nil {
		p.sites = siteregistry.New(st, p.sec)
		bind = func(name string) (siteregistry.Endpoint, error) { return p.sites.Binding(ctx, name) }
	}
	ds := &designSites{st: st}
	if !empty { // the multi-Site driver's node-to-Site map reads the copy decoded above until the design changes
		ds.rev, ds.d = p.rev, p.design
	}
	perSite := sitemux.NewMetrics() // shared by the server drivers built again (rebind.go)
	var drv orchestrator.Drivers
	if empty {
		drv, err = emptyDrivers(reg)
	} else {
		drv, err = siteDrivers(reg, p.design, c.driverSettings(), p.resolver.Resolve, bind, ds.siteOf, perSite)
	}
	if err != nil {
		return fail(err)
	}
	rb, err := newRebinding(ctx, st, p.sites, drv.Server, o.Log, func(d *design.Design) (drivers.Server, error) {
		return serverDriver(reg, d, c.driverSettings(), p.resolver.Resolve, bind, ds.siteOf, perSite)
	})
	if err != nil {
		return fail(err)
	}
	drv.Server = rb
	rev, _ := statestore.CurrentID(ctx, st)                                                               // "" before the first design
	drv.Network = newNetRebinding(drv.Network, p.design, rev, st, o.Log, p.resolver.Resolve, reg.Network) // netrebind.go
	p.metrics = prometheus.NewRegistry()
	p.metrics.MustRegister(perSite.Collectors()...) // several Sites: per-site metrics
	p.drv = drivermetrics.New(p.metrics).Wrap(drv)
	p.prober = probe.Prober{NewServer: reg.Server, Sites: p.sites}
	if c.IntrospectionListen != "" {
		srv, stop, err := o.startIntrospection(c, st, p.design, p.resolver, p.sites)
		if err != nil {
			return fail(err)
		}
		p.intro, p.closers = srv, append([]func(){stop}, p.closers...)
	}
	fw, stop, err := o.startFirmware(c)
	if err != nil {
		return fail(err)
	}
	if fw != nil {
		p.firmware, p.closers = fw, append([]func(){stop}, p.closers...)
	}
	return p, nil
}

// engine is a new engine on the parts, writing to st; Start runs it.
func (p *engineParts) engine(o Options, c Config, st statestore.Store) (*orchestrator.Engine, error) {
	cfg, err := o.orchestratorConfig(c, st, p.drv, p.resolver)
	if err != nil {
		return nil, err
	}
	if p.sites != nil {
		cfg.SiteProfiles, cfg.RoCE = siteProfiles{p.sites}, siteProfiles{p.sites} // siteprofiles.go
	}
	cfg.Design, cfg.DesignRev = p.design, p.rev // one decoded copy of it in the process
	if p.sec != nil {
		cfg.BMCOverride = powercreds.New(p.sec).BMC // written through the API (api/powercreds.go)
	}
	if n := len(p.design.SiteNames()); n > 1 && c.MAASLimit == 0 {
		// Several sites: each has its own limit (drivers/server/sitemux); the
		// engine's must not be the narrower one.
		cfg.Limits.Provisioner = sitemux.DefaultLimit * n
	}
	if p.intro != nil {
		cfg.Bootstrap = p.intro
	}
	if p.firmware != nil {
		cfg.Firmware = p.firmware
	}
	if cfg.Images, err = c.imageStore(); err != nil { // images.go
		return nil, err
	}
	return orchestrator.New(cfg)
}

// closeAll runs the closers in order.
func closeAll(closers []func()) {
	for _, c := range closers {
		c()
	}
}

// secrets opens the encrypted secret store when a key exists
// (SLIPWAY_SECRET_KEY or the key file; createKey makes the file) and the
// resolver of the design's references: the store, then the environment.
func (c Config) secrets(st statestore.Store, createKey bool) (*secretstore.Store, secrets.Resolver, error) {
	var sec *secretstore.Store
	var keys [][]byte
	if _, err := os.Stat(c.keyFile()); createKey || err == nil || os.Getenv(secretstore.KeyEnv) != "" {
		key, src, err := secretstore.LoadKey(c.keyFile())
		if err != nil {
			return nil, secrets.Resolver{}, fmt.Errorf("secret key %s: %w", src, err)
		}
		if sec, err = secretstore.New(st, key); err != nil {
			return nil, secrets.Resolver{}, err
		}
		keys = append(keys, key)
	}
	resolver, err := c.resolver(sec, keys)
	return sec, resolver, err
}

// CurrentDesign decodes the store's current design, read only (its nodes
// share their equal parts: design.DecodeShared).
func CurrentDesign(ctx context.Context, st statestore.Store, state string) (*design.Design, error) {
	d, _, err := currentDesignRev(ctx, st, state)
	return d, err
}

// currentDesignRev is CurrentDesign and its revision ID, from one read.
func currentDesignRev(ctx context.Context, st statestore.Store, state string) (*design.Design, string, error) {
	cur, err := st.Current(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("%w (apply a design first: `orchestrator apply --state %s ROOT`)", err, state)
	}
	d, err := design.DecodeShared(cur.Design) // read only, held for the run: its nodes share their parts
	if err != nil {
		return nil, "", fmt.Errorf("design revision %s: %w", cur.ID, err)
	}
	return d, cur.ID, nil
}

// orchestratorConfig is the engine's configuration from the file's.
func (o Options) orchestratorConfig(c Config, st statestore.Store, drv orchestrator.Drivers, resolver secrets.Resolver) (orchestrator.Config, error) {
	cfg := orchestrator.Config{Store: st, Drivers: drv, Log: o.Log, DeployRetries: c.DeployRetries, ReleaseLeaks: c.ReleaseLeaks,
		Secrets: resolver.ResolveContext,
		Limits:  orchestrator.Limits{Global: c.GlobalLimit, Provisioner: c.MAASLimit, OOB: c.OOBLimit}}

	cfg.Retry.Attempts = c.RetryAttempts
	if len(c.BMCEndpoints) > 0 {
		eps, err := parseEndpoints(c.BMCEndpoints)
		if err != nil {
			return cfg, err
		}
		cfg.BMCEndpoint = func(typ string, b drivers.BMC) drivers.BMC {
			ep, ok := eps[b.Node+"/"+typ] // one method of the node's BMC
			if !ok {
				ep, ok = eps[b.Node]
			}
			if ok {
				b.Address, b.Port = ep.host, ep.port
			}
			return b
		}
	}
	return cfg, c.durations(&cfg)
}

// startIntrospection serves the introspection API: its key (created at
// first use, 0600) signs the nodes' tokens. A node is told the Site's
// introspection.url in the design revision it deploys with (read at each
// deploy, so a design applied later counts without a restart), else the
// configured URL, else the listener's address.
func (o Options) startIntrospection(c Config, st statestore.Store, d *design.Design, resolver secrets.Resolver, reg *siteregistry.Registry) (*introspection.Server, func(), error) {
	keyFile := c.introspectionKeyFile()
	key, err := secretstore.LoadOrCreateKey(keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("introspection key %s (config introspectionKeyFile): %w", keyFile, err)
	}
	ln, err := net.Listen("tcp", c.IntrospectionListen)
	if err != nil {
		return nil, nil, fmt.Errorf("introspection API: listen on %s: %w (set introspectionListen)", c.IntrospectionListen, err)
	}
	url := c.IntrospectionURL // the fallback: a revision's Site URL wins (introspection.Config.SiteURL)
	if url == "" {
		url = "http://" + ln.Addr().String()
	}
	told := url
	if d.Site != nil && d.Site.Spec.Introspection.URL != "" {
		told = d.Site.Spec.Introspection.URL + ", the current design's Site's; else " + url
	}
	cfg := introspection.Config{Store: st, URL: strings.TrimSuffix(url, "/"), SiteURL: true, Key: key,
		TrustedProxies: c.TrustedProxies, CheckSource: c.IntrospectionCheckSource, Log: o.Log,
		ConnsPerSource: c.IntrospectionConnsPerSource,
		Secret: func(ctx context.Context, name string) (string, error) {
			v, err := resolver.ResolveContext(ctx, "secret:"+name)
			return v.Reveal(), err
		}}
	if reg != nil { // the RoCE addresses of nodes whose site profile enables RoCE, in network-config
		sp := siteProfiles{reg}
		cfg.RoCE = func(ctx context.Context, d *design.Design, n *design.Node) ([]driverspec.RoCEAddress, error) {
			return orchestrator.NodeRoCE(ctx, sp, sp, d, n)
		}
	}
	srv, err := introspection.New(cfg)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ctx, ln) }()
	fmt.Fprintf(o.Stderr, "slipway: introspection API on %s (nodes call %s)\n", ln.Addr(), told)
	return srv, func() { cancel(); <-done }, nil
}
