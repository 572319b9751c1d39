package server

import (
	"context"
	"fmt"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/designlayer"
	"github.com/slipway-dev/slipway/onboarding"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/powercreds"
	"github.com/slipway-dev/slipway/statestore/bolt"
	"github.com/slipway-dev/slipway/ui"
)

// NewAPI is the control API over env, configured from c: serve's, and
// the in-process one of a CLI command (which sets c.UploadDir and the
// design limits to its own).
func NewAPI(c Config, env *Env, o Options) (*api.Server, error) {
	return o.newAPI(c, env)
}

// newAPI is NewAPI.
func (o Options) newAPI(c Config, env *Env) (*api.Server, error) {
	authenticate, tokenAdmin := api.TokenStore(auth.NewStore(env.store))
	var eng apiEngine = env.engine
	if env.api != nil {
		eng = env.api
	}
	cfg := api.Config{Engine: eng, Consoles: eng, Cluster: env.cluster, ForwardTransport: env.forward, UI: ui.Handler(), Store: env.store, Log: o.Log, Registry: env.metrics,
		Authenticate: authenticate, Tokens: tokenAdmin, Ready: ready(env.drivers), TrustedProxies: c.TrustedProxies,
		Layer: designlayer.New(env.store), Onboardings: onboarding.New(env.store)}
	if env.secrets != nil {
		cfg.Secrets = api.SecretStore(env.secrets)
		cfg.PowerCredentials = powercreds.New(env.secrets)
	}
	if env.sites != nil {
		cfg.Sites, cfg.SiteParts, cfg.SiteProber = env.sites, env.sites, env.prober
	}
	if env.git != nil {
		cfg.Git = env.git
	}
	if bs, ok := env.store.(*bolt.Store); ok { // backup.go
		cfg.Backup = boltBackup{store: bs, cfg: c}
	}
	if bd := o.bootData(context.Background(), c, env.store); bd != nil {
		cfg.BootData = bd
	}
	if err := c.apiLimits(&cfg); err != nil {
		return nil, err
	}
	if err := c.readyCheck(&cfg); err != nil { // readycheck.go
		return nil, err
	}
	if err := c.designLimits(&cfg); err != nil {
		return nil, err
	}
	return api.New(cfg)
}

// apiEngine is what the control API asks of the engine.
type apiEngine interface {
	api.Engine
	api.Consoles
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
