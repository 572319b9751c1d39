package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	maasdrv "github.com/slipway-dev/slipway/drivers/server/maas"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/secrets"
	"github.com/slipway-dev/slipway/statestore"
)

// engineConfig is the file `serve --config` reads (YAML). Durations are
// Go durations ("10s", "2m").
type engineConfig struct {
	State         string `yaml:"state"`
	PluginDir     string `yaml:"pluginDir"`
	InstanceID    string `yaml:"instanceID"` // the MAAS agent_name of owned machines
	GlobalLimit   int    `yaml:"globalLimit"`
	MAASLimit     int    `yaml:"provisionerLimit"`
	RetryAttempts int    `yaml:"retryAttempts"`
	RetryBase     string `yaml:"retryBase"`
	RetryMax      string `yaml:"retryMax"`
	DeployRetries int    `yaml:"deployRetries"`
	PollInterval  string `yaml:"pollInterval"`
	SweepInterval string `yaml:"sweepInterval"`
	ReleaseLeaks  bool   `yaml:"releaseLeaks"`
	// BMCEndpoints overrides where a node's BMC is reached (host:port),
	// e.g. through a NAT or, in tests, the virtual lab's loopback ports.
	BMCEndpoints map[string]string `yaml:"bmcEndpoints"`
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

// engineEnv is an engine with what it was built from.
type engineEnv struct {
	engine *orchestrator.Engine
	store  statestore.Store
	close  func()
}

// openEngine opens the state store, builds the drivers the current
// design's Site names (with their secrets resolved) and starts an engine,
// which resumes every unfinished task.
func (a *app) openEngine(ctx context.Context, c engineConfig) (*engineEnv, error) {
	st, err := openStore(c.State)
	if err != nil {
		return nil, usageErr(err)
	}
	fail := func(err error) (*engineEnv, error) { st.Close(); return nil, err }
	cur, err := st.Current(ctx)
	if err != nil {
		return fail(usageErr(fmt.Errorf("%w (apply a design first: `orchestrator apply --state %s ROOT`)", err, c.State)))
	}
	d := &design.Design{}
	if err := json.Unmarshal(cur.Design, d); err != nil {
		return fail(usageErr(fmt.Errorf("design revision %s: %w", cur.ID, err)))
	}
	reg, err := a.registry(c.PluginDir)
	if err != nil {
		return fail(err)
	}
	drv, err := siteDrivers(reg, d, c.InstanceID)
	if err != nil {
		reg.Close()
		return fail(usageErr(err))
	}
	cfg := orchestrator.Config{Store: st, Drivers: drv, Log: a.log, DeployRetries: c.DeployRetries, ReleaseLeaks: c.ReleaseLeaks,
		Limits: orchestrator.Limits{Global: c.GlobalLimit, Provisioner: c.MAASLimit}}
	cfg.Retry.Attempts = c.RetryAttempts
	if len(c.BMCEndpoints) > 0 {
		eps, err := parseEndpoints(c.BMCEndpoints)
		if err != nil {
			reg.Close()
			return fail(usageErr(err))
		}
		cfg.BMCEndpoint = func(b drivers.BMC) drivers.BMC {
			if ep, ok := eps[b.Node]; ok {
				b.Address, b.Port = ep.host, ep.port
			}
			return b
		}
	}
	for _, f := range []struct {
		name string
		val  string
		dst  *time.Duration
	}{{"retryBase", c.RetryBase, &cfg.Retry.Base}, {"retryMax", c.RetryMax, &cfg.Retry.Max},
		{"pollInterval", c.PollInterval, &cfg.PollInterval}, {"sweepInterval", c.SweepInterval, &cfg.SweepInterval}} {
		if *f.dst, err = duration(f.name, f.val); err != nil {
			reg.Close()
			return fail(usageErr(err))
		}
	}
	e, err := orchestrator.New(cfg)
	if err != nil {
		reg.Close()
		return fail(err)
	}
	if err := e.Start(ctx); err != nil {
		reg.Close()
		return fail(err)
	}
	return &engineEnv{engine: e, store: st, close: func() { e.Close(); reg.Close(); st.Close() }}, nil
}

// registryLike is what siteDrivers needs of the driver registry.
type registryLike interface {
	OOB(name string, cfg drivers.Config) (drivers.OOB, error)
	Server(name string, cfg drivers.Config) (drivers.Server, error)
	Network(name string, cfg drivers.Config) (drivers.Network, error)
}

// siteDrivers builds the drivers the Site names; the MAAS API key is the
// Site's secret reference, resolved here.
func siteDrivers(reg registryLike, d *design.Design, instance string) (orchestrator.Drivers, error) {
	var out orchestrator.Drivers
	if d.Site == nil {
		return out, fmt.Errorf("the design has no Site: it names the drivers and how to reach MAAS")
	}
	names := d.Site.Spec.Drivers
	oob, err := reg.OOB(orDefault(names.OOB, "ipmi"), drivers.Config{})
	if err != nil {
		return out, err
	}
	scfg := drivers.Config{Settings: map[string]string{maasdrv.SettingURL: d.Site.Spec.MAAS.URL}, Secrets: map[string]drivers.Secret{}}
	if instance != "" {
		scfg.Settings[maasdrv.SettingInstance] = instance
	}
	if ref := d.Site.Spec.MAAS.APIKey; ref != "" {
		key, err := secrets.Resolve(ref)
		if err != nil {
			return out, fmt.Errorf("the Site's maas.apiKey %s: %w", ref, err)
		}
		scfg.Secrets[maasdrv.SecretAPIKey] = key
	}
	srv, err := reg.Server(orDefault(names.Server, "maas"), scfg)
	if err != nil {
		return out, err
	}
	net, err := reg.Network(orDefault(names.Network, "noop"), drivers.Config{})
	if err != nil {
		return out, err
	}
	return orchestrator.Drivers{OOB: oob, Server: srv, Network: net}, nil
}

func (a *app) serveCmd() *cobra.Command {
	var cfgFile, state, dir string
	cmd := &cobra.Command{
		Use:   "serve [--config FILE]",
		Short: "Run the engine: resume unfinished tasks, sweep for leaks and drift",
		Long: `Serve runs the deploy engine on the state database until interrupted. At
start it resumes every task that was queued or running when the last
process stopped (each node from its last checkpoint), then runs the leak
and drift sweep, and again every sweepInterval. The control API will be
served from this process; until then, task commands run the engine
in-process (stop serve first: the state database has one owner).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := loadEngineConfig(cfgFile)
			if err != nil {
				return usageErr(err)
			}
			if c.State == "" || cmd.Flags().Changed("state") {
				c.State = state
			}
			if c.PluginDir == "" || cmd.Flags().Changed("plugin-dir") {
				c.PluginDir = dir
			}
			env, err := a.openEngine(cmd.Context(), c)
			if err != nil {
				return err
			}
			defer env.close()
			a.log.Info().Str("state", c.State).Msg("engine running; interrupt to stop (tasks resume at the next start)")
			fmt.Fprintf(a.stderr, "slipway engine running on %s; Ctrl-C stops it (tasks resume at the next start)\n", c.State)
			<-cmd.Context().Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&cfgFile, "config", "", "engine configuration file (YAML; see docs/operations.md)")
	stateFlag(cmd, &state)
	pluginDirFlag(cmd, &dir)
	return cmd
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
