package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
)

// nodeQueryFlags filter the node list.
type nodeQueryFlags struct {
	stages, outcomes, racks, tags, labels, lifecycles []string
}

func (q *nodeQueryFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&q.stages, "stage", nil, "only nodes in this stage (repeatable)")
	f.StringSliceVar(&q.outcomes, "outcome", nil, "only nodes with this outcome (repeatable)")
	f.StringSliceVar(&q.lifecycles, "lifecycle", nil, "only nodes in this lifecycle state: new, preparing, ready, deploying, deployed, releasing, released, failed, cancelled (repeatable)")
	f.StringSliceVar(&q.racks, "rack", nil, "only nodes in this rack (repeatable)")
	f.StringSliceVar(&q.tags, "tag", nil, "only nodes with this tag (repeatable; any of them)")
	f.StringSliceVar(&q.labels, "label", nil, "only nodes with this label key=value (repeatable; all of them)")
}

func (q *nodeQueryFlags) set() bool {
	return len(q.stages)+len(q.outcomes)+len(q.racks)+len(q.tags)+len(q.labels)+len(q.lifecycles) > 0
}

// query is the API's node query, the labels checked.
func (q *nodeQueryFlags) query() (client.NodeQuery, error) {
	for _, l := range q.labels {
		if k, _, ok := strings.Cut(l, "="); !ok || k == "" {
			return client.NodeQuery{}, usageErr(fmt.Errorf("--label %q: want key=value", l))
		}
	}
	return client.NodeQuery{Stage: q.stages, Outcome: q.outcomes, Lifecycle: q.lifecycles, Rack: q.racks, Tag: q.tags, Label: q.labels, Limit: 1000}, nil
}

func (a *app) nodesCmd() *cobra.Command {
	var sf stateFlags
	var output string
	var nq nodeQueryFlags
	cmd := &cobra.Command{
		Use:   "nodes [NAME]",
		Short: "List the nodes with their workflow state, or show one in full",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			output, err := checkOutput(output)
			if err != nil {
				return err
			}
			q, err := nq.query()
			if err != nil {
				return err
			}
			if len(argv) == 1 && nq.set() {
				return usageErr(errors.New("the node filters list nodes: give no NAME with them"))
			}
			s, err := a.connect(cmd.Context(), &sf, readState)
			if err != nil {
				return err
			}
			defer s.close()
			if len(argv) == 1 {
				n, err := s.c.Node(cmd.Context(), argv[0])
				return a.show(output, n, err, func() error { return writeDoc(a.stdout, "json", n) }) // a node in full is a document
			}
			ns, err := allNodes(cmd.Context(), s.c, q)
			return a.show(output, ns, err, func() error { return a.printNodes(ns) })
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	nq.add(cmd)
	return cmd
}

// allNodes lists the nodes q selects, every page.
func allNodes(ctx context.Context, c *client.Client, q client.NodeQuery) ([]apitypes.NodeSummary, error) {
	return allPages(func(offset int) (apitypes.Page[apitypes.NodeSummary], error) {
		q.Offset = offset
		return c.Nodes(ctx, q)
	})
}

func (a *app) printNodes(ns []apitypes.NodeSummary) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tRACK\tLIFECYCLE\tLAST ACTION\tSTAGE\tOUTCOME\tMACHINE\tOBSERVED\tTASK\tREASON")
	for _, n := range ns {
		outcome := string(n.Outcome)
		if n.Frozen {
			outcome += " (frozen)"
		}
		reason := n.Reason
		if n.Orphan {
			reason = "orphan: not in the current design, machine " + n.MachineID + " still held; `orchestrator destroy --node " + n.Name + "` releases it"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, orDefault(n.Rack, "-"), orDefault(string(n.Lifecycle), "-"),
			orDefault(string(n.Action), "-"), n.Stage, outcome, n.MachineID, printable(n.Observed), n.Task, printable(reason))
	}
	return tw.Flush()
}

