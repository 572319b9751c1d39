// Package labrun is the embedded lab with the engine in one process: it
// starts the virtual lab (sim/lab) from a design, stores the design as a
// revision, builds the real drivers (IPMI and Redfish against the lab's
// BMCs, MAAS against the lab's MAAS, the no-op network driver unless
// given another), the introspection API and engines on one state store,
// and audits a run from the lab's own state. It is composition, not a utility: what `make demo`,
// `orchestrator demo` and `orchestrator lab`, the benchmarks
// (cmd/slipway-bench) and the end-to-end tests run.
package labrun

import (
	"context"
	"crypto/rand"
	"fmt"
	stdnet "net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/network/noop"
	"github.com/slipway-dev/slipway/drivers/oob/ipmi"
	"github.com/slipway-dev/slipway/drivers/oob/redfish"
	maasdrv "github.com/slipway-dev/slipway/drivers/server/maas"
	"github.com/slipway-dev/slipway/drivers/server/sitemux"
	"github.com/slipway-dev/slipway/firmwarestore"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/internal/gensite"
	"github.com/slipway-dev/slipway/introspection"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/powercreds"
	"github.com/slipway-dev/slipway/secrets"
	secretstore "github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore"
)

// Options configure an Env.
type Options struct {
	Design    *design.Design
	Store     statestore.Store
	TimeScale float64 // the lab's and the engine's (default 0.002)
	Faults    *maas.Faults
	Seed      int64
	// BootstrapFail scripts a failing boot action: node → action.
	BootstrapFail map[string]string
	Log           zerolog.Logger
	// Tune adjusts each engine's configuration before it is built.
	Tune func(*orchestrator.Config)
	// Secrets are stored in Store's encrypted secret store before the
	// lab starts, as an operator stores them (`orchestrator secret
	// set`); nil stores DefaultSecrets. The engine, the introspection API
	// and the lab's BMCs resolve secret references from that store, then
	// from the environment, like `orchestrator serve`: a secret set
	// nowhere is missing in the lab too.
	Secrets map[string]string
	// SecretKey encrypts the secret store (nil: a random key).
	SecretKey []byte
	// Network is the engine's network driver (nil: noop, the switch
	// ports left alone); the demo's fabric passes the ovs driver.
	Network drivers.Network
}

// DefaultSecrets are the secrets the example site and generated sites
// need: the BMC password, which the lab's BMCs take, and a kubeadm join
// token of the shape kubeadm gives. The lab's MAAS API key is stored
// besides (see Start).
func DefaultSecrets() map[string]string {
	return map[string]string{"bmc-admin": lab.DefaultBMCPassword, "kubeadm-join-token": "lab0ab.0123456789abcdef"}
}

// Env is a running lab with the drivers an engine needs.
type Env struct {
	Lab      *lab.Lab
	Store    statestore.Store
	Revision string
	Drivers  orchestrator.Drivers
	// Introspection is the introspection API the lab's node agents call
	// (on 127.0.0.1; the engine's Bootstrapper).
	Introspection *introspection.Server
	// SecretStore holds the lab's secrets (Options.Secrets and the MAAS
	// API key), encrypted in Store.
	SecretStore *secretstore.Store
	// Firmware is the lab's firmware store (firmware.go), the engine's
	// Config.Firmware.
	Firmware      *firmwarestore.Store
	closeFirmware func()
	// Images is the lab's OS image store (images.go), the engine's
	// Config.Images; imageDir holds it and the MAAS regions' uploads.
	Images   *firmwarestore.Store
	imageDir string
	resolver secrets.Resolver
	opts     Options
	stop     context.CancelFunc
}

