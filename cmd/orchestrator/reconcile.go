package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/orchestrator"
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
			if c, err := a.remote(); err != nil {
				return usageErr(err)
			} else if c != nil {
				out, err := remoteOutput(ef.output)
				if err != nil {
					return err
				}
				rep, err := c.Reconcile(cmd.Context())
				if err != nil {
					return apiErr(err)
				}
				if out != "table" {
					return a.writeOut(out, rep)
				}
				a.printReconcile(rep)
				return nil
			}
			return a.withEngine(cmd.Context(), &ef, func(env *engineEnv) error {
				rep, err := env.engine.Reconcile(cmd.Context(), requester())
				if err != nil {
					return usageErr(err)
				}
				if ef.output == "json" {
					return writeIndented(a.stdout, rep)
				}
				a.printReconcile(rep)
				return nil
			})
		},
	}
	ef.add(cmd, false)
	cmd.AddCommand(a.reconcileStatusCmd())
	return cmd
}

func (a *app) reconcileStatusCmd() *cobra.Command {
	var state, output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the last reconciliation run, the next, and the open drift by kind",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var st orchestrator.ReconcileStatus
			if c, err := a.remote(); err != nil {
				return usageErr(err)
			} else if c != nil {
				if output, err = remoteOutput(output); err != nil {
					return err
				}
				if st, err = c.ReconcileStatus(cmd.Context()); err != nil {
					return apiErr(err)
				}
			} else if err := a.withReader(state, func(e *orchestrator.Engine) (err error) {
				st, err = e.ReconcileStatus(cmd.Context())
				return err
			}); err != nil {
				return usageErr(err)
			}
			switch output {
			case "json", "yaml":
				return a.writeOut(output, st)
			}
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
			return nil
		},
	}
	stateFlag(cmd, &state)
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json (or yaml with --server)")
	return cmd
}

func kindCounts(c map[orchestrator.DriftKind]int) string {
	var parts []string
	for _, k := range orchestrator.DriftKinds {
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
	var state, output string
	var nodes, kinds []string
	cmd := &cobra.Command{
		Use:   "drift",
		Short: "List the open drift: where the provisioner differs from the design or the engine's records",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, k := range kinds {
				if _, err := orchestrator.ParseDriftKind(k); err != nil {
					return usageErr(err)
				}
			}
			var ds []orchestrator.DriftRecord
			if c, err := a.remote(); err != nil {
				return usageErr(err)
			} else if c != nil {
				if output, err = remoteOutput(output); err != nil {
					return err
				}
				for off := 0; ; {
					p, err := c.Drift(cmd.Context(), client.DriftQuery{Node: nodes, Kind: kinds, Offset: off, Limit: 1000})
					if err != nil {
						return apiErr(err)
					}
					ds = append(ds, p.Items...)
					if off += len(p.Items); len(p.Items) == 0 || off >= p.Total {
						break
					}
				}
			} else if err := a.withReader(state, func(e *orchestrator.Engine) (err error) {
				ds, err = e.Drift(cmd.Context())
				return err
			}); err != nil {
				return usageErr(err)
			} else {
				ds = slices.DeleteFunc(ds, func(d orchestrator.DriftRecord) bool {
					return len(nodes) > 0 && !slices.Contains(nodes, d.Node) || len(kinds) > 0 && !slices.Contains(kinds, string(d.Kind))
				})
			}
			switch output {
			case "json", "yaml":
				if ds == nil {
					ds = []orchestrator.DriftRecord{}
				}
				return a.writeOut(output, ds)
			}
			printDrift(a.stdout, ds)
			return nil
		},
	}
	stateFlag(cmd, &state)
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json (or yaml with --server)")
	cmd.Flags().StringSliceVar(&nodes, "node", nil, "only these nodes' drift")
	cmd.Flags().StringSliceVar(&kinds, "kind", nil, "only drift of these kinds: "+kindNames())
	cmd.AddCommand(a.driftResolveCmd())
	return cmd
}

func kindNames() string {
	out := make([]string, len(orchestrator.DriftKinds))
	for i, k := range orchestrator.DriftKinds {
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
			k, err := orchestrator.ParseDriftKind(kind)
			if err != nil {
				return usageErr(err)
			}
			r, err := orchestrator.ParseResolution(resolution)
			if err != nil {
				return usageErr(err)
			}
			if c, err := a.remote(); err != nil {
				return usageErr(err)
			} else if c != nil {
				out, err := remoteOutput(ef.output)
				if err != nil {
					return err
				}
				res, err := c.ResolveDrift(cmd.Context(), argv[0], k, r)
				if err != nil {
					return apiErr(err)
				}
				if out != "table" {
					return a.writeOut(out, res)
				}
				a.printResolved(res)
				return nil
			}
			return a.withEngine(cmd.Context(), &ef, func(env *engineEnv) error {
				res, err := env.engine.ResolveDrift(cmd.Context(), argv[0], k, r, requester(), "")
				if err != nil {
					return usageErr(err)
				}
				if ef.output == "json" {
					if err := writeIndented(a.stdout, res); err != nil {
						return err
					}
				} else {
					a.printResolved(res)
				}
				if res.Task != "" { // this process runs the task: follow it to its end
					return a.follow(cmd.Context(), env.engine, res.Task, ef.output)
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

func (a *app) printResolved(res orchestrator.DriftResolved) {
	fmt.Fprintf(a.stdout, "%s drift of %s: %s: %s\n", res.Drift.Kind, printable(res.Drift.Node), res.Resolution, printable(res.Message))
	if res.Task != "" {
		fmt.Fprintf(a.stdout, "task %s (`orchestrator tasks %s` shows it)\n", res.Task, res.Task)
	}
}

func (a *app) printReconcile(rep orchestrator.SweepReport) {
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

func printDrift(w io.Writer, ds []orchestrator.DriftRecord) {
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

func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
