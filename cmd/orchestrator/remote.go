package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/progress"
	"github.com/slipway-dev/slipway/orchestrator"
)

// remoteOpts point the CLI at an orchestrator's API (embedded in app).
type remoteOpts struct {
	server, token, caFile string
}

// Environment variables behind the remote flags.
const (
	envServer = "SLIPWAY_SERVER"
	envToken  = "SLIPWAY_TOKEN"
	envCAFile = "SLIPWAY_CA_FILE"
)

// remoteFlags adds --server, --token and --ca-file to root, and the
// commands that exist only against a server (audit).
func (a *app) remoteFlags(root *cobra.Command) {
	pf := root.PersistentFlags()
	// The token's default is never the environment's value: cobra would
	// print it in --help.
	pf.StringVar(&a.server, "server", "", "URL of an orchestrator's API, e.g. https://slipway.example:8443 (env "+envServer+"); "+
		"apply, designs, diff, task commands, tasks, nodes, inventory, accept-hardware, events, reconcile, drift, verbs, power and audit then act through it, and their -o also takes table and yaml")
	pf.StringVar(&a.token, "token", "", "bearer token for --server (env "+envToken+", which keeps it out of the process list)")
	pf.StringVar(&a.caFile, "ca-file", "", "PEM certificates trusted for an https --server besides the system's (env "+envCAFile+")")
	root.AddCommand(a.auditCmd())
}