// Start starts the lab and stores the design.
func Start(ctx context.Context, o Options) (*Env, error) {
	if o.TimeScale <= 0 {
		o.TimeScale = 0.002
	}
	env := &Env{Store: o.Store, opts: o}
	if err := env.storeSecrets(ctx, o); err != nil {
		return nil, err
	}
	if err := env.startLab(ctx, o); err != nil {
		return nil, err
	}
	lb := env.Lab
	info := lb.Info()
	// The lab's BMCs answer on loopback within a millisecond: a lost
	// reply is known quickly (real BMCs get the driver's defaults).
	oob, err := ipmi.New(drivers.Config{Settings: map[string]string{ipmi.SettingTimeout: "150ms", ipmi.SettingRetries: "2",
		ipmi.SettingBackoff: "20ms", ipmi.SettingPollInterval: "20ms", ipmi.SettingPowerWait: "2s",
		ipmi.SettingMaxConcurrent: "64"}})
	if err != nil {
		env.Close()
		return nil, err
	}
	key, err := env.maasKey(ctx, info.APIKey)
	if err != nil {
		env.Close()
		return nil, err
	}
	srv, err := serverDriver(o.Design, info, key)
	if err != nil {
		env.Close()
		return nil, err
	}
	net := o.Network
	if net == nil {
		if net, err = noop.New(drivers.Config{}); err != nil {
			env.Close()
			return nil, err
		}
	}
	// The lab's Redfish services answer on loopback at once: short waits.
	rf, err := redfish.New(drivers.Config{Settings: map[string]string{redfish.SettingTimeout: "5s",
		redfish.SettingGracefulWait: "2s", redfish.SettingPollInterval: "20ms"}})
	if err != nil {
		env.Close()
		return nil, err
	}
	env.Drivers = orchestrator.Drivers{OOB: oob, OOBByType: map[string]drivers.OOB{redfish.Name: rf}, Server: srv, Network: net}
	if err := env.startIntrospection(o); err != nil {
		env.Close()
		return nil, err
	}
	if err := env.startFirmware(o.Design); err != nil {
		env.Close()
		return nil, err
	}
	if err := env.startImages(o.Design); err != nil {
		env.Close()
		return nil, err
	}
	return env, nil
}

// startLab starts the lab, its MAAS regions' uploads in the run's image
// directory (images.go), and stores the design as a revision; on an
// error nothing is left running.
func (env *Env) startLab(ctx context.Context, o Options) error {
	imageDir, err := makeImageDir()
	if err != nil {
		return err
	}
	lb, err := lab.Start(ctx, lab.Config{Design: o.Design, TimeScale: o.TimeScale, Faults: o.Faults, Seed: o.Seed,
		Secrets: env.reveal, BootstrapFail: o.BootstrapFail, Log: o.Log, ImageDir: filepath.Join(imageDir, imageMAASDir)})
	if err != nil {
		_ = os.RemoveAll(imageDir)
		return fmt.Errorf("start the lab: %w", err)
	}
	fail := func(err error) error {
		lb.Close()
		_ = os.RemoveAll(imageDir)
		return err
	}
	raw, id, err := o.Design.Canonical()
	if err != nil {
		return fail(err)
	}
	if _, err := o.Store.PutRevision(ctx, statestore.Revision{ID: id, Design: raw, Counts: o.Design.Counts(), Roots: []string{"(lab)"}}); err != nil {
		return fail(fmt.Errorf("store the design: %w", err))
	}
	env.Lab, env.imageDir, env.Revision = lb, imageDir, id
	return nil
}

// startIntrospection serves the introspection API on a loopback port
// for the lab's node agents.
func (env *Env) startIntrospection(o Options) error {
	ln, err := stdnet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("introspection listener: %w", err)
	}
	key := make([]byte, introspection.KeyLen)
	if _, err := rand.Read(key); err != nil {
		ln.Close()
		return err
	}
	srv, err := introspection.New(introspection.Config{Store: o.Store, URL: "http://" + ln.Addr().String(), Key: key,
		Secret: func(ctx context.Context, name string) (string, error) {
			v, err := env.resolver.ResolveContext(ctx, "secret:"+name)
			return v.Reveal(), err
		}, Log: o.Log})
	if err != nil {
		ln.Close()
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	env.Introspection, env.stop = srv, cancel
	go func() { _ = srv.Serve(ctx, ln) }()
	return nil
}

// storeSecrets opens the encrypted secret store in the state store and
// stores the options' secrets in it.
func (env *Env) storeSecrets(ctx context.Context, o Options) error {
	key := o.SecretKey
	if key == nil {
		key = make([]byte, secretstore.KeySize)
		if _, err := rand.Read(key); err != nil {
			return err
		}
	}
	st, err := secretstore.New(o.Store, key)
	if err != nil {
		return fmt.Errorf("the lab's secret store: %w", err)
	}
	vals := o.Secrets
	if vals == nil {
		vals = DefaultSecrets()
	}
	for name, v := range vals {
		if err := st.Put(ctx, name, v); err != nil {
			return fmt.Errorf("the lab's secrets: %w", err)
		}
	}
	env.SecretStore, env.resolver = st, secrets.Resolver{Store: st}
	return nil
}

// reveal resolves a reference for the lab's BMCs (a BMC whose password
// reference resolves nowhere keeps the lab's default password).
func (env *Env) reveal(ref string) (string, error) {
	v, err := env.resolver.Resolve(ref)
	return v.Reveal(), err
}

