// Command orchestrator is Slipway's one binary. `serve` runs the deploy
// engine with the control API (TCP, and a Unix socket beside the state
// database for local callers) and the introspection API. Every command
// that reads or changes the state (apply, designs, tasks, nodes, events,
// the task commands and verbs, reconcile, drift, inventory, audit...) is a
// client of the control API only (api/client): of --server, else of the
// serve that holds the state database, else of an engine and API it runs
// in process for the command's lifetime (connect.go). The rest need no
// state: validate, render, gensite, drivers, power --design, the virtual
// lab and the demo. The benchmark tools are another binary,
// cmd/slipway-bench.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
)

// Exit codes shared by every command.
const (
	exitOK      = 0
	exitInvalid = 1 // the design has errors
	exitUsage   = 2 // bad usage, unreadable files, state store problems
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// invalid is returned when a design has errors that were already printed.
var errInvalid = &exitError{code: exitInvalid}

func usageErr(err error) error { return &exitError{code: exitUsage, err: err} }

// app holds what every command shares.
type app struct {
	stdin          io.Reader // nil: empty
	stdout, stderr io.Writer
	log            zerolog.Logger
	logLevel       string
	remoteOpts                       // --server, --token, --ca-file (remote.go)
	limits         yamlingest.Limits // --max-file-bytes, --max-design-bytes (designlimits.go)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runIn(ctx, os.Stdin, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line, with an empty standard input, and
// returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runIn(ctx, nil, args, stdout, stderr)
}

// runIn is run with stdin as the standard input.
func runIn(ctx context.Context, stdin io.Reader, args []string, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "error:", ee.err)
		}
		return ee.code
	}
	// cobra's own errors: unknown command or flag, wrong argument count.
	fmt.Fprintln(stderr, "error:", err)
	fmt.Fprintln(stderr, "run 'orchestrator --help' for usage")
	return exitUsage
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "orchestrator",
		Short:         "Slipway: inventory-driven bare-metal orchestration",
		Long:          "Slipway ingests a site design kept in YAML, validates it whole, stores it, and drives servers through IPMI, MAAS and network drivers.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			lvl, err := zerolog.ParseLevel(a.logLevel)
			if err != nil {
				return usageErr(fmt.Errorf("--log-level %q: use debug, info, warn or error", a.logLevel))
			}
			// SyncWriter: serve logs from many goroutines, and stderr may
			// be any writer (a test's buffer), not only a file; the log and
			// the lines written to stderr directly share its lock.
			a.stderr = zerolog.SyncWriter(a.stderr)
			a.log = zerolog.New(zerolog.ConsoleWriter{Out: a.stderr, NoColor: true, TimeFormat: "15:04:05"}).
				Level(lvl).With().Timestamp().Logger()
			return nil
		},
	}
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	a.remoteFlags(root)
	root.AddCommand(a.validateCmd(), a.renderCmd(), a.applyCmd(), a.planCmd(), a.designsCmd(), a.diffCmd(), a.genSiteCmd(), a.driversCmd(), a.labCmd(), a.demoCmd(), a.powerCmd())
	root.AddCommand(a.engineCmds()...)
	root.AddCommand(a.reconcileCmds()...)                  // reconcile.go
	root.AddCommand(a.acceptHardwareCmd())                 // asbuilt.go
	root.AddCommand(a.inventoryCmd())                      // inventory.go
	root.AddCommand(a.consoleCmd())                        // console.go
	root.AddCommand(a.roceCmd())                           // roce.go
	root.AddCommand(a.onboardingCmd(), a.designLayerCmd()) // onboard.go
	root.AddCommand(a.storeCmd(), a.clusterCmd())          // store.go, cluster.go
	root.AddCommand(a.auditCmd(), a.tokenCmd(), a.secretCmd(), a.bootdataCmd())
	root.AddCommand(a.gitCmd())    // git.go
	root.AddCommand(a.fabricCmd()) // fabric.go
	root.AddCommand(a.imagesCmd()) // images.go
	return root
}
