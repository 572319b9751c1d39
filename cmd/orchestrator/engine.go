package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"

	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/internal/ha"
	"github.com/slipway-dev/slipway/introspection"
	"github.com/slipway-dev/slipway/orchestrator/drivermetrics"
	"github.com/slipway-dev/slipway/orchestrator/record"
	secretstore "github.com/slipway-dev/slipway/secrets/store"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	"gopkg.in/yaml.v3"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	maasdrv "github.com/slipway-dev/slipway/drivers/server/maas"
	"github.com/slipway-dev/slipway/drivers/server/sitemux"
	"github.com/slipway-dev/slipway/internal/siteprobe"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/powercreds"
	"github.com/slipway-dev/slipway/secrets"
	"github.com/slipway-dev/slipway/siteregistry"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// engineConfig is the file `serve --config` reads (YAML). Durations are
// Go durations ("10s", "2m").
type engineConfig struct {
	State         string `yaml:"state"`
	PluginDir     string `yaml:"pluginDir"`
	InstanceID    string `yaml:"instanceID"` // the MAAS agent_name of owned machines
	GlobalLimit   int    `yaml:"globalLimit"`
	MAASLimit     int    `yaml:"provisionerLimit"`
	OOBLimit      int    `yaml:"oobLimit"`
	RetryAttempts int    `yaml:"retryAttempts"`
	RetryBase     string `yaml:"retryBase"`
	RetryMax      string `yaml:"retryMax"`
	DeployRetries int    `yaml:"deployRetries"`

	// PluginSHA256 pins plugins: file name -> SHA-256 (hex); a pinned
	// plugin with another sum is never started (drivers/registry).
	PluginSHA256 map[string]string `yaml:"pluginSHA256"`

	// Lifecycle defaults the Site's spec.lifecycle overrides: failed
	// commissionings retried (the MAAS driver's budget), the erase policy
	// of destroy and decommission, and stage timeouts (stage: duration).
	CommissionRetries *int              `yaml:"commissionRetries"`
	Erase             string            `yaml:"erase"`
	Timeouts          map[string]string `yaml:"timeouts"`
	PollInterval      string            `yaml:"pollInterval"`
	SweepInterval     string            `yaml:"sweepInterval"`
	ReleaseLeaks      bool              `yaml:"releaseLeaks"`
	// BootstrapDeadline: how long a bootstrapping node may stay silent
	// (default 20m).
	BootstrapDeadline string `yaml:"bootstrapDeadline"`
	// TimeScale multiplies the engine's own waits (drivers' hints,
	// back-off, stage timeouts, maxWait) for the virtual lab, whose
	// phases run at the lab's --time-scale; 1 (the default) for a site.
	TimeScale float64 `yaml:"timeScale"`
	// MemoryLimit is Go's soft memory limit for serve (runtime/debug
	// SetMemoryLimit, like GOMEMLIMIT): the garbage collector works harder
	// as the heap nears it, instead of letting it double. 0: none.
	MemoryLimit byteSize `yaml:"memoryLimit"`
	// Control API (serve).
	Listen         string   `yaml:"listen"`         // default 127.0.0.1:8700
	TLSCert        string   `yaml:"tlsCert"`        // with tlsKey: serve HTTPS
	TLSKey         string   `yaml:"tlsKey"`         //
	AdminTokenFile string   `yaml:"adminTokenFile"` // default: admin.token next to the state database
	KeyFile        string   `yaml:"keyFile"`        // secret encryption key; default: slipway.key next to the state database
	TrustedProxies []string `yaml:"trustedProxies"` // CIDRs whose X-Forwarded-For the audit and introspection believe
	// Event stream lifetime and token recheck; audit records of
	// unauthenticated refusals per minute (see apilimits.go).
	EventStreamMaxLifetime  string `yaml:"eventStreamMaxLifetime"`  // default 15m
	EventStreamRecheck      string `yaml:"eventStreamRecheck"`      // default 5s
	AuditRefusalsPerAddress int    `yaml:"auditRefusalsPerAddress"` // default 20
	AuditRefusalsTotal      int    `yaml:"auditRefusalsTotal"`      // default 60
	// Connections of one source address (an IPv6 /64) open at once before
	// one of their requests authenticates, on the control API and on the
	// introspection API (0: the defaults, 64 and 256; -1: no cap).
	ConnsPerSource              int `yaml:"connsPerSource"`
	IntrospectionConnsPerSource int `yaml:"introspectionConnsPerSource"`
	// ReadyCheckTTL: how long GET /readyz reuses its upstream checks
	// (readycheck.go; default 5s).
	ReadyCheckTTL string `yaml:"readyCheckTTL"`
	// Introspection API (what deploying nodes call). Served when
	// introspectionListen is set (serve: default :8701).
	IntrospectionListen      string `yaml:"introspectionListen"`
	IntrospectionURL         string `yaml:"introspectionURL"`         // what nodes call; default: the Site's introspection.url
	IntrospectionKeyFile     string `yaml:"introspectionKeyFile"`     // token key; default: introspection.key next to the state database
	IntrospectionCheckSource bool   `yaml:"introspectionCheckSource"` // a node's calls must come from one of its addresses
	// BMCEndpoints overrides where a node's BMC is reached (host:port), by
	// node, or by node/type for one of its methods (e.g. n1/redfish),
	// e.g. through a NAT or, in tests, the virtual lab's loopback ports.
	BMCEndpoints map[string]string `yaml:"bmcEndpoints"`
	// SecretRefs lists the env: and file: references serve resolves
	// (default none: only secret:NAME; see secretrefs.go).
	SecretRefs secretRefsConfig `yaml:"secretRefs"`
	// Design uploads: size limits, parses at once, upload directory
	// (designlimits.go).
	designConfig `yaml:",inline"`
	// A replica group on etcd (ha.go).
	haConfig `yaml:",inline"`
	// serving: the engine runs under serve, which holds references to
	// SecretRefs (the CLI's local commands resolve every one).
	serving bool
}

