package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/slipway-dev/slipway/server"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/design"
	ovsdrv "github.com/slipway-dev/slipway/drivers/network/ovs"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/labrun/demo"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
	etcdstore "github.com/slipway-dev/slipway/statestore/etcdstore"
)

// demoFlags are demo's flags.
type demoFlags struct {
	site                                             []string
	state, faultsFile, output, cpuProfile, pprofAddr string
	store, etcdPrefix                                string // with --nodes: the state in etcd (demo.OpenStore)
	etcdLimits                                       etcdstore.Limits
	nodes, sites                                     int
	timeScale                                        float64
	dash                                             demo.Dashboard
	dashGiven                                        bool // --dashboard was on the command line
	noFabric                                         bool
}

// demoTimeScale is the demo's default time scale (--time-scale).
const demoTimeScale = 0.002

// demoCmd runs the example site end to end: validation (with a layer of
// mistakes), render, apply twice, then a deployment of every node into the
// virtual lab with live progress and a summary table (labrun/demo).
func (a *app) demoCmd() *cobra.Command {
	var df demoFlags
	cmd := &cobra.Command{
		Use:   "demo [--site DIR] [--faults FILE] [--no-fabric] [-o json] | demo --nodes N [--sites K] [--faults FILE] [-o json]",
		Short: "Run the end-to-end demo on the example site",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			df.dashGiven = cmd.Flags().Changed("dashboard")
			return a.runDemo(cmd.Context(), &df)
		},
	}
	cmd.Flags().StringArrayVar(&df.site, "site", []string{"examples/site-yaml"}, "design root to demonstrate with (repeatable: later roots layer over earlier ones, e.g. examples/two-sites)")
	cmd.Flags().StringVar(&df.state, "state", "", "state database (default: a temporary one)")
	cmd.Flags().IntVar(&df.nodes, "nodes", 0, "deploy a generated site of N nodes instead of the example (prints a summary only)")
	cmd.Flags().IntVar(&df.sites, "sites", 1, "with --nodes: split the generated racks among this many Sites, one lab MAAS region each")
	cmd.Flags().StringVar(&df.faultsFile, "faults", "", "inject the MAAS and BMC faults of this JSON file (see docs/lab.md)")
	cmd.Flags().StringVarP(&df.output, "output", "o", "text", "text, or json: the deployment's summary only (with the example: its connectivity matrix too)")
	cmd.Flags().BoolVar(&df.noFabric, "no-fabric", false, "deploy with the noop network driver even when the design declares a switch fabric (which the demo otherwise runs in Open vSwitch, as root)")
	cmd.Flags().StringVar(&df.cpuProfile, "cpu-profile", "", "with --nodes: write a CPU profile of the whole run (lab and engine) to FILE")
	cmd.Flags().StringVar(&df.pprofAddr, "pprof", "", "with --nodes: serve net/http/pprof on this loopback address (heap, goroutines) during the run")
	cmd.Flags().Float64Var(&df.timeScale, "time-scale", demoTimeScale, "multiplies the lab's phase durations (1 = real MAAS timing)")
	cmd.Flags().StringVar(&df.store, "store", "", "with --nodes: keep the engine's state in etcd instead of a bbolt file: etcd://HOST:PORT[,HOST:PORT...]")
	cmd.Flags().StringVar(&df.etcdPrefix, "etcd-prefix", "", "with --store: the key prefix of the state in etcd (default: a fresh /slipway-demo-RANDOM/)")
	cmd.Flags().IntVar(&df.etcdLimits.MaxTxnOps, "etcd-max-txn-ops", 0, "with --store: the members' --max-txn-ops when raised from etcd's default (128)")
	cmd.Flags().IntVar(&df.etcdLimits.MaxRequestBytes, "etcd-max-request-bytes", 0, "with --store: the members' --max-request-bytes when raised from etcd's default (1.5 MiB)")
	cmd.Flags().StringVar(&df.dash.Listen, "dashboard", "127.0.0.1:0", "serve the control API and the web dashboard on this address while the lab deploys (\"\": none; with --nodes and -o json: none unless given)")
	cmd.Flags().BoolVar(&df.dash.Keep, "keep", false, "after the deploy, keep the lab and the dashboard running until Ctrl-C")
	return cmd
}

