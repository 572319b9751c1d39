package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/internal/hostileyaml"
	"github.com/slipway-dev/slipway/server"
)

// genHostileCmd writes hostile YAML for the memory benchmark
// (scripts/bench-hostile.sh).
func (a *app) genHostileCmd() *cobra.Command {
	var shape, out string
	size := server.ByteSize(1 << 20)
	cmd := &cobra.Command{
		Use:   "gen-hostile --shape SHAPE --size SIZE --out FILE",
		Short: "Write YAML shaped to cost a parser the most memory per byte, for benchmarks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageErr(fmt.Errorf("--out FILE is required"))
			}
			b, err := hostileyaml.Generate(shape, int(size))
			if err != nil {
				return usageErr(err)
			}
			if err := os.WriteFile(out, b, 0o644); err != nil {
				return usageErr(err)
			}
			fmt.Fprintf(a.stdout, "wrote %d bytes of %s to %s\n", len(b), shape, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&shape, "shape", "flow-list", "one of "+strings.Join(hostileyaml.Shapes(), ", "))
	cmd.Flags().Var(&size, "size", "about how many bytes to write (8MiB, 1048576)")
	cmd.Flags().StringVar(&out, "out", "", "file to write")
	return cmd
}
