// Package labrun wires the deploy engine to the virtual lab: it starts the
// lab from a design, stores the design as a revision, builds the real
// drivers (IPMI against the lab's BMCs, MAAS against the lab's MAAS, the
// no-op network driver) and engines on one state store. The demo, the
// engine's end-to-end tests and its benchmark all use it.
package labrun

import (
	"context"
	"crypto/rand"
	"fmt"
	stdnet "net"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/network/noop"
	"github.com/slipway-dev/slipway/drivers/oob/ipmi"
	maasdrv "github.com/slipway-dev/slipway/drivers/server/maas"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/internal/gensite"
	"github.com/slipway-dev/slipway/introspection"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/secrets"
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
	opts          Options
	stop          context.CancelFunc
}

// Start starts the lab and stores the design.
func Start(ctx context.Context, o Options) (*Env, error) {
	if o.TimeScale <= 0 {
		o.TimeScale = 0.002
	}
	lb, err := lab.Start(ctx, lab.Config{Design: o.Design, TimeScale: o.TimeScale, Faults: o.Faults, Seed: o.Seed,
		Secrets: labSecret, BootstrapFail: o.BootstrapFail, Log: o.Log})
	if err != nil {
		return nil, fmt.Errorf("start the lab: %w", err)
	}
	env := &Env{Lab: lb, Store: o.Store, opts: o}
	raw, id, err := o.Design.Canonical()
	if err != nil {
		lb.Close()
		return nil, err
	}
	if _, err := o.Store.PutRevision(ctx, statestore.Revision{ID: id, Design: raw, Counts: o.Design.Counts(), Roots: []string{"(lab)"}}); err != nil {
		lb.Close()
		return nil, fmt.Errorf("store the design: %w", err)
	}
	env.Revision = id
	info := lb.Info()
	// The lab's BMCs answer on loopback within a millisecond: a lost
	// reply is known quickly (real BMCs get the driver's defaults).
	oob, err := ipmi.New(drivers.Config{Settings: map[string]string{ipmi.SettingTimeout: "150ms", ipmi.SettingRetries: "2",
		ipmi.SettingBackoff: "20ms", ipmi.SettingPollInterval: "20ms", ipmi.SettingPowerWait: "2s"}})
	if err != nil {
		lb.Close()
		return nil, err
	}
	srv, err := maasdrv.New(drivers.Config{Settings: map[string]string{maasdrv.SettingURL: info.MAASURL,
		maasdrv.SettingTimeout: "20s"}, Secrets: map[string]drivers.Secret{maasdrv.SecretAPIKey: drivers.NewSecret(info.APIKey)}})
	if err != nil {
		lb.Close()
		return nil, err
	}
	net, err := noop.New(drivers.Config{})
	if err != nil {
		lb.Close()
		return nil, err
	}
	env.Drivers = orchestrator.Drivers{OOB: oob, Server: srv, Network: net}
	if err := env.startIntrospection(o); err != nil {
		lb.Close()
		return nil, err
	}
	return env, nil
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
		Secret: func(_ context.Context, name string) (string, error) { return labSecret("secret:" + name) }, Log: o.Log})
	if err != nil {
		ln.Close()
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	env.Introspection, env.stop = srv, cancel
	go func() { _ = srv.Serve(ctx, ln) }()
	return nil
}

// labSecret resolves a reference like the engine does, and falls back to
// the lab's default BMC password for any secret that is not set, so the
// example design runs without setting its secrets (the lab's BMCs and the
// engine agree on the value; boot action templates get it too).
func labSecret(ref string) (string, error) {
	if v, err := secrets.Resolve(ref); err == nil {
		return v.Reveal(), nil
	}
	return lab.DefaultBMCPassword, nil
}

// Config returns an engine configuration for the lab: the BMCs at the
// lab's loopback ports, time scaled like the lab, quick polling.
func (env *Env) Config() orchestrator.Config {
	s := env.opts.TimeScale
	cfg := orchestrator.Config{
		Store:   env.Store,
		Drivers: env.Drivers,
		Secrets: func(ref string) (drivers.Secret, error) {
			v, err := labSecret(ref)
			return drivers.NewSecret(v), err
		},
		BMCEndpoint: func(b drivers.BMC) drivers.BMC {
			if m := env.Lab.Machine(b.Node); m != nil {
				b.Address, b.Port = m.BMC.Address, m.BMC.Port
			}
			return b
		},
		Bootstrap:     env.Introspection,
		TimeScale:     s,
		PollInterval:  max(time.Duration(float64(5*time.Second)*s), 20*time.Millisecond),
		MaxWait:       max(time.Duration(float64(2*time.Minute)*s), 200*time.Millisecond),
		SweepInterval: -1,
		Limits:        orchestrator.Limits{Global: 128, Provisioner: 64},
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
}

// Audit is what the provisioner says about the run: machines deployed,
// leaked (owned by the orchestrator, claimed by no node record) and
// allocated or deployed twice.
type Audit struct {
	Deployed             int
	Leaked               []string
	DuplicateAllocations int
	MAASRequests         int
}

// Audit inspects the lab's MAAS against the engine's node records.
func (env *Env) Audit(ctx context.Context, e *orchestrator.Engine) (Audit, error) {
	var a Audit
	owned, err := env.Drivers.Server.Owned(ctx)
	if err != nil {
		return a, err
	}
	recs, err := e.Nodes(ctx)
	if err != nil {
		return a, err
	}
	claimed := map[string]bool{}
	for _, r := range recs {
		if r.MachineID != "" {
			claimed[r.MachineID] = true
		}
	}
	for _, m := range owned {
		if !claimed[m.MachineID] {
			a.Leaked = append(a.Leaked, m.MachineID)
		}
	}
	for _, m := range env.Lab.Machines() {
		if m.OS() != "" {
			a.Deployed++
		}
	}
	a.DuplicateAllocations = maas.DuplicateAllocations(env.Lab.MAAS.Lifecycle())
	a.MAASRequests = env.Lab.MAAS.Stats().Snapshot().Total
	return a, nil
}

// Generated writes a synthetic site of n nodes (internal/gensite) into dir
// and returns it resolved and validated.
func Generated(ctx context.Context, dir string, n int) (*design.Design, error) {
	if _, err := gensite.Write(dir, gensite.Options{Nodes: n}); err != nil {
		return nil, err
	}
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
