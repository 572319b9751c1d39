package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/secrets"
	"github.com/spf13/cobra"
)

// powerActions are the actions of `orchestrator power`.
var powerActions = []string{"status", "on", "off", "cycle", "pxe"}

// powerFlags are the flags of `orchestrator power`.
type powerFlags struct {
	roots      []string
	node, addr string
	persistent bool
	efi        bool
	timeout    time.Duration
	settings   []string
	dir        string
	method     string      // --oob: "" (the node's first method), fallback, or a type
	caFile     string      // --ca-file: the CA of an HTTPS BMC, over the design's
	ef         engineFlags // the API's task (no --design)
}

func (a *app) powerCmd() *cobra.Command {
	var pf powerFlags
	cmd := &cobra.Command{
		Use:   "power status|on|off|cycle|pxe --node NAME [--design ROOT... [--bmc HOST:PORT]]",
		Short: "Read or change a node's power and boot device through its BMC",
		Long: `Without --design, power on, off and cycle run as a task of the engine
(power_on, power_off, power_cycle), through the API like every task
command, and the command follows it to its end.

With --design, power talks to one node's BMC from this host with the
node's OOB driver (its hardware profile's oob.type, else the Site's, else
ipmi; --oob fallback, or --oob TYPE naming it, uses the profile's
oob.fallback instead), without the engine. The BMC's address, port, protocol, cipher suite, privilege, user
and password reference come from the design; the password reference
(env:VAR, file:/path, or secret:NAME read from the environment variable
SLIPWAY_SECRET_<NAME>) is resolved here and handed to the driver, never
put on a command line.

  status  prints on or off (--design only)
  on      powers the node on (nothing to do when it is on)
  off     powers the node off at once (not a soft shutdown)
  cycle   power cycles a node that is on, powers on one that is off, and
          waits until it is on
  pxe     makes the node boot from the network next time, or every time
          (--persistent), UEFI or legacy BIOS (--efi=true|false); both
          default to the node's hardware profile (pxe.persistent, bootMode)
          (--design only)

--bmc HOST:PORT overrides the BMC's address, e.g. for a virtual lab BMC on
127.0.0.1; --ca-file the CA of a Redfish BMC's certificate (the lab prints
its redfish_ca_file). Exit 1 when the BMC can't be reached, rejects the credentials
or refuses the action (or the task fails); exit 2 for bad usage.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || !slices.Contains(powerActions, args[0]) {
				return usageErr(fmt.Errorf("give one action: %s", strings.Join(powerActions, ", ")))
			}
			if pf.node == "" {
				return usageErr(errors.New("--node NAME is required"))
			}
			if len(pf.roots) == 0 {
				return a.powerTask(cmd, &pf, args[0])
			}
			return a.powerDirect(cmd, &pf, args[0])
		},
	}
	pf.add(cmd)
	return cmd
}

func (pf *powerFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&pf.roots, "design", nil, "design root (repeatable; later roots layer over earlier ones): talk to the BMC from this host")
	f.StringVar(&pf.node, "node", "", "name of the node")
	f.StringVar(&pf.addr, "bmc", "", "BMC address HOST:PORT overriding the design's (e.g. a lab BMC on 127.0.0.1)")
	f.BoolVar(&pf.persistent, "persistent", false, "pxe: boot from the network every time, not only next time (default: the hardware profile's pxe.persistent)")
	f.BoolVar(&pf.efi, "efi", false, "pxe: UEFI network boot rather than legacy BIOS (default: the hardware profile's bootMode)")
	f.DurationVar(&pf.timeout, "timeout", 2*time.Minute, "with --design: give up after this long")
	f.StringArrayVar(&pf.settings, "driver-setting", nil, "OOB driver setting KEY=VALUE (repeatable; see docs/drivers.md)")
	f.StringVar(&pf.method, "oob", "", "with --design: the node's OOB method to use: fallback, or its type (default: its first)")
	f.StringVar(&pf.caFile, "ca-file", "", "with --design: PEM file of the CA of an HTTPS (redfish) BMC's certificate, over the design's oob.caFile")
	f.StringVar(&pf.ef.cfgFile, "config", "", "without --design: engine configuration file (YAML; see docs/operations.md)")
	stateFlag(cmd, &pf.ef.state)
	pluginDirFlag(cmd, &pf.dir)
	f.StringVarP(&pf.ef.output, "output", "o", "text", "without --design: output format of the task: text (a table), json or yaml")
}

// powerTaskActions are the power actions the engine runs as tasks.
var powerTaskActions = map[string]record.Action{
	"on": record.ActionPowerOn, "off": record.ActionPowerOff, "cycle": record.ActionPowerCycle,
}

// powerTask runs power on, off or cycle as a task through the API and
// follows it.
func (a *app) powerTask(cmd *cobra.Command, pf *powerFlags, action string) error {
	act, ok := powerTaskActions[action]
	if !ok {
		return usageErr(fmt.Errorf("power %s talks to the node's BMC from this host: give --design ROOT on a host that reaches the BMC; "+
			"as tasks of the engine, power on, off and cycle run", action))
	}
	for _, f := range []string{"bmc", "driver-setting", "persistent", "efi", "timeout", "oob", "ca-file"} {
		if cmd.Flags().Changed(f) {
			return usageErr(fmt.Errorf("--%s is for the BMC from this host (with --design); without it the engine does the power %s", f, action))
		}
	}
	pf.ef.pluginDir = pf.dir
	filter := apitypes.Filter{Sets: []apitypes.NodeFilter{{Names: []string{pf.node}}}}
	return a.runTask(cmd.Context(), &pf.ef, func(ctx context.Context, c *client.Client) (apitypes.Task, string, error) {
		t, err := c.CreateTask(ctx, client.TaskRequest{Action: act, NodeFilter: filter})
		return t, "", err
	})
}

// powerDirect talks to the node's BMC from this host, as the design
// describes it.
func (a *app) powerDirect(cmd *cobra.Command, pf *powerFlags, action string) error {
	if (cmd.Flags().Changed("persistent") || cmd.Flags().Changed("efi")) && action != "pxe" {
		return usageErr(errors.New("--persistent and --efi go with pxe"))
	}
	if a.server != "" || cmd.Flags().Changed("config") || cmd.Flags().Changed("output") {
		return usageErr(errors.New("--design talks to the BMC from this host: --server, --config and -o go with the task (without --design)"))
	}
	cfg := drivers.Config{Settings: map[string]string{}}
	for _, s := range pf.settings {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return usageErr(fmt.Errorf("--driver-setting %q: write KEY=VALUE", s))
		}
		cfg.Settings[k] = v
	}
	if pf.timeout <= 0 {
		return usageErr(fmt.Errorf("--timeout %v: give a positive duration", pf.timeout))
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), pf.timeout)
	defer cancel()
	bmc, driverName, err := a.powerBMC(ctx, cmd, pf)
	if err != nil {
		return err
	}
	reg, err := a.registry(pf.dir, nil)
	if err != nil {
		return err
	}
	defer reg.Close()
	oob, err := reg.OOB(driverName, cfg)
	if err != nil {
		return powerFailure(fmt.Errorf("oob driver %s: %w", driverName, err))
	}
	a.log.Debug().Str("node", pf.node).Str("bmc", net.JoinHostPort(bmc.Address, strconv.Itoa(bmc.Port))).
		Str("protocol", bmc.Protocol).Int("cipherSuite", bmc.CipherSuite).Str("driver", driverName).Msg("power " + action)
	return a.powerAction(ctx, oob, bmc, pf, action)
}

// powerBMC is the node's BMC as the design describes it (the flags
// overriding its address and the pxe boot settings), with the OOB
// driver's name.
func (a *app) powerBMC(ctx context.Context, cmd *cobra.Command, pf *powerFlags) (drivers.BMC, string, error) {
	l, err := a.load(ctx, pf.roots)
	if err != nil {
		return drivers.BMC{}, "", err
	}
	if l.findings.HasErrors() {
		writeFindingsText(a.stderr, l.findings)
		fmt.Fprintln(a.stderr, l.summary())
		return drivers.BMC{}, "", errInvalid
	}
	d, node := l.design, pf.node
	n := d.Nodes[node]
	if n == nil {
		return drivers.BMC{}, "", usageErr(fmt.Errorf("--node %s: the design has no such node", node))
	}
	ep, err := pf.endpoint(d, n)
	if err != nil {
		return drivers.BMC{}, "", err
	}
	driverName := ep.Type
	ref := ep.PasswordRef
	if ref == "" {
		return drivers.BMC{}, "", powerFailure(fmt.Errorf("node %s has no BMC password reference (oob.credentials.password)", node))
	}
	pw, err := secrets.Resolve(ref)
	if err != nil {
		return drivers.BMC{}, "", powerFailure(fmt.Errorf("node %s: BMC password %s: %w", node, ref, err))
	}
	bmc := driverspec.BMCAt(n, ep, pw)
	if pf.caFile != "" {
		bmc.CAFile, bmc.Fingerprint = pf.caFile, ""
	}
	// pxe: the hardware profile's boot mode and PXE persistence, unless
	// the flags say otherwise.
	if hw := n.Spec.Hardware; hw != nil {
		if !cmd.Flags().Changed("efi") {
			pf.efi = hw.BootMode == "uefi"
		}
		if !cmd.Flags().Changed("persistent") {
			pf.persistent = hw.PXE.Persistent
		}
	}
	if err := pf.overrideAddress(&bmc); err != nil {
		return drivers.BMC{}, "", err
	}
	return bmc, driverName, nil
}

// endpoint is the node's OOB method --oob names: its first (the
// default), or its hardware profile's fallback.
func (pf *powerFlags) endpoint(d *design.Design, n *design.Node) (design.OOBEndpoint, error) {
	first := n.OOB(d.SiteOOBDriver())
	fb, hasFallback := n.OOBFallback()
	switch {
	case pf.method == "" || pf.method == first.Type:
		return first, nil
	case hasFallback && (pf.method == "fallback" || pf.method == fb.Type):
		return fb, nil
	case hasFallback:
		return design.OOBEndpoint{}, usageErr(fmt.Errorf("--oob %s: node %s's BMC methods are %s, then %s (or say fallback)", pf.method, pf.node, first.Type, fb.Type))
	}
	return design.OOBEndpoint{}, usageErr(fmt.Errorf("--oob %s: node %s has one BMC method, %s (its hardware profile names no oob.fallback)", pf.method, pf.node, first.Type))
}

// overrideAddress applies --bmc; the BMC must have an address after it.
func (pf *powerFlags) overrideAddress(bmc *drivers.BMC) error {
	if pf.addr != "" {
		host, port, err := splitHostPort(pf.addr)
		if err != nil {
			return usageErr(fmt.Errorf("--bmc %q: %v", pf.addr, err))
		}
		bmc.Address, bmc.Port = host, port
	}
	if bmc.Address == "" {
		return powerFailure(fmt.Errorf("node %s has no BMC address (oob.address); give --bmc HOST:PORT", pf.node))
	}
	return nil
}

// powerAction runs the action on the BMC and prints its result.
func (a *app) powerAction(ctx context.Context, oob drivers.OOB, bmc drivers.BMC, pf *powerFlags, action string) error {
	node := pf.node
	if action == "status" {
		p, err := oob.PowerStatus(ctx, bmc)
		if err != nil {
			return powerFailure(fmt.Errorf("power status of %s: %w", node, err))
		}
		fmt.Fprintln(a.stdout, p)
		return nil
	}
	step := map[string]func(context.Context) (drivers.Result, error){
		"on":    func(ctx context.Context) (drivers.Result, error) { return oob.PowerOn(ctx, bmc) },
		"off":   func(ctx context.Context) (drivers.Result, error) { return oob.PowerOff(ctx, bmc) },
		"cycle": func(ctx context.Context) (drivers.Result, error) { return oob.PowerCycle(ctx, bmc) },
		"pxe": func(ctx context.Context) (drivers.Result, error) {
			return oob.SetBootDevice(ctx, bmc, drivers.BootDevice{Device: "pxe", Persistent: pf.persistent, EFI: pf.efi})
		},
	}[action]
	r, err := untilDone(ctx, step, func(r drivers.Result) {
		a.log.Info().Str("node", node).Dur("retryAfter", r.RetryAfter).Msg(r.Message)
	})
	if err != nil {
		return powerFailure(fmt.Errorf("power %s of %s: %w", action, node, err))
	}
	if r.Status == drivers.StatusFailed {
		return powerFailure(fmt.Errorf("power %s of %s failed: %s", action, node, r.Message))
	}
	fmt.Fprintln(a.stdout, r.Message)
	return nil
}

// untilDone calls step until it is Done or Failed, waiting as InProgress
// asks; progress reports each InProgress result.
func untilDone(ctx context.Context, step func(context.Context) (drivers.Result, error), progress func(drivers.Result)) (drivers.Result, error) {
	for {
		r, err := step(ctx)
		if err != nil || r.Status != drivers.StatusInProgress {
			return r, err
		}
		progress(r)
		t := time.NewTimer(r.RetryAfter)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return r, fmt.Errorf("still in progress (%s): %w", r.Message, ctx.Err())
		}
	}
}

// powerFailure exits 1 with err.
func powerFailure(err error) error { return &exitError{code: exitInvalid, err: err} }

func splitHostPort(s string) (string, int, error) {
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 || host == "" {
		return "", 0, errors.New("write HOST:PORT with a port from 1 to 65535")
	}
	return host, port, nil
}
