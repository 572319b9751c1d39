package main

import (
	"context"
	"fmt"
	"os"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/spf13/cobra"
)

// labFlags are lab's flags.
type labFlags struct {
	roots      []string
	machines   int
	listen     string
	apiKey     string
	timeScale  float64
	faultsFile string
	seed       int64
	nodes      int
	sites      int
	siteDir    string
	cpuProfile string
	pprofAddr  string
	gnmi       bool
	imageDir   string
}

func (a *app) labCmd() *cobra.Command {
	var lf labFlags
	cmd := &cobra.Command{
		Use:   "lab [--design ROOT... | --nodes N [--site-dir DIR]] [--machines N] [--maas-listen ADDR] [--api-key KEY] [--time-scale X] [--faults FILE]",
		Short: "Run the virtual lab: a MAAS simulator with simulated machines and BMCs",
		Long: `Lab starts a MAAS API 2.0 simulator and simulated machines, each with a
simulated BMC speaking IPMI on a loopback UDP port, and Redfish over HTTPS on
a loopback TCP port too when its hardware profile names redfish (oob.type or
oob.fallback.type), and prints one JSON line: {"maas_url", "api_key",
"bmcs": [{"node", "address", "port", "redfish_url", "redfish_fingerprint"}],
"stats_url", "redfish_ca_file"} (the CA that signs the Redfish services'
certificates: give it to curl --cacert or a Redfish client).
With --design, there is one machine per Node, with the node's NICs and disks
at their PCI addresses; BMC addresses are remapped to 127.0.0.1:PORT (see
docs/lab.md). With --nodes N, the design is a generated site of N nodes, the
one 'demo --nodes N' deploys, written to --site-dir (apply the same files to
the engine). A design with several Sites gets one MAAS region per Site, all
on --maas-listen (the first Site's at /MAAS, each other's at /SITE/MAAS),
listed in "sites": [{"site", "maas_url"}] (the same API key opens each).
POST /sim/audit counts a run's outcomes from the lab's state.
With --image-dir DIR, the design's custom images (Image documents whose
source is a file) are written into DIR as the lab generates them (their
SHA-256 is the example's): give DIR to serve --image-dir.
With --gnmi, a gNMI target on loopback (plain TCP) serves every switch the
design cables, each cabled port with its machine's NIC as LLDP neighbour;
"gnmi_address" and "gnmi_username" say where, the password is
lab-switch-password (docs/lab.md): gnmic --insecure reads and sets it.
It runs until interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stop, err := startProfiling(lf.pprofAddr, lf.cpuProfile)
			if err != nil {
				return usageErr(err)
			}
			defer stop()
			return a.runLab(cmd.Context(), &lf)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&lf.roots, "design", nil, "design root (repeatable; later roots layer over earlier ones)")
	f.IntVar(&lf.machines, "machines", 0, "generic machines to add")
	f.StringVar(&lf.listen, "maas-listen", "127.0.0.1:5240", "address of the simulated MAAS")
	f.StringVar(&lf.apiKey, "api-key", "", "MAAS API key consumer:token:secret (default: generated from --seed)")
	f.Float64Var(&lf.timeScale, "time-scale", 0.01, "multiplies every MAAS phase duration (1 = real time)")
	f.StringVar(&lf.faultsFile, "faults", "", "JSON file of faults to inject (docs/lab.md)")
	f.Int64Var(&lf.seed, "seed", 1, "seed of the lab's random choices and faults")
	f.IntVar(&lf.nodes, "nodes", 0, "a generated site of N nodes (demo --nodes N's) instead of --design")
	f.IntVar(&lf.sites, "sites", 1, "with --nodes: split the generated racks among this many Sites, one MAAS region each")
	f.StringVar(&lf.siteDir, "site-dir", "", "with --nodes: write the generated site here (default: a temporary directory)")
	f.StringVar(&lf.cpuProfile, "cpu-profile", "", "write a CPU profile of the lab to FILE until it stops")
	f.StringVar(&lf.pprofAddr, "pprof", "", "serve net/http/pprof (heap, goroutines, CPU, execution trace) of the lab on this loopback address")
	f.BoolVar(&lf.gnmi, "gnmi", false, "serve the design's cabled switches over gNMI (sim/gnmi)")
	f.StringVar(&lf.imageDir, "image-dir", "", "write the lab image (sim/labimage) of each custom Image of the design whose source is a file into DIR, for serve --image-dir")
	return cmd
}

// runLab checks the flags and runs the lab they describe (labrun.Serve:
// its JSON line, then until ctx ends).
func (a *app) runLab(ctx context.Context, lf *labFlags) error {
	cfg := lab.Config{Machines: lf.machines, MAASListen: lf.listen, APIKey: lf.apiKey, TimeScale: lf.timeScale, Seed: lf.seed, Log: a.log}
	d, cleanup, err := a.labDesign(ctx, lf)
	if err != nil {
		return err
	}
	defer cleanup()
	cfg.Design = d
	if lf.imageDir != "" {
		if d == nil {
			return usageErr(fmt.Errorf("--image-dir goes with --design or --nodes"))
		}
		if err := labrun.WriteLabImages(d, lf.imageDir); err != nil {
			return usageErr(fmt.Errorf("--image-dir: %w", err))
		}
	}
	if lf.gnmi {
		cfg.GNMI = &lab.GNMIOptions{Username: lab.DefaultSwitchUser, Password: lab.DefaultSwitchPassword}
	}
	if cfg.Design == nil && lf.machines == 0 {
		return usageErr(fmt.Errorf("give --design ROOT or --machines N (or both)"))
	}
	if lf.faultsFile != "" {
		f, err := maas.LoadFaults(lf.faultsFile)
		if err != nil {
			return usageErr(err)
		}
		cfg.Faults = f
	}
	if err := labrun.Serve(ctx, cfg, a.stdout); err != nil {
		return usageErr(err)
	}
	return nil
}

// labDesign is the lab's design: --nodes N's generated site (written to
// --site-dir, else a temporary directory cleanup removes), --design's, or
// none.
func (a *app) labDesign(ctx context.Context, lf *labFlags) (*design.Design, func(), error) {
	cleanup := func() {}
	switch {
	case lf.nodes > 0 && len(lf.roots) > 0:
		return nil, cleanup, usageErr(fmt.Errorf("give --design or --nodes, not both"))
	case lf.nodes > 0:
		dir := lf.siteDir
		if dir == "" {
			tmp, err := os.MkdirTemp("", "slipway-lab-site-")
			if err != nil {
				return nil, cleanup, usageErr(err)
			}
			dir, cleanup = tmp, func() { os.RemoveAll(tmp) }
		}
		d, err := labrun.GeneratedSites(ctx, dir, lf.nodes, lf.sites)
		if err != nil {
			cleanup()
			return nil, func() {}, usageErr(err)
		}
		return d, cleanup, nil
	case lf.siteDir != "":
		return nil, cleanup, usageErr(fmt.Errorf("--site-dir goes with --nodes"))
	case len(lf.roots) > 0:
		l, err := a.load(ctx, lf.roots)
		if err != nil {
			return nil, cleanup, err
		}
		if l.findings.HasErrors() {
			writeFindingsText(a.stderr, l.findings)
			return nil, cleanup, errInvalid
		}
		return l.design, cleanup, nil
	}
	return nil, cleanup, nil
}
