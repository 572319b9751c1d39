package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/internal/progress"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// engineFlags are the flags of every command that drives the engine: the
// in-process engine's (stateFlags), -o and, for the ones that make a
// task, --no-wait.
type engineFlags struct {
	stateFlags
	output string
	noWait bool
	// options are the task's options (decommission, destroy), nil when
	// none; set by the command before it submits.
	options *apitypes.TaskOptions
}

func (f *engineFlags) add(cmd *cobra.Command, wait bool) {
	f.stateFlags.add(cmd)
	outputFlag(cmd, &f.output)
	if wait {
		cmd.Flags().BoolVar(&f.noWait, "no-wait", false, "store the task and return; the server (`orchestrator serve`) runs it")
	}
}

// filterFlags build a node filter from the command line: one set whose
// criteria all hold (several --node values are alternatives, and so on).
type filterFlags struct {
	nodes, racks, tags, labels, sites []string
}

func (f *filterFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&f.nodes, "node", nil, "node name (repeatable)")
	cmd.Flags().StringSliceVar(&f.racks, "rack", nil, "rack (repeatable)")
	cmd.Flags().StringSliceVar(&f.tags, "tag", nil, "tag (repeatable; any of them)")
	cmd.Flags().StringSliceVar(&f.labels, "label", nil, "label key=value (repeatable; all of them)")
	cmd.Flags().StringSliceVar(&f.sites, "site", nil, "the nodes of this Site (repeatable)")
}

func (f *filterFlags) filter() (apitypes.Filter, error) {
	set := apitypes.NodeFilter{Names: f.nodes, Racks: f.racks, Tags: f.tags, Sites: f.sites}
	for _, l := range f.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return apitypes.Filter{}, usageErr(fmt.Errorf("--label %q: want key=value", l))
		}
		if set.Labels == nil {
			set.Labels = map[string]string{}
		}
		set.Labels[k] = v
	}
	if len(set.Names)+len(set.Racks)+len(set.Tags)+len(set.Labels)+len(set.Sites) == 0 {
		return apitypes.Filter{}, nil
	}
	return apitypes.Filter{Sets: []apitypes.NodeFilter{set}}, nil
}

// taskCmd: `task ACTION`, and the shortcuts deploy/destroy/... (action fixed).
func (a *app) taskCmd(use string, fixed record.Action, short string) *cobra.Command {
	args := cobra.ExactArgs(1)
	pick := func(argv []string) (record.Action, error) { return record.ParseAction(argv[0]) }
	if fixed != "" {
		args = cobra.NoArgs
		pick = func([]string) (record.Action, error) { return fixed, nil }
	}
	return a.taskCmdWith(use, short, args, pick, nil)
}

// taskCmdWith builds a task command: pick chooses the action from the
// arguments; opts, when not nil, adds the task option flags.
func (a *app) taskCmdWith(use, short string, args cobra.PositionalArgs, pick func([]string) (record.Action, error), opts *optionFlags) *cobra.Command {
	var ef engineFlags
	var ff filterFlags
	var revision string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		RunE: func(cmd *cobra.Command, argv []string) error {
			action, err := pick(argv)
			if err != nil {
				return usageErr(err)
			}
			if ef.options, err = opts.options(action); err != nil {
				return usageErr(err)
			}
			filter, err := ff.filter()
			if err != nil {
				return err
			}
			req := client.TaskRequest{Action: action, NodeFilter: filter, DesignRevision: revision, Options: ef.options}
			return a.runTask(cmd.Context(), &ef, func(ctx context.Context, c *client.Client) (apitypes.Task, string, error) {
				t, err := c.CreateTask(ctx, req)
				return t, fmt.Sprintf("task %s stored (%s of %d nodes)", t.ID, t.Action, len(t.Nodes)), err
			})
		},
	}
	ef.add(cmd, true)
	ff.add(cmd)
	opts.add(cmd)
	cmd.Flags().StringVar(&revision, "revision", "", "design revision (default: the current one)")
	return cmd
}

// submitFunc makes a task through the API and says what it stored.
type submitFunc func(ctx context.Context, c *client.Client) (t apitypes.Task, stored string, err error)