// remote is the API client the flags or the environment ask for; nil, nil
// when no server is set.
func (a *app) remote() (*client.Client, error) {
	server := strings.TrimSpace(orDefault(a.server, os.Getenv(envServer)))
	if server == "" {
		return nil, nil
	}
	token := strings.TrimSpace(orDefault(a.token, os.Getenv(envToken)))
	if token == "" {
		return nil, errors.New("--server needs an API token: pass --token or set " + envToken)
	}
	var opts []client.Option
	if ca := orDefault(a.caFile, os.Getenv(envCAFile)); ca != "" {
		opts = append(opts, client.WithCAFile(ca))
	}
	c, err := client.New(server, token, opts...)
	if err != nil {
		return nil, err
	}
	if u, err := url.Parse(c.BaseURL()); err == nil && u.Scheme == "http" && !loopback(u.Hostname()) {
		a.log.Warn().Str("server", u.Redacted()).Msg("the API token goes over plain http: use https beyond this host")
	}
	return c, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// remoteOutput checks -o for a remote command: table (or text), json, yaml.
func remoteOutput(o string) (string, error) {
	switch o {
	case "", "text", "table":
		return "table", nil
	case "json", "yaml":
		return o, nil
	}
	return "", usageErr(fmt.Errorf("-o %q: use table, json or yaml", o))
}

// apiErr is a failed API call: exit 2 with the server's answer (status,
// detail, request ID).
func apiErr(err error) error {
	if err == nil {
		return nil
	}
	return usageErr(err)
}

// writeOut prints v as indented JSON or as YAML.
func (a *app) writeOut(format string, v any) error {
	if format == "yaml" {
		return writeDoc(a.stdout, "yaml", v)
	}
	return writeDoc(a.stdout, "json", v)
}

// printable drops control characters from text the server sends before it
// goes to a terminal.
func printable(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}

// ---- designs ----

func (a *app) remoteApply(cmd *cobra.Command, c *client.Client, roots []string) error {
	res, err := c.ApplyDesign(cmd.Context(), roots)
	var pe *client.ProblemError
	if errors.As(err, &pe) && pe.Status == http.StatusUnprocessableEntity {
		writeFindingsText(a.stderr, pe.Findings)
		fmt.Fprintln(a.stderr, printable(pe.Detail))
		return errInvalid
	}
	if err != nil {
		return apiErr(err)
	}
	writeFindingsText(a.stderr, res.Warnings)
	a.log.Info().Str("revision", res.Revision).Str("result", res.Result).Str("server", c.BaseURL()).Msg("design applied")
	switch res.Result {
	case "unchanged":
		fmt.Fprintf(a.stdout, "revision %s is already current: nothing stored\n", short(res.Revision))
		return nil
	case "restored":
		fmt.Fprintf(a.stdout, "revision %s (stored before) is current again\n", short(res.Revision))
	default:
		fmt.Fprintf(a.stdout, "revision %s stored\n", short(res.Revision))
	}
	if res.Diff != nil {
		writeDiff(a.stdout, *res.Diff)
	}
	return nil
}

func (a *app) remoteDesigns(cmd *cobra.Command, c *client.Client) error {
	hist, err := c.Designs(cmd.Context())
	if err != nil {
		return apiErr(err)
	}
	if len(hist) == 0 {
		fmt.Fprintln(a.stdout, "no design applied yet: run 'orchestrator apply --server URL ROOT...'")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tAPPLIED\tNODES\tGIT\tROOTS")
	for i, h := range hist {
		mark := " "
		if i == len(hist)-1 {
			mark = "*"
		}
		git := "-"
		if h.GitCommit != "" {
			git = short(h.GitCommit)
			if h.GitDirty {
				git += "+dirty"
			}
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%d\t%s\t%s\n", mark, short(h.ID), h.Applied.Local().Format(time.DateTime),
			h.Counts[design.KindNode], printable(git), printable(strings.Join(h.Roots, " ")))
	}
	return tw.Flush()
}

func (a *app) remoteDiff(cmd *cobra.Command, c *client.Client, rev1, rev2 string) error {
	ctx := cmd.Context()
	r1, err := c.Design(ctx, rev1)
	if err != nil {
		return apiErr(err)
	}
	r2, err := c.Design(ctx, rev2)
	if err != nil {
		return apiErr(err)
	}
	d, err := c.Diff(ctx, r2.ID, r1.ID)
	if err != nil {
		return apiErr(err)
	}
	fmt.Fprintf(a.stdout, "%s -> %s\n", short(r1.ID), short(r2.ID))
	writeDiff(a.stdout, d)
	return nil
}

// ---- tasks ----

func (a *app) remoteTask(cmd *cobra.Command, c *client.Client, action orchestrator.Action, ff *filterFlags, revision string, ef *engineFlags) error {
	output, err := remoteOutput(ef.output)
	if err != nil {
		return err
	}
	filter, err := ff.filter()
	if err != nil {
		return err
	}
	t, err := c.CreateTask(cmd.Context(), client.TaskRequest{Action: action, NodeFilter: filter, DesignRevision: revision, Options: ef.options})
	if err != nil {
		return apiErr(err)
	}
	if ef.noWait {
		fmt.Fprintf(a.stdout, "task %s stored (%s of %d nodes)\n", t.ID, t.Action, len(t.Nodes))
		return nil
	}
	return a.remoteFollow(cmd.Context(), c, t.ID, output)
}

// followPoll is how often a remote follow asks for the task.
const followPoll = 500 * time.Millisecond

// remoteFollow shows a task's progress until it ends, then its results,
// like follow does for an in-process engine; the exit status is 0 only
// when it succeeded. Passing network trouble is waited out (a minute).
func (a *app) remoteFollow(ctx context.Context, c *client.Client, id, output string) error {
	var r *progress.Renderer
	if output == "table" {
		f, ok := a.stdout.(*os.File)
		r = progress.New(a.stdout, ok && progress.IsTerminal(f))
	}
	start := time.Now()
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	var troubleSince time.Time
	for {
		td, err := c.Task(ctx, id)
		switch {
		case ctx.Err() != nil:
			return &exitError{code: exitInvalid, err: fmt.Errorf("stopped following task %s; it goes on on the server (see 'orchestrator tasks %s')", id, id)}
		case err != nil:
			var pe *client.ProblemError
			if errors.As(err, &pe) && pe.Status < 500 {
				return apiErr(err)
			}
			if troubleSince.IsZero() {
				troubleSince = time.Now()
				fmt.Fprintf(a.stderr, "warning: %v; asking again\n", err)
			} else if time.Since(troubleSince) > time.Minute {
				return apiErr(fmt.Errorf("following task %s: %w", id, err))
			}
		default:
			troubleSince = time.Time{}
			finished := td.Status.Finished()
			if r != nil && !td.Action.SiteAction() {
				if finished {
					r.Finish(snapshot(td.Results, time.Since(start)))
				} else {
					r.Update(snapshot(td.Results, time.Since(start)))
				}
			}
			if finished {
				if err := a.printTaskDetail(td, output); err != nil {
					return err
				}
				if td.Status != orchestrator.TaskSucceeded {
					return &exitError{code: exitInvalid}
				}
				return nil
			}
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

func (a *app) printTaskDetail(td api.TaskDetail, output string) error {
	switch output {
	case "json", "yaml":
		if td.Results == nil {
			td.Results = []orchestrator.NodeResult{}
		}
		return a.writeOut(output, td)
	}
	for i := range td.Results {
		td.Results[i].Reason = printable(td.Results[i].Reason)
	}
	td.Message = printable(td.Message)
	return a.printTask(td.Task, td.Results, "text")
}

func (a *app) remoteTasks(cmd *cobra.Command, c *client.Client, argv []string, output string) error {
	output, err := remoteOutput(output)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if len(argv) == 1 {
		td, err := c.Task(ctx, argv[0])
		if err != nil {
			return apiErr(err)
		}
		return a.printTaskDetail(td, output)
	}
	var ts []orchestrator.Task
	for offset := 0; ; {
		p, err := c.Tasks(ctx, client.TaskQuery{Offset: offset, Limit: 1000})
		if err != nil {
			return apiErr(err)
		}
		ts = append(ts, p.Items...)
		offset += len(p.Items)
		if len(p.Items) == 0 || offset >= p.Total {
			break
		}
	}
	slices.Reverse(ts) // oldest first, like the local list
	if output != "table" {
		if ts == nil {
			ts = []orchestrator.Task{}
		}
		return a.writeOut(output, ts)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tACTION\tSTATUS\tNODES\tREQUESTER\tCREATED\tMESSAGE")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", t.ID, t.Action, t.Status, len(t.Nodes), printable(t.Requester),
			t.Created.Local().Format("2006-01-02 15:04:05"), printable(t.Message))
	}
	return tw.Flush()
}

func (a *app) remoteVerb(cmd *cobra.Command, c *client.Client, id string, v orchestrator.Verb, ef *engineFlags) error {
	output, err := remoteOutput(ef.output)
	if err != nil {
		return err
	}
	t, err := c.TaskVerb(cmd.Context(), id, v)
	if err != nil {
		return apiErr(err)
	}
	if ef.noWait {
		fmt.Fprintf(a.stdout, "task %s: %s stored\n", t.ID, v)
		return nil
	}
	return a.remoteFollow(cmd.Context(), c, t.ID, output)
}

func (a *app) remoteWait(cmd *cobra.Command, c *client.Client, id string, ef *engineFlags) error {
	output, err := remoteOutput(ef.output)
	if err != nil {
		return err
	}
	return a.remoteFollow(cmd.Context(), c, id, output)
}

// ---- nodes ----

// nodeQueryFlags filter the API's node list.
type nodeQueryFlags struct {
	stages, outcomes, racks, tags, labels, lifecycles []string
}

func (q *nodeQueryFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&q.stages, "stage", nil, "with --server: only nodes in this stage (repeatable)")
	f.StringSliceVar(&q.outcomes, "outcome", nil, "with --server: only nodes with this outcome (repeatable)")
	f.StringSliceVar(&q.lifecycles, "lifecycle", nil, "with --server: only nodes in this lifecycle state: new, preparing, ready, deploying, deployed, releasing, released, failed, cancelled (repeatable)")
	f.StringSliceVar(&q.racks, "rack", nil, "with --server: only nodes in this rack (repeatable)")
	f.StringSliceVar(&q.tags, "tag", nil, "with --server: only nodes with this tag (repeatable; any of them)")
	f.StringSliceVar(&q.labels, "label", nil, "with --server: only nodes with this label key=value (repeatable; all of them)")
}

// localErr refuses the filters without a server.
func (q *nodeQueryFlags) localErr() error {
	if len(q.stages)+len(q.outcomes)+len(q.racks)+len(q.tags)+len(q.labels)+len(q.lifecycles) == 0 {
		return nil
	}
	return usageErr(errors.New("--lifecycle, --stage, --outcome, --rack, --tag and --label filter the API's node list: give --server (or set " + envServer + ")"))
}

func (a *app) remoteNodes(cmd *cobra.Command, c *client.Client, argv []string, output string, nq *nodeQueryFlags) error {
	output, err := remoteOutput(output)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if len(argv) == 1 {
		if nq.localErr() != nil {
			return usageErr(errors.New("the node filters list nodes: give no NAME with them"))
		}
		n, err := c.Node(ctx, argv[0])
		if err != nil {
			return apiErr(err)
		}
		return a.writeOut(output, n) // a node in full is a document, as locally
	}
	for _, l := range nq.labels {
		if k, _, ok := strings.Cut(l, "="); !ok || k == "" {
			return usageErr(fmt.Errorf("--label %q: want key=value", l))
		}
	}
	q := client.NodeQuery{Stage: nq.stages, Outcome: nq.outcomes, Lifecycle: nq.lifecycles, Rack: nq.racks, Tag: nq.tags, Label: nq.labels, Limit: 1000}
	var ns []api.NodeSummary
	for {
		p, err := c.Nodes(ctx, q)
		if err != nil {
			return apiErr(err)
		}
		ns = append(ns, p.Items...)
		q.Offset += len(p.Items)
		if len(p.Items) == 0 || q.Offset >= p.Total {
			break
		}
	}
	if output != "table" {
		if ns == nil {
			ns = []api.NodeSummary{}
		}
		return a.writeOut(output, ns)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tRACK\tLIFECYCLE\tLAST ACTION\tSTAGE\tOUTCOME\tMACHINE\tOBSERVED\tTASK\tREASON")
	for _, n := range ns {
		outcome := string(n.Outcome)
		if n.Frozen {
			outcome += " (frozen)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, orDefault(n.Rack, "-"), orDefault(string(n.Lifecycle), "-"),
			orDefault(string(n.Action), "-"), n.Stage, outcome, n.MachineID, printable(n.Observed), n.Task, printable(n.Reason))
	}
	return tw.Flush()
}

func (a *app) remoteNodeVerb(cmd *cobra.Command, c *client.Client, verb, node, reason, output string) error {
	output, err := remoteOutput(output)
	if err != nil {
		return err
	}
	rec, err := c.NodeVerb(cmd.Context(), node, verb, reason)
	if err != nil {
		return apiErr(err)
	}
	return a.writeOut(output, rec) // the node record, as locally
}

// ---- events ----

func (a *app) remoteEvents(cmd *cobra.Command, c *client.Client, since uint64, task, node, output string, follow bool) error {
	output, err := remoteOutput(output)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if follow {
		enc := json.NewEncoder(a.stdout)
		err := c.StreamEvents(ctx, since, task, node, func(ev orchestrator.Event) error {
			switch output {
			case "json":
				return enc.Encode(ev) // one event per line
			case "yaml":
				fmt.Fprintln(a.stdout, "---")
				return a.writeOut("yaml", ev)
			}
			a.printEvent(ev)
			return nil
		})
		if ctx.Err() != nil {
			return nil // interrupted: the normal end of a follow
		}
		return apiErr(err)
	}
	var evs []orchestrator.Event
	const page = 1000
	for {
		p, err := c.Events(ctx, since, task, node, page)
		if err != nil {
			return apiErr(err)
		}
		evs = append(evs, p...)
		if len(p) < page {
			break
		}
		since = p[len(p)-1].Seq
	}
	if output != "table" {
		if evs == nil {
			evs = []orchestrator.Event{}
		}
		return a.writeOut(output, evs)
	}
	for _, ev := range evs {
		a.printEvent(ev)
	}
	return nil
}

// printEvent prints one event as the local events command does.
func (a *app) printEvent(ev orchestrator.Event) {
	fmt.Fprintf(a.stdout, "%6d %s %-5s %-10s %-12s %-12s %s\n", ev.Seq, ev.Time.Local().Format("15:04:05.000"), ev.Level, printable(ev.Kind),
		ev.Node, ev.Stage, printable(ev.Message))
}

// ---- power ----

var remotePowerActions = map[string]orchestrator.Action{
	"on": orchestrator.ActionPowerOn, "off": orchestrator.ActionPowerOff, "cycle": orchestrator.ActionPowerCycle,
}

// remotePower runs power on, off or cycle as a task of the server's
// engine, and follows it. status and pxe talk to the BMC from here.
func (a *app) remotePower(cmd *cobra.Command, c *client.Client, action, node string) error {
	act, ok := remotePowerActions[action]
	if !ok {
		return usageErr(fmt.Errorf("power %s talks to the node's BMC from this host, which the API does not do: run it without --server "+
			"(unset %s) with --design on a host that reaches the BMC; through the API, power on, off and cycle run as tasks", action, envServer))
	}
	if node == "" {
		return usageErr(errors.New("--node NAME is required"))
	}
	for _, f := range []string{"design", "bmc", "driver-setting", "persistent", "efi"} {
		if cmd.Flags().Changed(f) {
			return usageErr(fmt.Errorf("--%s is for the BMC from this host; with --server the server's engine and design do the power %s", f, action))
		}
	}
	t, err := c.CreateTask(cmd.Context(), client.TaskRequest{Action: act,
		NodeFilter: orchestrator.Filter{Sets: []design.NodeFilter{{Names: []string{node}}}}})
	if err != nil {
		return apiErr(err)
	}
	return a.remoteFollow(cmd.Context(), c, t.ID, "table")
}

// ---- audit ----

func (a *app) auditCmd() *cobra.Command {
	var output string
	var since uint64
	var limit int
	cmd := &cobra.Command{
		Use:   "audit [--since SEQ] [--limit N] [-o table|json|yaml]",
		Short: "Show the API's audit log (needs --server and an admin token)",
		Long: `Audit prints the control API's audit log: one record per mutating call,
allowed or refused, with who made it (the token's ID and name, never the
token), what (method and path), when, from where, and the outcome. It
reads the log through the API: give --server and an admin --token.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.remote()
			if err != nil {
				return usageErr(err)
			}
			if c == nil {
				return usageErr(errors.New("audit reads the API's audit log: give --server URL and an admin --token (or set " + envServer + " and " + envToken + ")"))
			}
			output, err := remoteOutput(output)
			if err != nil {
				return err
			}
			if limit < 0 {
				return usageErr(fmt.Errorf("--limit %d: want 0 (all) or more", limit))
			}
			var recs []api.AuditRecord
			for {
				n := api.MaxAuditPageRecords
				if limit > 0 {
					n = min(n, limit-len(recs))
				}
				p, err := c.Audit(cmd.Context(), since, n)
				if err != nil {
					return apiErr(err)
				}
				recs = append(recs, p.Items...)
				if !p.More || (limit > 0 && len(recs) >= limit) {
					break
				}
				since = p.Next
			}
			if output != "table" {
				if recs == nil {
					recs = []api.AuditRecord{}
				}
				return a.writeOut(output, recs)
			}
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
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	cmd.Flags().Uint64Var(&since, "since", 0, "only records after this sequence number")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many records (0: all)")
	return cmd
}