// maasKey stores the lab's MAAS API key as the secret the design's Site
// names (maas.apiKey: secret:NAME; maas-api-key when it names none) and
// reads it back as the engine's CLI does.
func (env *Env) maasKey(ctx context.Context, apiKey string) (drivers.Secret, error) {
	name := "maas-api-key"
	if d := env.opts.Design; d != nil && d.Site != nil {
		if ref, err := design.ParseSecretRef(d.Site.Spec.MAAS.APIKey); err == nil && ref.Scheme == "secret" {
			name = strings.ToLower(ref.Name)
		}
	}
	if err := env.SecretStore.Put(ctx, name, apiKey); err != nil {
		return drivers.Secret{}, fmt.Errorf("the lab's MAAS API key: %w", err)
	}
	return env.resolver.ResolveContext(ctx, "secret:"+name)
}

// Config returns an engine configuration for the lab: the BMCs at the
// lab's loopback ports, time scaled like the lab, quick polling.
func (env *Env) Config() orchestrator.Config {
	s := env.opts.TimeScale
	cfg := orchestrator.Config{
		Store:         env.Store,
		Drivers:       env.Drivers,
		Secrets:       env.resolver.ResolveContext,
		BMCEndpoint:   env.Lab.Endpoint,
		BMCOverride:   powercreds.New(env.SecretStore).BMC,
		Bootstrap:     env.Introspection,
		Firmware:      env.Firmware,
		Images:        env.Images,
		TimeScale:     s,
		PollInterval:  max(time.Duration(float64(5*time.Second)*s), 20*time.Millisecond),
		MaxWait:       max(time.Duration(float64(2*time.Minute)*s), 200*time.Millisecond),
		SweepInterval: -1,
		Limits:        orchestrator.Limits{Global: 128, Provisioner: 64, OOB: 64},
		Log:           env.opts.Log,
	}
	if env.opts.Tune != nil {
		env.opts.Tune(&cfg)
	}
	return cfg
}

// Engine builds and starts an engine on the env's store (a restart is
// another call after closing the previous engine).
func (env *Env) Engine(ctx context.Context) (*orchestrator.Engine, error) {
	e, err := orchestrator.New(env.Config())
	if err != nil {
		return nil, err
	}
	if err := e.Start(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// Close stops the lab and the introspection API.
func (env *Env) Close() {
	env.Lab.Close()
	if env.stop != nil {
		env.stop()
	}
	if env.closeFirmware != nil {
		env.closeFirmware()
	}
	if env.imageDir != "" {
		_ = os.RemoveAll(env.imageDir)
	}
}

// Generated writes a synthetic site of n nodes (internal/gensite) into dir
// and returns it resolved and validated.
func Generated(ctx context.Context, dir string, n int) (*design.Design, error) {
	return GeneratedSites(ctx, dir, n, 1)
}

// GeneratedSites is Generated with the racks split among sites Sites (the
// lab runs one MAAS region per Site).
func GeneratedSites(ctx context.Context, dir string, n, sites int) (*design.Design, error) {
	if _, err := gensite.Write(dir, gensite.Options{Nodes: n, Sites: sites}); err != nil {
		return nil, err
	}
	return LoadGenerated(ctx, dir)
}

// LoadGenerated loads the generated site in dir (as Generated wrote it,
// perhaps edited since), resolved and validated.
func LoadGenerated(ctx context.Context, dir string) (*design.Design, error) {
	res, err := yamlingest.Load(ctx, []string{dir})
	if err != nil {
		return nil, err
	}
	d, fs := design.Build(res.Sources)
	if fs.HasErrors() {
		return nil, fmt.Errorf("generated site is invalid: %v", fs)
	}
	return d, nil
}

// serverDriver is the MAAS driver of the lab's region, or, for a design
// with several Sites, one per region behind drivers/server/sitemux (a node's
// site from the design).
func serverDriver(d *design.Design, info lab.Info, key drivers.Secret) (drivers.Server, error) {
	one := func(url string) (drivers.Server, error) {
		return maasdrv.New(drivers.Config{Settings: map[string]string{maasdrv.SettingURL: url, maasdrv.SettingTimeout: "20s"},
			Secrets: map[string]drivers.Secret{maasdrv.SecretAPIKey: key}})
	}
	if len(info.Sites) < 2 {
		return one(info.MAASURL)
	}
	all := map[string]sitemux.Site{}
	for _, s := range info.Sites {
		srv, err := one(s.MAASURL)
		if err != nil {
			return nil, err
		}
		all[s.Site] = sitemux.Site{Driver: srv}
	}
	return sitemux.New(all, func(node string) (string, bool) {
		n := d.Nodes[node]
		if n == nil {
			return "", false
		}
		return d.SiteNameOf(n), true
	})
}