func loadEngineConfig(path string) (engineConfig, error) {
	var c engineConfig
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("read config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("config %s: %w (see docs/operations.md for the keys)", path, err)
	}
	return c, nil
}

func duration(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("config %s %q: want a duration like 10s or 2m", field, s)
	}
	return d, nil
}

// durations sets cfg's durations from the file's.
func (c engineConfig) durations(cfg *orchestrator.Config) error {
	for _, f := range []struct {
		name string
		val  string
		dst  *time.Duration
	}{{"retryBase", c.RetryBase, &cfg.Retry.Base}, {"retryMax", c.RetryMax, &cfg.Retry.Max},
		{"pollInterval", c.PollInterval, &cfg.PollInterval}, {"sweepInterval", c.SweepInterval, &cfg.SweepInterval},
		{"bootstrapDeadline", c.BootstrapDeadline, &cfg.BootstrapDeadline}} {
		var err error
		if *f.dst, err = duration(f.name, f.val); err != nil {
			return err
		}
	}
	if err := c.lifecycle(cfg); err != nil {
		return err
	}
	if c.TimeScale < 0 || c.TimeScale > 1 {
		return fmt.Errorf("config timeScale %g: want a number in (0, 1] (1 for a real site)", c.TimeScale)
	}
	if c.TimeScale > 0 && c.TimeScale < 1 {
		cfg.TimeScale = c.TimeScale
		cfg.MaxWait = max(time.Duration(float64(2*time.Minute)*c.TimeScale), 200*time.Millisecond)
	}
	return nil
}

// lifecycle checks the lifecycle defaults and puts them in cfg, with the
// bounds the Site's lifecycle rule applies.
func (c engineConfig) lifecycle(cfg *orchestrator.Config) error {
	if n := c.CommissionRetries; n != nil && (*n < 0 || *n > design.MaxRetries) {
		return fmt.Errorf("config commissionRetries %d: want 0..%d", *n, design.MaxRetries)
	}
	if c.Erase != "" && !drivers.Erase(c.Erase).Valid() {
		return fmt.Errorf("config erase %.40q: use none, quick or secure (or leave it out for the driver's default)", c.Erase)
	}
	cfg.Erase = drivers.Erase(c.Erase)
	for stage, v := range c.Timeouts {
		if !slices.Contains(design.TimeoutStages, stage) {
			return fmt.Errorf("config timeouts.%.40s: no such stage; use one of %s", stage, strings.Join(design.TimeoutStages, ", "))
		}
		d, err := duration("timeouts."+stage, v)
		if err != nil {
			return err
		}
		if d < design.MinStageTimeout || d > design.MaxStageTimeout {
			return fmt.Errorf("config timeouts.%s %s: want %s..%s", stage, d, design.MinStageTimeout, design.MaxStageTimeout)
		}
		if cfg.Timeouts == nil {
			cfg.Timeouts = map[record.Stage]time.Duration{}
		}
		cfg.Timeouts[record.Stage(stage)] = d
	}
	return nil
}

