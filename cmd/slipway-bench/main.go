// Command slipway-bench holds the benchmark tools, apart from the
// operator's binary (cmd/orchestrator): the load generators and fixtures
// that scripts/bench-*.sh and `make bench` drive. None of them touches a
// real site or a state store an operator uses.
//
//	slipway-bench bench-introspection   serve the introspection API of a generated site, for load tests
//	slipway-bench bench-once            send each request of a list once; throughput and latency
//	slipway-bench gen-hostile           write YAML shaped to cost a parser the most memory per byte
//	slipway-bench bench-fabric          time a network driver at scale: ovs on real Open vSwitch (root), or gnmi against the lab's gNMI target
//	slipway-bench bench-baseline        bring N lab nodes with Redfish BMCs to a hardware baseline; time per node against the lab's floor
//	slipway-bench bench-images          upload one image into a lab MAAS region by Slipway's sync and by curl; MiB/s and the ratio
//
// Exit codes: 0 done, 2 bad usage or a failed run.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// exitUsage is the exit code of bad usage and of a failed run (the
// orchestrator's own code for the same).
const exitUsage = 2

// usageError marks an error as the user's to fix (a flag, a file).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErr(err error) error { return &usageError{err: err} }

// app holds what every command shares.
type app struct {
	stdout io.Writer
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout}
	root := &cobra.Command{
		Use:           "slipway-bench",
		Short:         "Slipway's benchmark tools (scripts/bench-*.sh and make bench drive them)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(a.benchIntrospectionCmd(), a.benchOnceCmd(), a.genHostileCmd(), a.benchFabricCmd(), a.benchBaselineCmd(), a.benchImagesCmd())
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "error:", err)
	var ue *usageError
	if !errors.As(err, &ue) {
		// cobra's own errors: unknown command or flag, wrong argument count.
		fmt.Fprintln(stderr, "run 'slipway-bench --help' for usage")
	}
	return exitUsage
}