// runDemo checks the flags and runs the demo of the example site, or of a
// generated one (--nodes).
func (a *app) runDemo(ctx context.Context, df *demoFlags) error {
	if df.output != "text" && df.output != "json" {
		return usageErr(fmt.Errorf("-o %q: use text or json", df.output))
	}
	if df.timeScale <= 0 || df.timeScale > 1 {
		return usageErr(fmt.Errorf("--time-scale %g: use a number in (0, 1]", df.timeScale))
	}
	if err := df.checkStore(); err != nil {
		return usageErr(err)
	}
	if df.output == "json" && !df.dashGiven {
		df.dash.Listen = "" // a bench's run: no dashboard unless asked
	}
	var faults *maas.Faults
	if df.faultsFile != "" {
		f, err := maas.LoadFaults(df.faultsFile)
		if err != nil {
			return usageErr(err)
		}
		faults = f
	}
	dir, err := os.MkdirTemp("", "slipway-demo-")
	if err != nil {
		return usageErr(err)
	}
	defer os.RemoveAll(dir)
	if df.state == "" {
		df.state = filepath.Join(dir, "state.db")
	}
	if df.nodes > 0 {
		stop, err := startProfiling(df.pprofAddr, df.cpuProfile)
		if err != nil {
			return usageErr(err)
		}
		defer stop()
		return a.demoGenerated(ctx, dir, df, faults)
	}
	if df.output == "json" {
		return a.demoExampleJSON(ctx, df, faults)
	}
	return a.demoExample(ctx, df, dir, faults)
}

// demoExample walks through the example site: validation (with a layer
// of mistakes), render, apply twice, then the deployment.
func (a *app) demoExample(ctx context.Context, df *demoFlags, dir string, faults *maas.Faults) error {
	roots, state := df.site, df.state
	site := strings.Join(roots, " ")
	step := func(title string, args ...string) error {
		fmt.Fprintf(a.stdout, "\n== %s\n$ orchestrator %s\n", title, joinArgs(args))
		if code := run(ctx, args, a.stdout, a.stdout); code != exitOK {
			return &exitError{code: code, err: fmt.Errorf("demo step %q failed (exit %d)", title, code)}
		}
		return nil
	}
	l, err := a.load(ctx, roots)
	if err != nil {
		return err
	}
	names := l.design.NodeNames()
	if len(names) == 0 {
		return usageErr(fmt.Errorf("demo site %s has no nodes", site))
	}
	// A layer with two mistakes shows that validation reports every
	// problem at once with its file and line, before any hardware.
	mistakes := filepath.Join(dir, "mistakes")
	if err := demo.WriteMistakes(mistakes, l.design); err != nil {
		return usageErr(err)
	}
	fmt.Fprintf(a.stdout, "\n== 0. validation catches mistakes before any hardware is touched\n$ orchestrator validate %s %s\n", site, mistakes)
	if code := run(ctx, append(append([]string{"validate"}, roots...), mistakes), a.stdout, a.stdout); code != exitInvalid {
		return &exitError{code: exitUsage, err: fmt.Errorf("demo: the mistakes layer should be invalid, validate exit %d", code)}
	}
	for _, s := range [][]string{
		append([]string{"1. validate the whole design", "validate"}, roots...),
		append([]string{"2. render one node fully resolved", "render", "-o", "yaml", "--node", names[0]}, roots...),
		append([]string{"3. apply: store the design as a revision", "apply", "--state", state}, roots...),
		append([]string{"4. apply again: identical content stores nothing", "apply", "--state", state}, roots...),
		{"5. list stored revisions", "designs", "--state", state},
	} {
		if err := step(s[0], s[1:]...); err != nil {
			return err
		}
	}
	return a.demoExampleDeploy(ctx, l.design, df, faults)
}

