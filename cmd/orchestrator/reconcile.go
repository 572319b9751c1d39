package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// reconcileCmds are `orchestrator reconcile` and `orchestrator drift`:
// through the API with --server, else on the local state database (which
// `serve` holds while it runs: use --server then).
func (a *app) reconcileCmds() []*cobra.Command {
	return []*cobra.Command{a.reconcileCmd(), a.driftCmd()}
}

func (a *app) reconcileCmd() *cobra.Command {
	var ef engineFlags
	cmd := &cobra.Command{
		Use:   "reconcile",
		Short: "Compare the provisioner with the design now: record, clear and (per the Site's policy) repair drift",
		Long: "Runs one reconciliation and prints what it found: drift first seen, gone and repaired, and the open drift.\n" +
			"`serve` reconciles on its own every reconciliation interval; `orchestrator sweep` is the same run.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), &ef.stateFlags, runEngine, ef.output, func(s *session, output string) error {
				rep, err := s.c.Reconcile(cmd.Context())
				return a.show(output, rep, err, func() error { a.printReconcile(rep); return nil })
			})
		},
	}
	ef.add(cmd, false)
	cmd.AddCommand(a.reconcileStatusCmd())
	return cmd
}

func (a *app) reconcileStatusCmd() *cobra.Command {
	var sf stateFlags
	var output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the last reconciliation run, the next, and the open drift by kind",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				st, err := s.c.ReconcileStatus(cmd.Context())
				return a.show(output, st, err, func() error { a.printReconcileStatus(st); return nil })
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) printReconcileStatus(st apitypes.ReconcileStatus) {
	if st.LastRun == nil {
		fmt.Fprintln(a.stdout, "last run: never")
	} else {
		r := st.LastRun
		fmt.Fprintf(a.stdout, "last run: %s by %s, %d owned machines, %d nodes examined, %d open", r.Started.Format(time.RFC3339), printable(r.Trigger), r.Owned, r.Examined, r.Open)
		if r.Error != "" {
			fmt.Fprintf(a.stdout, ", failed: %s", printable(r.Error))
		}
		fmt.Fprintln(a.stdout)
	}
	if st.NextRun.IsZero() {
		fmt.Fprintf(a.stdout, "next run: not scheduled (no server runs; interval %s)\n", st.Interval)
	} else {
		fmt.Fprintf(a.stdout, "next run: %s (interval %s)\n", st.NextRun.Format(time.RFC3339), st.Interval)
	}
	fmt.Fprintf(a.stdout, "open drift: %d%s\n", st.Open, kindCounts(st.Counts))
}

func kindCounts(c map[record.DriftKind]int) string {
	var parts []string
	for _, k := range record.DriftKinds {
		if c[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func (a *app) driftCmd() *cobra.Command {
	var sf stateFlags
	var output string
	var nodes, kinds []string
	cmd := &cobra.Command{
		Use:   "drift",
		Short: "List the open drift: where the provisioner differs from the design or the engine's records",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, k := range kinds {
				if _, err := record.ParseDriftKind(k); err != nil {
					return usageErr(err)
				}
			}
			return a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				ds, err := allDrift(cmd.Context(), s.c, client.DriftQuery{Node: nodes, Kind: kinds, Limit: 1000})
				return a.show(output, ds, err, func() error { printDrift(a.stdout, ds); return nil })
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	cmd.Flags().StringSliceVar(&nodes, "node", nil, "only these nodes' drift")
	cmd.Flags().StringSliceVar(&kinds, "kind", nil, "only drift of these kinds: "+kindNames())
	cmd.AddCommand(a.driftResolveCmd())
	return cmd
}

// allDrift lists the open drift q selects, every page.
func allDrift(ctx context.Context, c *client.Client, q client.DriftQuery) ([]apitypes.DriftRecord, error) {
	return allPages(func(offset int) (apitypes.Page[apitypes.DriftRecord], error) {
		q.Offset = offset
		return c.Drift(ctx, q)
	})
}

func kindNames() string {
	out := make([]string, len(record.DriftKinds))
	for i, k := range record.DriftKinds {
		out[i] = string(k)
	}
	return strings.Join(out, ", ")
}

func (a *app) driftResolveCmd() *cobra.Command {
	var ef engineFlags
	var kind, resolution string
	cmd := &cobra.Command{
		Use:   "resolve NODE --kind KIND --resolution accept|repair|release",
		Short: "Resolve a node's drift: accept the observed state, repair it to the design, or release the machine",
		Long: "accept: the observed state stays and is not reported again while it lasts (status drift: the node is adopted).\n" +
			"repair: what the design says is put back (hostname, tags, kernel parameters, power, ownership marker; a leak is released).\n" +
			"release: a leaked machine is released; a node's machine is destroyed by a destroy_nodes task.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			k, err := record.ParseDriftKind(kind)
			if err != nil {
				return usageErr(err)
			}
			r, err := record.ParseResolution(resolution)
			if err != nil {
				return usageErr(err)
			}
			return a.call(cmd.Context(), &ef.stateFlags, runEngine, ef.output, func(s *session, output string) error {
				res, err := s.c.ResolveDrift(cmd.Context(), argv[0], k, r)
				if err != nil {
					return apiErr(err)
				}
				if err := a.emit(output, res, func() error { a.printResolved(res); return nil }); err != nil {
					return err
				}
				if res.Task != "" && s.inProcess { // this process runs the task: follow it to its end
					return a.follow(cmd.Context(), s, res.Task, output)
				}
				return nil
			})
		},
	}
	ef.add(cmd, false)
	cmd.Flags().StringVar(&kind, "kind", "", "the drift's kind: "+kindNames())
	cmd.Flags().StringVar(&resolution, "resolution", "", "accept, repair or release")
	_ = cmd.MarkFlagRequired("kind")
	_ = cmd.MarkFlagRequired("resolution")
	return cmd
}

func (a *app) printResolved(res apitypes.DriftResolved) {
	fmt.Fprintf(a.stdout, "%s drift of %s: %s: %s\n", res.Drift.Kind, printable(res.Drift.Node), res.Resolution, printable(res.Message))
	if res.Task != "" {
		fmt.Fprintf(a.stdout, "task %s (`orchestrator tasks %s` shows it)\n", res.Task, res.Task)
	}
}

func (a *app) printReconcile(rep apitypes.SweepReport) {
	fmt.Fprintf(a.stdout, "reconciled at %s: %d owned machines, %d nodes examined\n", rep.Time.Format(time.RFC3339), rep.Owned, rep.Examined)
	for _, l := range []struct {
		what string
		keys []string
	}{{"detected", rep.Detected}, {"cleared", rep.Cleared}, {"repaired", rep.Repaired}} {
		if len(l.keys) > 0 {
			fmt.Fprintf(a.stdout, "%s: %s\n", l.what, printable(strings.Join(l.keys, ", ")))
		}
	}
	if len(rep.Records) == 0 {
		fmt.Fprintln(a.stdout, "no open drift")
		return
	}
	printDrift(a.stdout, rep.Records)
}

func printDrift(w io.Writer, ds []apitypes.DriftRecord) {
	if len(ds) == 0 {
		fmt.Fprintln(w, "no open drift")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tKIND\tMACHINE\tEXPECTED\tOBSERVED\tPOLICY\tFIRST SEEN\tLAST SEEN")
	for _, d := range ds {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", printable(d.Node), d.Kind, printable(d.MachineID), printable(d.Expected), printable(d.Observed),
			d.Policy, d.FirstSeen.Format(time.RFC3339), d.LastSeen.Format(time.RFC3339))
	}
	_ = tw.Flush()
}