// runTask makes a task with submit, then (without --no-wait) follows it
// to its end.
func (a *app) runTask(ctx context.Context, ef *engineFlags, submit submitFunc) error {
	output, err := checkOutput(ef.output)
	if err != nil {
		return err
	}
	s, err := a.connect(ctx, &ef.stateFlags, runEngine)
	if err != nil {
		return err
	}
	defer s.close()
	t, stored, err := submit(ctx, s.c)
	if err != nil {
		return apiErr(err)
	}
	if ef.noWait {
		fmt.Fprintln(a.stdout, stored)
		return nil
	}
	return a.follow(ctx, s, t.ID, output)
}

// optionFlags are the task option flags of decommission (--erase,
// --delete) and destroy (--erase).
type optionFlags struct {
	erase     string
	delete    bool
	canDelete bool
	// baseline: apply_baseline's flags (reboot, dry run) instead of erase.
	baseline       bool
	reboot, dryRun bool
}

func (o *optionFlags) add(cmd *cobra.Command) {
	if o == nil {
		return
	}
	if o.baseline {
		cmd.Flags().BoolVar(&o.reboot, "reboot", false, "reboot deployed nodes whose plan needs a reset although the Site's lifecycle.baseline.reboots is deny (drain them first)")
		cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "record and show each node's plan (its firmware, BIOS and RAID differences) and change nothing")
		return
	}
	cmd.Flags().StringVar(&o.erase, "erase", "", "erase the disks on release: none, quick or secure (default: the design's lifecycle.erase policy of each node)")
	if o.canDelete {
		cmd.Flags().BoolVar(&o.delete, "delete", false, "delete the machines from the provisioner once released (default: keep them, Ready)")
	}
}

// options are the task options the flags give action (nil: none).
func (o *optionFlags) options(action record.Action) (*apitypes.TaskOptions, error) {
	if o == nil || (o.erase == "" && !o.delete && !o.reboot && !o.dryRun) {
		return nil, nil
	}
	opt := &apitypes.TaskOptions{Erase: o.erase, Delete: o.delete, Reboot: o.reboot, DryRun: o.dryRun}
	if err := (*record.TaskOptions)(opt).Check(action); err != nil { // the engine's check, before sending
		return nil, err
	}
	return opt, nil
}

// rescueCmd: `rescue enter|exit`, the rescue_enter and rescue_exit tasks.
func (a *app) rescueCmd() *cobra.Command {
	pick := func(argv []string) (record.Action, error) {
		switch argv[0] {
		case "enter":
			return record.ActionRescueEnter, nil
		case "exit":
			return record.ActionRescueExit, nil
		}
		return "", fmt.Errorf("rescue %.20q: use enter or exit", argv[0])
	}
	return a.taskCmdWith("rescue enter|exit", "Boot the selected deployed nodes into the provisioner's rescue system, or back to their OS (rescue_enter, rescue_exit)",
		cobra.ExactArgs(1), pick, nil)
}

// followPoll is how often follow asks for the task when no event came.
const followPoll = 2 * time.Second

// follow shows a task's progress until it ends, then its results; the
// exit status is 0 only when it succeeded. The task's event stream says
// when to look again (and followPoll when it is quiet); passing network
// trouble is waited out (a minute).
func (a *app) follow(ctx context.Context, s *session, id, output string) error {
	var r *progress.Renderer
	if output == "text" {
		f, ok := a.stdout.(*os.File)
		r = progress.New(a.stdout, ok && progress.IsTerminal(f))
	}
	start := time.Now()
	wctx, stopWatch := context.WithCancel(ctx) // the stream ends with the follow
	defer stopWatch()
	changed := watchTask(wctx, s.c, id)
	var trouble time.Time
	for {
		td, err := s.c.Task(ctx, id)
		switch {
		case ctx.Err() != nil:
			return stoppedFollowing(s, id)
		case err != nil:
			if err := a.taskTrouble(err, &trouble, id); err != nil {
				return err
			}
		default:
			trouble = time.Time{}
			if finished := showProgress(r, td, start); finished {
				return a.taskEnd(td, output)
			}
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-time.After(followPoll):
		}
	}
}

