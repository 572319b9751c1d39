package main

import (
	"github.com/spf13/cobra"

	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/server"
)

// designLimitFlags adds --max-file-bytes and --max-design-bytes, which
// bound what the command reads of the design roots.
func (a *app) designLimitFlags(cmd *cobra.Command) {
	a.limits = yamlingest.Limits{}.OrDefault()
	cmd.Flags().Var((*server.ByteSize)(&a.limits.FileBytes), "max-file-bytes", "largest design file read (8MiB, 512KiB, bytes)")
	cmd.Flags().Var((*server.ByteSize)(&a.limits.DesignBytes), "max-design-bytes", "largest design read, all files together")
}

// formatBytes writes n with the largest binary unit that divides it.
func formatBytes(n int64) string { return server.FormatBytes(n) }
