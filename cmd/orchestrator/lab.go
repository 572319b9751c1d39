package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/slipway-dev/slipway/internal/labrun"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/spf13/cobra"
)

func (a *app) labCmd() *cobra.Command {
	var (
		roots      []string
		machines   int
		listen     string
		apiKey     string
		timeScale  float64
		faultsFile string
		seed       int64
		nodes      int
		siteDir    string
		cpuProfile string
	)
	cmd := &cobra.Command{
		Use:   "lab [--design ROOT... | --nodes N [--site-dir DIR]] [--machines N] [--maas-listen ADDR] [--api-key KEY] [--time-scale X] [--faults FILE]",
		Short: "Run the virtual lab: a MAAS simulator with simulated machines and BMCs",
		Long: `Lab starts a MAAS API 2.0 simulator and simulated machines, each with a
simulated BMC speaking IPMI on a loopback UDP port, and prints one JSON line:
{"maas_url", "api_key", "bmcs": [{"node", "address", "port"}], "stats_url"}.
With --design, there is one machine per Node, with the node's NICs and disks
at their PCI addresses; BMC addresses are remapped to 127.0.0.1:PORT (see
docs/lab.md). With --nodes N, the design is a generated site of N nodes, the
one 'demo --nodes N' deploys, written to --site-dir (apply the same files to
the engine). POST /sim/audit counts a run's outcomes from the lab's state.
It runs until interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg := lab.Config{Machines: machines, MAASListen: listen, APIKey: apiKey, TimeScale: timeScale, Seed: seed, Log: a.log}
			if nodes > 0 {
				if len(roots) > 0 {
					return usageErr(fmt.Errorf("give --design or --nodes, not both"))
				}
				dir := siteDir
				if dir == "" {
					tmp, err := os.MkdirTemp("", "slipway-lab-site-")
					if err != nil {
						return usageErr(err)
					}
					defer os.RemoveAll(tmp)
					dir = tmp
				}
				d, err := labrun.Generated(ctx, dir, nodes)
				if err != nil {
					return usageErr(err)
				}
				cfg.Design = d
			} else if siteDir != "" {
				return usageErr(fmt.Errorf("--site-dir goes with --nodes"))
			}
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return usageErr(err)
				}
				defer stop()
			}
			if len(roots) > 0 {
				l, err := a.load(ctx, roots)
				if err != nil {
					return err
				}
				if l.findings.HasErrors() {
					writeFindingsText(a.stderr, l.findings)
					return errInvalid
				}
				cfg.Design = l.design
			}
			if cfg.Design == nil && machines == 0 {
				return usageErr(fmt.Errorf("give --design ROOT or --machines N (or both)"))
			}
			if faultsFile != "" {
				f, err := maas.LoadFaults(faultsFile)
				if err != nil {
					return usageErr(err)
				}
				cfg.Faults = f
			}
			lb, err := lab.Start(ctx, cfg)
			if err != nil {
				return usageErr(err)
			}
			defer lb.Close()
			lb.Handle(labrun.AuditPath, labrun.AuditHandler(lb))
			b, err := json.Marshal(lb.Info())
			if err != nil {
				return usageErr(err)
			}
			fmt.Fprintf(a.stdout, "%s\n", b)
			a.log.Info().Int("machines", len(lb.Machines())).Msg("virtual lab running; interrupt to stop")
			<-ctx.Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&roots, "design", nil, "design root (repeatable; later roots layer over earlier ones)")
	f.IntVar(&machines, "machines", 0, "generic machines to add")
	f.StringVar(&listen, "maas-listen", "127.0.0.1:5240", "address of the simulated MAAS")
	f.StringVar(&apiKey, "api-key", "", "MAAS API key consumer:token:secret (default: generated from --seed)")
	f.Float64Var(&timeScale, "time-scale", 0.01, "multiplies every MAAS phase duration (1 = real time)")
	f.StringVar(&faultsFile, "faults", "", "JSON file of faults to inject (docs/lab.md)")
	f.Int64Var(&seed, "seed", 1, "seed of the lab's random choices and faults")
	f.IntVar(&nodes, "nodes", 0, "a generated site of N nodes (demo --nodes N's) instead of --design")
	f.StringVar(&siteDir, "site-dir", "", "with --nodes: write the generated site here (default: a temporary directory)")
	f.StringVar(&cpuProfile, "cpu-profile", "", "write a CPU profile of the lab to FILE until it stops")
	return cmd
}