// watchTask streams the task's events until ctx ends and signals each
// (at most one waiting signal).
func watchTask(ctx context.Context, c *client.Client, id string) <-chan struct{} {
	changed := make(chan struct{}, 1)
	go func() {
		_ = c.StreamEvents(ctx, 0, id, "", func(apitypes.Event) error {
			select {
			case changed <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	return changed
}

func stoppedFollowing(s *session, id string) error {
	where := "on the server"
	if s.inProcess {
		where = "at the next start of the engine (`orchestrator wait " + id + "` or serve)"
	}
	return &exitError{code: exitInvalid, err: fmt.Errorf("stopped following task %s; it goes on %s (see 'orchestrator tasks %s')", id, where, id)}
}

// taskTrouble waits out a failed look at the task for a minute; a refusal
// (4xx) ends the follow at once.
func (a *app) taskTrouble(err error, since *time.Time, id string) error {
	var pe *client.ProblemError
	if errors.As(err, &pe) && pe.Status < 500 {
		return apiErr(err)
	}
	if since.IsZero() {
		*since = time.Now()
		fmt.Fprintf(a.stderr, "warning: %v; asking again\n", err)
	} else if time.Since(*since) > time.Minute {
		return apiErr(fmt.Errorf("following task %s: %w", id, err))
	}
	return nil
}

// showProgress draws the task's progress (r nil: not drawn) and says
// whether it has finished.
func showProgress(r *progress.Renderer, td apitypes.TaskDetail, start time.Time) bool {
	finished := td.Status.Finished()
	if r != nil && !td.Action.SiteAction() {
		if finished {
			r.Finish(snapshot(td.Results, time.Since(start)))
		} else {
			r.Update(snapshot(td.Results, time.Since(start)))
		}
	}
	return finished
}

// taskEnd prints a finished task; its exit status is 0 only when it
// succeeded.
func (a *app) taskEnd(td apitypes.TaskDetail, output string) error {
	if err := a.printTask(td, output); err != nil {
		return err
	}
	if td.Status != record.TaskSucceeded {
		return &exitError{code: exitInvalid}
	}
	return nil
}

// printTask prints a task with its per-node results.
func (a *app) printTask(td apitypes.TaskDetail, output string) error {
	if td.Results == nil {
		td.Results = []apitypes.NodeResult{}
	}
	return a.emit(output, td, func() error {
		t := td.Task
		fmt.Fprintf(a.stdout, "task %s  %s  %s  by %s  design %.12s\n%s\n", t.ID, t.Action, t.Status, printable(t.Requester), t.Revision, printable(t.Message))
		if len(td.Results) == 0 {
			return nil
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tSTAGE\tOUTCOME\tFAILED CALLS\tREASON")
		for _, r := range td.Results {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", r.Node, r.Stage, r.Outcome, r.Attempts, printable(r.Reason))
		}
		return tw.Flush()
	})
}

func (a *app) tasksCmd() *cobra.Command {
	var sf stateFlags
	var output string
	cmd := &cobra.Command{
		Use:   "tasks [TASK-ID]",
		Short: "List tasks, or show one with its per-node results",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				if len(argv) == 1 {
					td, err := s.c.Task(cmd.Context(), argv[0])
					if err != nil {
						return apiErr(err)
					}
					return a.printTask(td, output)
				}
				ts, err := allTasks(cmd.Context(), s.c)
				return a.show(output, ts, err, func() error { return a.printTasks(ts) })
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	return cmd
}

// allTasks lists every task, oldest first.
func allTasks(ctx context.Context, c *client.Client) ([]apitypes.Task, error) {
	ts, err := allPages(func(offset int) (apitypes.Page[apitypes.Task], error) {
		return c.Tasks(ctx, client.TaskQuery{Offset: offset, Limit: 1000})
	})
	slices.Reverse(ts) // the API lists newest first
	return ts, err
}

func (a *app) printTasks(ts []apitypes.Task) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tACTION\tSTATUS\tNODES\tREQUESTER\tCREATED\tMESSAGE")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", t.ID, t.Action, t.Status, len(t.Nodes), printable(t.Requester),
			t.Created.Local().Format("2006-01-02 15:04:05"), printable(t.Message))
	}
	return tw.Flush()
}

// verbCmd runs a recovery verb on a task, then follows the task.
func (a *app) verbCmd(v record.Verb, short string) *cobra.Command {
	var ef engineFlags
	cmd := &cobra.Command{
		Use:   string(v) + " TASK-ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.runTask(cmd.Context(), &ef, func(ctx context.Context, c *client.Client) (apitypes.Task, string, error) {
				t, err := c.TaskVerb(ctx, argv[0], v)
				return t, fmt.Sprintf("task %s: %s stored", t.ID, v), err
			})
		},
	}
	ef.add(cmd, true)
	return cmd
}