// engineEnv is an engine with what it was built from.
type engineEnv struct {
	engine  *orchestrator.Engine
	store   statestore.Store
	secrets *secretstore.Store     // nil without a key
	sites   *siteregistry.Registry // nil without a key
	prober  siteprobe.Prober
	drivers orchestrator.Drivers
	metrics *prometheus.Registry
	close   func()
	// Under serve --store etcd:// (ha.go): the API's engine (the leading
	// one, else one that only reads), the replica group, and how the
	// standby reaches the leader.
	api     apiEngine
	cluster api.Cluster
	forward http.RoundTripper
}

// driverSettings are the server driver settings the configuration gives.
func (c engineConfig) driverSettings() map[string]string {
	out := map[string]string{}
	if c.InstanceID != "" {
		out[maasdrv.SettingInstance] = c.InstanceID
	}
	if c.CommissionRetries != nil {
		out[maasdrv.SettingCommissionRetries] = strconv.Itoa(*c.CommissionRetries)
	}
	return out
}

// dir holds the keys, the first admin token and uploads: dataDir, else
// the state file's directory.
func (c engineConfig) dir() string {
	if c.DataDir != "" {
		return c.DataDir
	}
	return filepath.Dir(c.State)
}

// keyFile is where the secret encryption key lives.
func (c engineConfig) keyFile() string {
	if c.KeyFile != "" {
		return c.KeyFile
	}
	return filepath.Join(c.dir(), secretstore.DefaultKeyFile)
}

// openEngine opens the state store, builds the drivers the current
// design's Site names (with their secrets resolved) and starts an engine,
// which resumes every unfinished task.
func (a *app) openEngine(ctx context.Context, c engineConfig) (*engineEnv, error) {
	return a.openEngineKey(ctx, c, false)
}

