package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/api"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
)

func (a *app) auditCmd() *cobra.Command {
	var sf stateFlags
	var output string
	var since uint64
	var limit int
	cmd := &cobra.Command{
		Use:   "audit [--since SEQ] [--limit N] [-o text|json|yaml]",
		Short: "Show the API's audit log (an admin token with --server)",
		Long: `Audit prints the control API's audit log: one record per mutating call,
allowed or refused, with who made it (the token's ID and name, never the
token; the OS user for local commands), what (method and path), when, from
where, and the outcome. With --server it needs an admin token.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			output, err := checkOutput(output)
			if err != nil {
				return err
			}
			if limit < 0 {
				return usageErr(fmt.Errorf("--limit %d: want 0 (all) or more", limit))
			}
			s, err := a.connect(cmd.Context(), &sf, readState)
			if err != nil {
				return err
			}
			defer s.close()
			recs, err := auditRecords(cmd, s.c, since, limit)
			return a.show(output, recs, err, func() error { return a.printAudit(recs) })
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	cmd.Flags().Uint64Var(&since, "since", 0, "only records after this sequence number")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many records (0: all)")
	return cmd
}

// auditRecords reads the audit log after since, page by page, at most
// limit records (0: all).
func auditRecords(cmd *cobra.Command, c *client.Client, since uint64, limit int) ([]apitypes.AuditRecord, error) {
	recs := []apitypes.AuditRecord{}
	for {
		n := api.MaxAuditPageRecords
		if limit > 0 {
			n = min(n, limit-len(recs))
		}
		p, err := c.Audit(cmd.Context(), since, n)
		if err != nil {
			return nil, err
		}
		recs = append(recs, p.Items...)
		if !p.More || (limit > 0 && len(recs) >= limit) {
			return recs, nil
		}
		since = p.Next
	}
}

func (a *app) printAudit(recs []apitypes.AuditRecord) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tWHO\tROLE\tCALL\tSTATUS\tOUTCOME\tFROM\tREQUEST\tDETAIL")
	for _, r := range recs {
		who := orDefault(r.Who.ID, "-")
		if r.Who.Name != "" {
			who = r.Who.Name + " (" + r.Who.ID + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s %s\t%d\t%s\t%s\t%s\t%s\n", r.Seq, r.Time.Local().Format("2006-01-02 15:04:05"),
			printable(who), orDefault(string(r.Who.Role), "-"), r.Method, printable(r.Path), r.Status, r.Outcome,
			printable(r.Remote), printable(r.RequestID), printable(r.Detail))
	}
	return tw.Flush()
}