// waitCmd follows a task to its end; without a server the engine runs
// here meanwhile (it resumes every unfinished task).
func (a *app) waitCmd() *cobra.Command {
	var ef engineFlags
	cmd := &cobra.Command{
		Use:   "wait TASK-ID",
		Short: "Follow a task until it ends (in process, the engine runs meanwhile: unfinished tasks resume from their checkpoints)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.runTask(cmd.Context(), &ef, func(ctx context.Context, c *client.Client) (apitypes.Task, string, error) {
				return apitypes.Task{ID: argv[0]}, "", nil
			})
		},
	}
	ef.add(cmd, false)
	return cmd
}

// engineCmds are the commands that drive or read the engine.
func (a *app) engineCmds() []*cobra.Command {
	return []*cobra.Command{
		a.serveCmd(),
		a.taskCmd("task ACTION", "", "Run a task: "+actionList()),
		a.taskCmd("deploy", record.ActionDeployNodes, "Deploy the selected nodes (deploy_nodes)"),
		a.taskCmdWith("destroy [--erase MODE]", "Release the selected nodes' machines, erasing disks (destroy_nodes)", cobra.NoArgs,
			func([]string) (record.Action, error) { return record.ActionDestroyNodes, nil }, &optionFlags{}),
		a.taskCmdWith("decommission [--delete] [--erase MODE]", "Take the selected nodes out of service: release with their erase policy, delete the machines with --delete (decommission_nodes)", cobra.NoArgs,
			func([]string) (record.Action, error) { return record.ActionDecommissionNodes, nil }, &optionFlags{canDelete: true}),
		a.rescueCmd(),
		a.taskCmdWith("apply-baseline [--dry-run] [--reboot]", "Bring the selected nodes' machines to their hardware profile's baseline: firmware, BIOS settings, RAID volumes; the plan first, in each node's record and events (apply_baseline)", cobra.NoArgs,
			func([]string) (record.Action, error) { return record.ActionApplyBaseline, nil }, &optionFlags{baseline: true}),
		a.taskCmd("test", record.ActionTestNodes, "Run the provisioner's hardware tests on the selected nodes' machines (test_nodes)"),
		a.taskCmd("redeploy", record.ActionRedeployNodes, "Release and deploy again (redeploy_nodes)"),
		a.taskCmd("prepare-site", record.ActionPrepareSite, "Create the design's networks, DHCP and keys in the provisioner (prepare_site)"),
		a.tasksCmd(), a.nodesCmd(), a.eventsCmd(), a.sweepCmd(), a.waitCmd(), a.rebootstrapCmd(),
		a.verbCmd(record.VerbRetry, "Run a finished task's failed nodes again from the stage that failed"),
		a.verbCmd(record.VerbResume, "Continue a cancelled or interrupted task's unfinished nodes from their checkpoints"),
		a.verbCmd(record.VerbRerun, "Run every node of a task again from the top, adopting what the provisioner has"),
		a.verbCmd(record.VerbRestartClean, "Release every node's machine, then run the task from the top"),
		a.verbCmd(record.VerbCancel, "Stop a task and release what it allocated and did not finish"),
		a.nodeVerbCmd(client.NodeAdopt, "Take the provisioner's state of a node's machine as the truth, or attach a leaked machine to the node (--machine)"),
		a.nodeVerbCmd(client.NodeMarkManual, "Freeze a node: nothing automatic touches it until release-manual"),
		a.nodeVerbCmd(client.NodeReleaseManual, "Unfreeze a node marked for manual intervention"),
	}
}

func actionList() string {
	s := make([]string, len(record.Actions))
	for i, a := range record.Actions {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}
