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

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/driverspec"
	"github.com/slipway-dev/slipway/secrets"
	"github.com/spf13/cobra"
)

// powerActions are the actions of `orchestrator power`.
var powerActions = []string{"status", "on", "off", "cycle", "pxe"}

func (a *app) powerCmd() *cobra.Command {
	var (
		roots      []string
		node, addr string
		persistent bool
		efi        bool
		timeout    time.Duration
		settings   []string
		dir        string
	)
	cmd := &cobra.Command{
		Use:   "power status|on|off|cycle|pxe --node NAME --design ROOT... [--bmc HOST:PORT]",
		Short: "Read or change a node's power and boot device through its BMC",
		Long: `Power talks to one node's BMC with the site's OOB driver (ipmi unless the
Site says otherwise). The BMC's address, port, protocol, cipher suite,
privilege, user and password reference come from the design; the password
reference (env:VAR, file:/path, or secret:NAME read from the environment
variable SLIPWAY_SECRET_<NAME>) is resolved here and handed to the driver,
never put on a command line.

  status  prints on or off
  on      powers the node on (nothing to do when it is on)
  off     powers the node off at once (not a soft shutdown)
  cycle   power cycles a node that is on, powers on one that is off, and
          waits until it is on
  pxe     makes the node boot from the network next time, or every time
          (--persistent), UEFI or legacy BIOS (--efi=true|false); both
          default to the node's hardware profile (pxe.persistent, bootMode)

--bmc HOST:PORT overrides the BMC's address, e.g. for a virtual lab BMC on
127.0.0.1. Exit 1 when the BMC can't be reached, rejects the credentials
or refuses the action; exit 2 for bad usage.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || !slices.Contains(powerActions, args[0]) {
				return usageErr(fmt.Errorf("give one action: %s", strings.Join(powerActions, ", ")))
			}
			action := args[0]
			if c, err := a.remote(); err != nil {
				return usageErr(err)
			} else if c != nil {
				return a.remotePower(cmd, c, action, node)
			}
			if node == "" {
				return usageErr(errors.New("--node NAME is required"))
			}
			if len(roots) == 0 {
				return usageErr(errors.New("--design ROOT is required: the design names the node's BMC and credentials"))
			}
			if (cmd.Flags().Changed("persistent") || cmd.Flags().Changed("efi")) && action != "pxe" {
				return usageErr(errors.New("--persistent and --efi go with pxe"))
			}
			cfg := drivers.Config{Settings: map[string]string{}}
			for _, s := range settings {
				k, v, ok := strings.Cut(s, "=")
				if !ok || k == "" {
					return usageErr(fmt.Errorf("--driver-setting %q: write KEY=VALUE", s))
				}
				cfg.Settings[k] = v
			}
			if timeout <= 0 {
				return usageErr(fmt.Errorf("--timeout %v: give a positive duration", timeout))
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()

			l, err := a.load(ctx, roots)
			if err != nil {
				return err
			}
			if l.findings.HasErrors() {
				writeFindingsText(a.stderr, l.findings)
				fmt.Fprintln(a.stderr, l.summary())
				return errInvalid
			}
			d := l.design
			n := d.Nodes[node]
			if n == nil {
				return usageErr(fmt.Errorf("--node %s: the design has no such node", node))
			}
			driverName := "ipmi"
			if d.Site != nil && d.Site.Spec.Drivers.OOB != "" {
				driverName = d.Site.Spec.Drivers.OOB
			}
			ref := n.OOB(driverName).PasswordRef
			if ref == "" {
				return powerFailure(fmt.Errorf("node %s has no BMC password reference (oob.credentials.password)", node))
			}
			pw, err := secrets.Resolve(ref)
			if err != nil {
				return powerFailure(fmt.Errorf("node %s: BMC password %s: %w", node, ref, err))
			}
			bmc := driverspec.BMC(d, n, pw)
			// pxe: the hardware profile's boot mode and PXE persistence,
			// unless the flags say otherwise.
			if hw := n.Spec.Hardware; hw != nil {
				if !cmd.Flags().Changed("efi") {
					efi = hw.BootMode == "uefi"
				}
				if !cmd.Flags().Changed("persistent") {
					persistent = hw.PXE.Persistent
				}
			}
			if addr != "" {
				host, port, err := splitHostPort(addr)
				if err != nil {
					return usageErr(fmt.Errorf("--bmc %q: %v", addr, err))
				}
				bmc.Address, bmc.Port = host, port
			}
			if bmc.Address == "" {
				return powerFailure(fmt.Errorf("node %s has no BMC address (oob.address); give --bmc HOST:PORT", node))
			}

			reg, err := a.registry(dir)
			if err != nil {
				return err
			}
			defer reg.Close()
			oob, err := reg.OOB(driverName, cfg)
			if err != nil {
				return powerFailure(fmt.Errorf("oob driver %s: %w", driverName, err))
			}
			a.log.Debug().Str("node", node).Str("bmc", net.JoinHostPort(bmc.Address, strconv.Itoa(bmc.Port))).
				Str("protocol", bmc.Protocol).Int("cipherSuite", bmc.CipherSuite).Str("driver", driverName).Msg("power " + action)

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
					return oob.SetBootDevice(ctx, bmc, drivers.BootDevice{Device: "pxe", Persistent: persistent, EFI: efi})
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
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&roots, "design", nil, "design root (repeatable; later roots layer over earlier ones)")
	f.StringVar(&node, "node", "", "name of the node")
	f.StringVar(&addr, "bmc", "", "BMC address HOST:PORT overriding the design's (e.g. a lab BMC on 127.0.0.1)")
	f.BoolVar(&persistent, "persistent", false, "pxe: boot from the network every time, not only next time (default: the hardware profile's pxe.persistent)")
	f.BoolVar(&efi, "efi", false, "pxe: UEFI network boot rather than legacy BIOS (default: the hardware profile's bootMode)")
	f.DurationVar(&timeout, "timeout", 2*time.Minute, "give up after this long")
	f.StringArrayVar(&settings, "driver-setting", nil, "OOB driver setting KEY=VALUE (repeatable; see docs/drivers.md)")
	pluginDirFlag(cmd, &dir)
	return cmd
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