// openEngineKey is openEngine; createKey makes the secret key at first
// start (serve) instead of using it only when it exists.
func (a *app) openEngineKey(ctx context.Context, c engineConfig, createKey bool) (*engineEnv, error) {
	st, err := openStoreOpts(c.State, bolt.Options{Verify: c.serving})
	if err != nil {
		return nil, usageErr(err)
	}
	p, err := a.openParts(ctx, c, st, createKey)
	if err != nil {
		st.Close()
		return nil, err
	}
	p.closers = append(p.closers, func() { st.Close() })
	e, err := p.engine(a, c, st)
	if err == nil {
		err = e.Start(ctx)
	}
	if err != nil {
		closeAll(p.closers)
		return nil, err
	}
	p.closers = append([]func(){e.Close}, p.closers...)
	return &engineEnv{engine: e, store: st, secrets: p.sec, sites: p.sites, prober: p.prober, drivers: p.drv, metrics: p.metrics,
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
	drv      orchestrator.Drivers
	metrics  *prometheus.Registry
	intro    *introspection.Server // nil without introspectionListen
	prober   siteprobe.Prober
	closers  []func() // in order; the caller closes the store
}

// openParts builds the drivers the current design's Site names (their
// secrets resolved) and, when configured, starts the introspection API.
func (a *app) openParts(ctx context.Context, c engineConfig, st statestore.Store, createKey bool) (*engineParts, error) {
	p := &engineParts{st: st}
	fail := func(err error) (*engineParts, error) { closeAll(p.closers); return nil, err }
	var err error
	if p.sec, p.resolver, err = c.secrets(st, createKey); err != nil {
		return fail(usageErr(err))
	}
	if p.design, err = currentDesignIn(ctx, st, c.State); err != nil {
		return fail(usageErr(err))
	}
	reg, err := a.registry(c.PluginDir, c.PluginSHA256)
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
	perSite := sitemux.NewMetrics() // shared by the server drivers built again (rebind.go)
	drv, err := siteDrivers(reg, p.design, c.driverSettings(), p.resolver.Resolve, bind, ds.siteOf, perSite)
	if err != nil {
		return fail(usageErr(err))
	}
	rb, err := newRebinding(ctx, st, p.sites, drv.Server, a.log, func(d *design.Design) (drivers.Server, error) {
		return serverDriver(reg, d, c.driverSettings(), p.resolver.Resolve, bind, ds.siteOf, perSite)
	})
	if err != nil {
		return fail(err)
	}
	drv.Server = rb
	p.metrics = prometheus.NewRegistry()
	p.metrics.MustRegister(perSite.Collectors()...) // several Sites: per-site metrics
	p.drv = drivermetrics.New(p.metrics).Wrap(drv)
	p.prober = siteprobe.Prober{NewServer: reg.Server, Sites: p.sites}
	if c.IntrospectionListen != "" {
		srv, stop, err := a.startIntrospection(c, st, p.design, p.resolver, p.sites)
		if err != nil {
			return fail(usageErr(err))
		}
		p.intro, p.closers = srv, append([]func(){stop}, p.closers...)
	}
	return p, nil
}

// engine is a new engine on the parts, writing to st; Start runs it.
func (p *engineParts) engine(a *app, c engineConfig, st statestore.Store) (*orchestrator.Engine, error) {
	cfg, err := a.orchestratorConfig(c, st, p.drv, p.resolver)
	if err != nil {
		return nil, usageErr(err)
	}
	if p.sites != nil {
		cfg.SiteProfiles, cfg.RoCE = siteProfiles{p.sites}, siteProfiles{p.sites} // siteprofiles.go
	}
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
func (c engineConfig) secrets(st statestore.Store, createKey bool) (*secretstore.Store, secrets.Resolver, error) {
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

// currentDesignIn decodes the store's current design.
func currentDesignIn(ctx context.Context, st statestore.Store, state string) (*design.Design, error) {
	cur, err := st.Current(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w (apply a design first: `orchestrator apply --state %s ROOT`)", err, state)
	}
	d, err := design.DecodeRevision(cur.Design)
	if err != nil {
		return nil, fmt.Errorf("design revision %s: %w", cur.ID, err)
	}
	return d, nil
}

// orchestratorConfig is the engine's configuration from the file's.
func (a *app) orchestratorConfig(c engineConfig, st statestore.Store, drv orchestrator.Drivers, resolver secrets.Resolver) (orchestrator.Config, error) {
	cfg := orchestrator.Config{Store: st, Drivers: drv, Log: a.log, DeployRetries: c.DeployRetries, ReleaseLeaks: c.ReleaseLeaks,
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
func (a *app) startIntrospection(c engineConfig, st statestore.Store, d *design.Design, resolver secrets.Resolver, reg *siteregistry.Registry) (*introspection.Server, func(), error) {
	if err := c.checkConnsPerSource(); err != nil {
		return nil, nil, err
	}
	keyFile := c.introspectionKeyFile()
	key, err := secretstore.LoadOrCreateKey(keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("introspection key %s: %w", keyFile, err)
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
		TrustedProxies: c.TrustedProxies, CheckSource: c.IntrospectionCheckSource, Log: a.log,
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
	fmt.Fprintf(a.stderr, "slipway: introspection API on %s (nodes call %s)\n", ln.Addr(), told)
	return srv, func() { cancel(); <-done }, nil
}

// registryLike is what siteDrivers needs of the driver registry.
type registryLike interface {
	OOB(name string, cfg drivers.Config) (drivers.OOB, error)
	Server(name string, cfg drivers.Config) (drivers.Server, error)
	Network(name string, cfg drivers.Config) (drivers.Network, error)
}

// siteDrivers builds the drivers the Site names; the MAAS API key is the
// Site's secret reference, resolved here.
// base holds the engine configuration's server driver settings, which the
// Site's override.
func siteDrivers(reg registryLike, d *design.Design, base map[string]string, resolve func(string) (drivers.Secret, error), bind binder,
	siteOf func(string) (string, bool), m *sitemux.Metrics) (orchestrator.Drivers, error) {
	var out orchestrator.Drivers
	if d.Site == nil {
		return out, fmt.Errorf("the design has no Site: it names the drivers and how to reach MAAS")
	}
	names := d.Site.Spec.Drivers
	oob, err := reg.OOB(orDefault(names.OOB, "ipmi"), drivers.Config{})
	if err != nil {
		return out, err
	}
	byType, err := profileOOBDrivers(reg, d, d.SiteOOBDriver())
	if err != nil {
		return out, err
	}
	srv, err := serverDriver(reg, d, base, resolve, bind, siteOf, m)
	if err != nil {
		return out, err
	}
	net, err := reg.Network(orDefault(names.Network, "noop"), drivers.Config{})
	if err != nil {
		return out, err
	}
	return orchestrator.Drivers{OOB: oob, OOBByType: byType, Server: srv, Network: net}, nil
}

// binder returns the endpoint of the enabled site record called name
// (sites.Registry.Binding); its error wraps sites.ErrNotFound when there
// is none.
type binder func(name string) (siteregistry.Endpoint, error)

// siteEP is where a Site's server driver reaches its provisioner.
type siteEP struct {
	url   string
	key   *drivers.Secret
	limit int    // the site record's policy.max_concurrent (0: none)
	erase string // the site record's policy.erase ("": none)
	// skipBMC is the site record's policy.skip_bmc_config (nil: none).
	skipBMC *bool
}

// siteEndpoint is the MAAS URL and API key of a Site's server driver: its
// site record's when one has the Site's name (the design then names
// neither: the endpoint and the key are the record's, never the
// design's), else the design's maas.url and maas.apiKey.
func siteEndpoint(site *design.Site, bind binder, resolve func(string) (drivers.Secret, error)) (siteEP, error) {
	m := site.Spec.MAAS
	if bind != nil {
		ep, err := bind(site.Metadata.Name)
		switch {
		case err == nil && (m.URL != "" || m.APIKey != ""):
			return siteEP{}, fmt.Errorf("the Site %s is bound to the site record %s: its MAAS URL and API key are the record's; remove maas.url and maas.apiKey from the design",
				site.Metadata.Name, ep.Record.ID)
		case err == nil:
			return siteEP{url: ep.Record.URL, key: &ep.APIKey, limit: ep.Record.Policy.MaxConcurrent, erase: ep.Record.Policy.Erase,
				skipBMC: ep.Record.Policy.SkipBMCConfig}, nil
		case !errors.Is(err, siteregistry.ErrNotFound):
			return siteEP{}, fmt.Errorf("the Site %s: %w", site.Metadata.Name, err)
		}
	}
	if m.APIKey == "" {
		return siteEP{url: m.URL}, nil
	}
	key, err := resolve(m.APIKey)
	if err != nil {
		return siteEP{}, fmt.Errorf("the Site's maas.apiKey %s: %w", m.APIKey, err)
	}
	return siteEP{url: m.URL, key: &key}, nil
}

// profileOOBDrivers builds the OOB drivers the design's hardware profiles
// name (oob.type, oob.fallback.type) besides the Site's, by name.
func profileOOBDrivers(reg registryLike, d *design.Design, site string) (map[string]drivers.OOB, error) {
	out := map[string]drivers.OOB{}
	for _, name := range slices.Sorted(maps.Keys(d.HardwareProfiles)) {
		o := d.HardwareProfiles[name].Spec.OOB
		types := []string{o.Type}
		if o.Fallback != nil {
			types = append(types, o.Fallback.Type)
		}
		for _, typ := range types {
			if typ == "" || typ == site || out[typ] != nil {
				continue
			}
			drv, err := reg.OOB(typ, drivers.Config{})
			if err != nil {
				return nil, fmt.Errorf("hardware profile %s names the OOB driver %s: %w", name, typ, err)
			}
			out[typ] = drv
		}
	}
	return out, nil
}

// serveFlags are serve's flags (the configuration file's keys win unless
// a flag is given).
type serveFlags struct {
	cfgFile, state, dir, listen, tlsCert, tlsKey, introListen, cpuProfile, pprofAddr string
	// a replica group on etcd (ha.go)
	store, etcdPrefix, etcdCA, etcdCert, etcdKey, replicaID, advertise, dataDir string
	leaseTTL                                                                    int
}

func (a *app) serveCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [--config FILE] [--listen ADDR] [--introspection-listen ADDR] [--tls-cert FILE --tls-key FILE] [--cpu-profile FILE]",
		Short: "Run the engine and the control API",
		Long: `Serve runs the deploy engine and the control API (/api/v1) until
interrupted. At start it resumes every task that was queued or running when
the last process stopped (each node from its last checkpoint), runs the
leak and drift sweep (again every sweepInterval), creates the secret
encryption key if there is none, and writes a first admin token to a 0600
file when no admin token exists yet.

Besides --listen, the API answers on the Unix socket STATE.sock beside the
state database (mode 0600), where the local CLI's commands reach it while
serve holds the database: the caller's OS user (the server's own, or root)
is an admin there, without a token.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.config(cmd)
			if err != nil {
				return err
			}
			stop, err := startProfiling(f.pprofAddr, f.cpuProfile)
			if err != nil {
				return usageErr(err)
			}
			defer stop()
			return a.serve(cmd.Context(), c)
		},
	}
	cmd.Flags().StringVar(&f.cfgFile, "config", "", "engine configuration file (YAML; see docs/operations.md)")
	cmd.Flags().StringVar(&f.listen, "listen", "127.0.0.1:8700", "address of the control API")
	cmd.Flags().StringVar(&f.introListen, "introspection-listen", ":8701", "address of the introspection API (deploying nodes call it)")
	cmd.Flags().StringVar(&f.tlsCert, "tls-cert", "", "TLS certificate file (PEM)")
	cmd.Flags().StringVar(&f.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	cmd.Flags().StringVar(&f.cpuProfile, "cpu-profile", "", "write a CPU profile of the process to FILE until it stops (runtime/pprof)")
	cmd.Flags().StringVar(&f.pprofAddr, "pprof", "", "serve net/http/pprof (heap, goroutines, CPU) on this loopback address, e.g. 127.0.0.1:6060")
	stateFlag(cmd, &f.state)
	pluginDirFlag(cmd, &f.dir)
	f.haFlags(cmd)
	return cmd
}

// haFlags are the flags of a replica group on etcd.
func (f *serveFlags) haFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.store, "store", "", "keep the state in etcd instead of --state: etcd://HOST:PORT[,HOST:PORT...]; several serves on one store form a replica group (one leader runs the engine)")
	fl.StringVar(&f.etcdPrefix, "etcd-prefix", "", "the key prefix of the state in etcd (default /slipway/)")
	fl.StringVar(&f.etcdCA, "etcd-ca", "", "CA certificate (PEM) of etcd's client TLS")
	fl.StringVar(&f.etcdCert, "etcd-cert", "", "client certificate (PEM) presented to etcd")
	fl.StringVar(&f.etcdKey, "etcd-key", "", "client key (PEM) of --etcd-cert")
	fl.IntVar(&f.leaseTTL, "lease-ttl", 0, "seconds a dead leader's lease lasts before a standby takes over (2..300, default 10)")
	fl.StringVar(&f.replicaID, "replica-id", "", "this replica's name in the group (default: host name and API port)")
	fl.StringVar(&f.advertise, "advertise-url", "", "where the other replicas reach this one's control API (default: from --listen)")
	fl.StringVar(&f.dataDir, "data-dir", "", "directory of the keys, the first admin token, the local socket and uploads (default: --state's directory)")
}

// config is serve's configuration: the file's, a flag given on the
// command line (or a key the file leaves out) taking the flag's value.
func (f *serveFlags) config(cmd *cobra.Command) (engineConfig, error) {
	c, err := loadEngineConfig(f.cfgFile)
	if err != nil {
		return c, usageErr(err)
	}
	for _, fl := range []struct {
		flag string
		dst  *string
		val  string
	}{{"state", &c.State, f.state}, {"plugin-dir", &c.PluginDir, f.dir}, {"listen", &c.Listen, f.listen},
		{"tls-cert", &c.TLSCert, f.tlsCert}, {"tls-key", &c.TLSKey, f.tlsKey}, {"introspection-listen", &c.IntrospectionListen, f.introListen},
		{"store", &c.Store, f.store}, {"etcd-prefix", &c.EtcdPrefix, f.etcdPrefix}, {"etcd-ca", &c.EtcdCA, f.etcdCA},
		{"etcd-cert", &c.EtcdCert, f.etcdCert}, {"etcd-key", &c.EtcdKey, f.etcdKey}, {"replica-id", &c.ReplicaID, f.replicaID},
		{"advertise-url", &c.AdvertiseURL, f.advertise}, {"data-dir", &c.DataDir, f.dataDir}} {
		if *fl.dst == "" || cmd.Flags().Changed(fl.flag) {
			*fl.dst = fl.val
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return c, usageErr(fmt.Errorf("TLS needs both --tls-cert and --tls-key"))
	}
	if cmd.Flags().Changed("lease-ttl") || c.LeaseTTL == 0 {
		c.LeaseTTL = f.leaseTTL
	}
	if c.LeaseTTL != 0 && (c.LeaseTTL < 2 || c.LeaseTTL > 300) {
		return c, usageErr(fmt.Errorf("leaseTTL %d: want whole seconds in 2..300", c.LeaseTTL))
	}
	c.serving = true
	if c.MemoryLimit > 0 {
		debug.SetMemoryLimit(int64(c.MemoryLimit))
	}
	return c, nil
}

// serve runs the engine and the API (TCP and the local socket) until ctx
// ends.
func (a *app) serve(ctx context.Context, c engineConfig) error {
	if c.Store != "" {
		return a.serveHA(ctx, c) // ha.go
	}
	env, err := a.openEngineKey(ctx, c, true)
	if err != nil {
		return err
	}
	defer env.close()
	tokenFile := c.adminTokenFile()
	if created, err := auth.NewStore(env.store).EnsureAdmin(ctx, tokenFile); err != nil {
		return usageErr(err)
	} else if created {
		fmt.Fprintf(a.stderr, "first start: an admin token was written to %s (mode 0600); create others with `orchestrator token create`\n", tokenFile)
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return usageErr(fmt.Errorf("listen on %s: %w (another process there? use --listen)", c.Listen, err))
	}
	id, url := c.identity(ln.Addr())
	env.cluster = ha.Lone{Name: id, URL: url, Path: c.State, Started: time.Now().UTC().Truncate(time.Millisecond)}
	srv, err := a.newAPI(c, env)
	if err != nil {
		ln.Close()
		return err
	}
	local, err := listenLocal(localSocket(c.State)) // localtrust.go
	if err != nil {
		ln.Close()
		return usageErr(err)
	}
	scheme := "http"
	if c.TLSCert != "" {
		scheme = "https"
	}
	fmt.Fprintf(a.stderr, "slipway: engine on %s; control API on %s://%s/api/v1 and %s (Ctrl-C stops; tasks resume at the next start)\n",
		c.State, scheme, ln.Addr(), localSocket(c.State))
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Serve(gctx, ln, c.TLSCert, c.TLSKey) })
	g.Go(func() error { return srv.ServeLocal(gctx, local, localName) })
	if err := g.Wait(); err != nil {
		return usageErr(err)
	}
	return nil
}

// ready probes the provisioner and the network driver.
func ready(d orchestrator.Drivers) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if d.Server != nil {
			info, err := d.Server.ProbeSite(ctx)
			if err != nil {
				return err
			}
			if !info.Reachable || !info.Authenticated {
				return fmt.Errorf("the provisioner is not reachable or refuses the credentials")
			}
		}
		if d.Network != nil {
			if _, err := d.Network.Probe(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

type endpoint struct {
	host string
	port int
}

func parseEndpoints(m map[string]string) (map[string]endpoint, error) {
	out := make(map[string]endpoint, len(m))
	for node, hp := range m {
		h, p, err := net.SplitHostPort(hp)
		port, perr := strconv.Atoi(p)
		if err != nil || perr != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("config bmcEndpoints.%s %q: want host:port", node, hp)
		}
		out[node] = endpoint{h, port}
	}
	return out, nil
}