// demoExampleDeploy is the demo's last step: every node deployed into the
// virtual lab, the summary and a GPU node's inventory.
func (a *app) demoExampleDeploy(ctx context.Context, d *design.Design, df *demoFlags, faults *maas.Faults) error {
	fmt.Fprintln(a.stdout, "\n== 6. deploy every node into the virtual lab: IPMI or Redfish PXE boot, MAAS enlist, commission, configure, deploy, boot actions")
	st, err := bolt.Open(df.state, bolt.Options{})
	if err != nil {
		return usageErr(err)
	}
	defer st.Close()
	res, err := demo.Deploy(ctx, a.demoOptions(d, st, df, faults, true))
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("demo deploy: %w", err)}
	}
	res.Summary(a.stdout)
	a.printGPUInventory(ctx, st, d.NodeNames()) // inventory.go
	if !res.OK() {
		return &exitError{code: exitInvalid, err: fmt.Errorf("demo: %d of %d nodes deployed, %d of them with another image than the design's (see the summary)",
			res.Deployed, res.Nodes, res.WrongImages())}
	}
	fmt.Fprintln(a.stdout, `
== Next
Run the same against a real MAAS: 'orchestrator serve' (engine, control API
and introspection API), then 'orchestrator deploy --server URL --token T'.
See README.md and docs/.`)
	return nil
}

func joinArgs(args []string) string {
	s := ""
	for i, a := range args {
		if i > 0 {
			s += " "
		}
		s += a
	}
	return s
}

// demoGenerated deploys a generated site of n nodes and prints the summary
// (JSON with -o json).
func (a *app) demoGenerated(ctx context.Context, dir string, df *demoFlags, faults *maas.Faults) error {
	output := df.output
	d, err := labrun.GeneratedSites(ctx, filepath.Join(dir, "site"), df.nodes, df.sites)
	if err != nil {
		return usageErr(err)
	}
	st, kind, err := demo.OpenStore(ctx, demo.StoreConfig{State: df.state, Store: df.store, EtcdPrefix: df.etcdPrefix, EtcdLimits: df.etcdLimits})
	if err != nil {
		return usageErr(err)
	}
	defer st.Close()
	res, err := demo.Deploy(ctx, a.demoOptions(d, st, df, faults, output == "text"))
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("demo deploy: %w", err)}
	}
	res.Store, res.EtcdPrefix = kind, df.etcdPrefix
	if output == "json" {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		res.Summary(a.stdout)
	}
	if !res.OK() {
		return &exitError{code: exitInvalid}
	}
	return nil
}

// demoOptions are the deployment's options from the flags: the design d,
// its state st, progress drawn on stdout when show is set; a design's
// switch fabric run in Open vSwitch and configured by the ovs driver
// unless --no-fabric.
func (a *app) demoOptions(d *design.Design, st statestore.Store, df *demoFlags, faults *maas.Faults, show bool) demo.Options {
	return demo.Options{Design: d, Store: st, StatePath: df.state, TimeScale: df.timeScale, Faults: faults,
		Show: show, Out: a.stdout, Err: a.stderr, Log: a.log, Dashboard: df.dash, NewNetwork: ovsdrv.New, NoFabric: df.noFabric}
}

// demoExampleJSON deploys the example (or --site roots) and prints the
// deployment's summary as JSON, the fabric's connectivity matrix in it,
// without the narrative steps.
func (a *app) demoExampleJSON(ctx context.Context, df *demoFlags, faults *maas.Faults) error {
	l, err := a.load(ctx, df.site)
	if err != nil {
		return err
	}
	st, err := bolt.Open(df.state, bolt.Options{})
	if err != nil {
		return usageErr(err)
	}
	defer st.Close()
	res, err := demo.Deploy(ctx, a.demoOptions(l.design, st, df, faults, false))
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("demo deploy: %w", err)}
	}
	res.Store = "bolt"
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		return err
	}
	if !res.OK() {
		return &exitError{code: exitInvalid}
	}
	return nil
}

// checkStore checks --store and --etcd-prefix, and picks a fresh prefix
// when none is given (so runs on one etcd don't collide).
func (df *demoFlags) checkStore() error {
	if df.store == "" {
		if df.etcdPrefix != "" {
			return errors.New("--etcd-prefix: only with --store etcd://")
		}
		return nil
	}
	if df.nodes <= 0 {
		return errors.New("--store: only with --nodes (the example's steps keep their state in --state)")
	}
	if df.state != "" {
		return errors.New("--store and --state: give one")
	}
	if _, err := server.EtcdEndpoints(df.store); err != nil {
		return fmt.Errorf("--store %w", err)
	}
	if df.etcdPrefix == "" {
		df.etcdPrefix = "/slipway-demo-" + rand.Text()[:12] + "/"
	}
	return nil
}
