package main

import (
	"fmt"

	"github.com/slipway-dev/slipway/internal/gensite"
	"github.com/spf13/cobra"
)

func (a *app) genSiteCmd() *cobra.Command {
	var nodes, sites int
	var out string
	cmd := &cobra.Command{
		Use:   "gen-site --nodes N --out DIR",
		Short: "Write a synthetic valid site design of N nodes",
		Long: `Gen-site writes a synthetic site that validates clean: N nodes in racks of 40
(one file per rack), about N/100 leaf host profiles at the end of chains
4 profiles deep, two hardware profiles and a boot action. For benchmarks
and load tests.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageErr(fmt.Errorf("--out DIR is required"))
			}
			files, err := gensite.Write(out, gensite.Options{Nodes: nodes, Sites: sites})
			if err != nil {
				return usageErr(err)
			}
			fmt.Fprintf(a.stdout, "wrote %d nodes in %d files to %s\n", nodes, len(files), out)
			return nil
		},
	}
	cmd.Flags().IntVar(&nodes, "nodes", 100, "number of nodes")
	cmd.Flags().IntVar(&sites, "sites", 1, "split the racks among this many Sites (synthetic, synthetic-2, ...)")
	cmd.Flags().StringVar(&out, "out", "", "directory to write the site into")
	return cmd
}