func (a *app) eventsCmd() *cobra.Command {
	var sf stateFlags
	var output, task, node string
	var after uint64
	var follow bool
	cmd := &cobra.Command{
		Use:   "events [--task ID] [--node NAME] [--since SEQ] [--follow]",
		Short: "Show the engine's event log",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				if follow && s.inProcess {
					return usageErr(errors.New("--follow streams the events of a running engine: start `orchestrator serve` (the command then talks to it) or give --server"))
				}
				if follow {
					return a.followEvents(cmd.Context(), s.c, after, task, node, output)
				}
				evs, err := allEvents(cmd.Context(), s.c, after, task, node)
				return a.show(output, evs, err, func() error {
					for _, ev := range evs {
						a.printEvent(ev)
					}
					return nil
				})
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	cmd.Flags().StringVar(&task, "task", "", "only this task's events")
	cmd.Flags().StringVar(&node, "node", "", "only this node's events")
	cmd.Flags().Uint64Var(&after, "since", 0, "only events after this sequence number")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep streaming new events until interrupted")
	return cmd
}

// allEvents reads the event log after since, every page.
func allEvents(ctx context.Context, c *client.Client, since uint64, task, node string) ([]apitypes.Event, error) {
	evs := []apitypes.Event{}
	const page = 1000
	for {
		p, err := c.Events(ctx, since, task, node, page)
		if err != nil {
			return nil, err
		}
		evs = append(evs, p...)
		if len(p) < page {
			return evs, nil
		}
		since = p[len(p)-1].Seq
	}
}

// followEvents streams events until interrupted: JSON one per line, YAML
// one document each, or text.
func (a *app) followEvents(ctx context.Context, c *client.Client, since uint64, task, node, output string) error {
	enc := json.NewEncoder(a.stdout)
	err := c.StreamEvents(ctx, since, task, node, func(ev apitypes.Event) error {
		switch output {
		case "json":
			return enc.Encode(ev)
		case "yaml":
			fmt.Fprintln(a.stdout, "---")
			return writeDoc(a.stdout, "yaml", ev)
		}
		a.printEvent(ev)
		return nil
	})
	if ctx.Err() != nil {
		return nil // interrupted: the normal end of a follow
	}
	return apiErr(err)
}

func (a *app) printEvent(ev apitypes.Event) {
	fmt.Fprintf(a.stdout, "%6d %s %-5s %-10s %-12s %-12s %s\n", ev.Seq, ev.Time.Local().Format("15:04:05.000"), ev.Level, printable(ev.Kind),
		ev.Node, ev.Stage, printable(ev.Message))
}

// nodeVerbCmd runs adopt, mark-manual-intervention or release-manual and
// prints the node's record.
func (a *app) nodeVerbCmd(verb, short string) *cobra.Command {
	var ef engineFlags
	var reason string
	cmd := &cobra.Command{
		Use:   verb + " NODE",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.call(cmd.Context(), &ef.stateFlags, runEngine, ef.output, func(s *session, output string) error {
				var rec apitypes.NodeRecord
				var err error
				if verb == client.NodeAdopt && reason != "" {
					rec, err = s.c.AdoptMachine(cmd.Context(), argv[0], reason)
				} else {
					rec, err = s.c.NodeVerb(cmd.Context(), argv[0], verb, reason)
				}
				return a.show(output, rec, err, func() error { return writeDoc(a.stdout, "json", rec) }) // the record is a document
			})
		},
	}
	ef.add(cmd, false)
	switch verb {
	case client.NodeMarkManual:
		cmd.Flags().StringVar(&reason, "reason", "", "why the node is frozen (shown with it)")
	case client.NodeAdopt: // the verb's one option travels as reason does
		cmd.Use = verb + " NODE [--machine SYSTEM_ID]"
		cmd.Flags().StringVar(&reason, "machine", "", "attach this provisioner machine to the node (a leaked machine the sweep reports: it must carry this orchestrator's marker for the node, or none, and no other node may claim it)")
	}
	return cmd
}

// sweepCmd runs one leak and drift sweep (the reconciliation) and prints
// its report.
func (a *app) sweepCmd() *cobra.Command {
	var ef engineFlags
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Find leaked machines and drifted nodes now (the reconciliation `reconcile` runs)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), &ef.stateFlags, runEngine, ef.output, func(s *session, output string) error {
				rep, err := s.c.Reconcile(cmd.Context())
				return a.show(output, rep, err, func() error { return writeDoc(a.stdout, "json", rep) })
			})
		},
	}
	ef.add(cmd, false)
	return cmd
}
