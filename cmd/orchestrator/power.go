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
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/oobctl"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/spf13/cobra"
)

// powerActions are the actions of `orchestrator power`.
var powerActions = oobctl.Actions

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
// describes it (package oobctl).
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
	t, err := a.powerTarget(ctx, cmd, pf)
	if err != nil {
		return err
	}
	reg, err := a.registry(pf.dir, nil)
	if err != nil {
		return err
	}
	defer reg.Close()
	oob, err := reg.OOB(t.Driver, cfg)
	if err != nil {
		return powerFailure(fmt.Errorf("oob driver %s: %w", t.Driver, err))
	}
	a.log.Debug().Str("node", pf.node).Str("bmc", net.JoinHostPort(t.BMC.Address, strconv.Itoa(t.BMC.Port))).
		Str("protocol", t.BMC.Protocol).Int("cipherSuite", t.BMC.CipherSuite).Str("driver", t.Driver).Msg("power " + action)
	msg, err := oobctl.Run(ctx, oob, t, action, func(r drivers.Result) {
		a.log.Info().Str("node", pf.node).Dur("retryAfter", r.RetryAfter).Msg(r.Message)
	})
	if err != nil {
		return powerFailure(err)
	}
	fmt.Fprintln(a.stdout, msg)
	return nil
}

// powerTarget loads the design and resolves the node's BMC in it, the
// flags overriding its address, CA and the pxe boot settings.
func (a *app) powerTarget(ctx context.Context, cmd *cobra.Command, pf *powerFlags) (oobctl.Target, error) {
	l, err := a.load(ctx, pf.roots)
	if err != nil {
		return oobctl.Target{}, err
	}
	if l.findings.HasErrors() {
		writeFindingsText(a.stderr, l.findings)
		fmt.Fprintln(a.stderr, l.summary())
		return oobctl.Target{}, errInvalid
	}
	o := oobctl.Options{Node: pf.node, Method: pf.method, Addr: pf.addr, CAFile: pf.caFile}
	if cmd.Flags().Changed("efi") {
		o.EFI = &pf.efi
	}
	if cmd.Flags().Changed("persistent") {
		o.Persistent = &pf.persistent
	}
	t, err := oobctl.Resolve(l.design, o)
	var ue *oobctl.UsageError
	switch {
	case errors.As(err, &ue):
		return t, usageErr(fmt.Errorf("--%s %s: %w", ue.Option, ue.Value, ue.Err))
	case errors.Is(err, oobctl.ErrNoAddress):
		return t, powerFailure(fmt.Errorf("%w; give --bmc HOST:PORT", err))
	case err != nil:
		return t, powerFailure(err)
	}
	return t, nil
}

// powerFailure exits 1 with err.
func powerFailure(err error) error { return &exitError{code: exitInvalid, err: err} }
