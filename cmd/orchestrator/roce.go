package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/siteregistry"
)

// roceCmd: `roce import FILE.csv --site S` and `roce list --site S`,
// clients of the site's RoCE assignment routes (admin).
func (a *app) roceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "roce",
		Short: "A site's RoCE address assignments: import a CSV, list them",
	}
	cmd.AddCommand(a.roceImportCmd(), a.roceListCmd())
	return cmd
}

func (a *app) roceImportCmd() *cobra.Command {
	var sf stateFlags
	var site, output string
	cmd := &cobra.Command{
		Use:   "import FILE.csv --site SITE",
		Short: "Upsert a site's RoCE assignments from a CSV file (hostname, interface, ipv4_cidr)",
		Long: `Import reads a CSV file whose header names the columns hostname, interface
and ipv4_cidr (any order) and stores its rows as the site's RoCE
assignments in one bulk upsert (POST /api/v1/admin/maas-sites/{id}/roce-assignments):
each row replaces the site's assignment of its hostname and interface. The
server checks the whole file against the site's other assignments and the
current design, and stores nothing unless every row passes: the error lists
each finding with its row (row 1 is the first after the header).
SITE is the site record's ID or name. Needs an admin token with --server.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if site == "" {
				return usageErr(errors.New("--site SITE is required (the site record's ID or name)"))
			}
			f, err := os.Open(argv[0])
			if err != nil {
				return usageErr(err)
			}
			defer f.Close()
			items, err := siteregistry.ParseRoCECSV(f)
			if err != nil {
				return usageErr(fmt.Errorf("%s: %w", argv[0], err))
			}
			return a.call(cmd.Context(), &sf, runEngine, output, func(s *session, output string) error {
				return a.roceImport(cmd.Context(), s, site, items, output)
			})
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&site, "site", "", "the site record's ID or name")
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) roceImport(ctx context.Context, s *session, site string, items []siteregistry.RoCEItem, output string) error {
	rec, err := s.c.SiteNamed(ctx, site)
	if err != nil {
		return apiErr(err)
	}
	out, err := s.c.UpsertRoCE(ctx, rec.ID, items)
	return a.show(output, out, err, func() error {
		_, err := fmt.Fprintf(a.stdout, "site %s: %d RoCE assignments stored\n", rec.Name, len(out.Items))
		return err
	})
}

func (a *app) roceListCmd() *cobra.Command {
	var sf stateFlags
	var site, host, output string
	cmd := &cobra.Command{
		Use:   "list --site SITE [--hostname NODE]",
		Short: "List a site's RoCE assignments",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if site == "" {
				return usageErr(errors.New("--site SITE is required (the site record's ID or name)"))
			}
			return a.call(cmd.Context(), &sf, runEngine, output, func(s *session, output string) error {
				rec, err := s.c.SiteNamed(cmd.Context(), site)
				if err != nil {
					return apiErr(err)
				}
				out, err := s.c.RoCE(cmd.Context(), rec.ID, host)
				return a.show(output, out, err, func() error { return a.printRoCE(out) })
			})
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&site, "site", "", "the site record's ID or name")
	cmd.Flags().StringVar(&host, "hostname", "", "only this node's")
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) printRoCE(out apitypes.RoCEAssignments) error {
	rows := make([][]string, 0, len(out.Items))
	for _, x := range out.Items {
		rows = append(rows, []string{x.Hostname, x.Interface, x.IPv4CIDR, x.ID})
	}
	return a.printTable("no RoCE assignments", "HOSTNAME\tINTERFACE\tIPV4_CIDR\tID", rows)
}
