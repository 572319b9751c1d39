package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/progress"
	"github.com/slipway-dev/slipway/orchestrator"
)

// engineFlags are the flags of every command that runs the engine in-process.
type engineFlags struct {
	cfgFile, state, pluginDir, output string
	noWait                            bool
	// options are the task's options (decommission, destroy), nil when
	// none; set by the command before it submits.
	options *orchestrator.TaskOptions
}

func (f *engineFlags) add(cmd *cobra.Command, wait bool) {
	cmd.Flags().StringVar(&f.cfgFile, "config", "", "engine configuration file (YAML; see docs/operations.md)")
	stateFlag(cmd, &f.state)
	pluginDirFlag(cmd, &f.pluginDir)
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	if wait {
		cmd.Flags().BoolVar(&f.noWait, "no-wait", false, "store the task and return; `orchestrator serve` runs it")
	}
}

// withEngine opens the engine the flags describe, runs fn, and closes it.
func (a *app) withEngine(ctx context.Context, f *engineFlags, fn func(*engineEnv) error) error {
	c, err := f.config()
	if err != nil {
		return err
	}
	env, err := a.openEngine(ctx, c)
	if err != nil {
		return err
	}
	defer env.close()
	return fn(env)
}

// withReader opens the state read-only for the engine's records.
func (a *app) withReader(state string, fn func(*orchestrator.Engine) error) error {
	e, closeFn, err := a.readEngine(state)
	if err != nil {
		return err
	}
	defer closeFn()
	return fn(e)
}

func (f *engineFlags) config() (engineConfig, error) {
	if f.output != "text" && f.output != "json" {
		return engineConfig{}, usageErr(fmt.Errorf("-o %q: use text or json", f.output))
	}
	c, err := loadEngineConfig(f.cfgFile)
	if err != nil {
		return c, usageErr(err)
	}
	if c.State == "" {
		c.State = f.state
	}
	if c.PluginDir == "" {
		c.PluginDir = f.pluginDir
	}
	return c, nil
}

// filterFlags build a node filter from the command line: one set whose
// criteria all hold (several --node values are alternatives, and so on).
type filterFlags struct {
	nodes, racks, tags, labels []string
}

func (f *filterFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&f.nodes, "node", nil, "node name (repeatable)")
	cmd.Flags().StringSliceVar(&f.racks, "rack", nil, "rack (repeatable)")
	cmd.Flags().StringSliceVar(&f.tags, "tag", nil, "tag (repeatable; any of them)")
	cmd.Flags().StringSliceVar(&f.labels, "label", nil, "label key=value (repeatable; all of them)")
}

func (f *filterFlags) filter() (orchestrator.Filter, error) {
	set := design.NodeFilter{Names: f.nodes, Racks: f.racks, Tags: f.tags}
	for _, l := range f.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return orchestrator.Filter{}, usageErr(fmt.Errorf("--label %q: want key=value", l))
		}
		if set.Labels == nil {
			set.Labels = map[string]string{}
		}
		set.Labels[k] = v
	}
	if len(set.Names)+len(set.Racks)+len(set.Tags)+len(set.Labels) == 0 {
		return orchestrator.Filter{}, nil
	}
	return orchestrator.Filter{Sets: []design.NodeFilter{set}}, nil
}

// taskCmd: `task ACTION`, and the shortcuts deploy/destroy/... (action fixed).
func (a *app) taskCmd(use string, fixed orchestrator.Action, short string) *cobra.Command {
	args := cobra.ExactArgs(1)
	pick := func(argv []string) (orchestrator.Action, error) { return orchestrator.ParseAction(argv[0]) }
	if fixed != "" {
		args = cobra.NoArgs
		pick = func([]string) (orchestrator.Action, error) { return fixed, nil }
	}
	return a.taskCmdWith(use, short, args, pick, nil)
}

// taskCmdWith builds a task command: pick chooses the action from the
// arguments; opts, when not nil, adds the task option flags.
func (a *app) taskCmdWith(use, short string, args cobra.PositionalArgs, pick func([]string) (orchestrator.Action, error), opts *optionFlags) *cobra.Command {
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
			if c, err := a.remote(); err != nil {
				return usageErr(err)
			} else if c != nil {
				return a.remoteTask(cmd, c, action, &ff, revision, &ef)
			}
			c, err := ef.config()
			if err != nil {
				return err
			}
			filter, err := ff.filter()
			if err != nil {
				return err
			}
			env, err := a.openEngine(cmd.Context(), c)
			if err != nil {
				return err
			}
			defer env.close()
			t, err := env.engine.Submit(cmd.Context(), orchestrator.Request{Action: action, Filter: filter, Revision: revision, Requester: requester(), Options: ef.options})
			if err != nil {
				return usageErr(err)
			}
			if ef.noWait {
				fmt.Fprintf(a.stdout, "task %s stored (%s of %d nodes)\n", t.ID, t.Action, len(t.Nodes))
				return nil
			}
			return a.follow(cmd.Context(), env.engine, t.ID, ef.output)
		},
	}
	ef.add(cmd, true)
	ff.add(cmd)
	opts.add(cmd)
	cmd.Flags().StringVar(&revision, "revision", "", "design revision (default: the current one)")
	return cmd
}

// optionFlags are the task option flags of decommission (--erase,
// --delete) and destroy (--erase).
type optionFlags struct {
	erase     string
	delete    bool
	canDelete bool
}

func (o *optionFlags) add(cmd *cobra.Command) {
	if o == nil {
		return
	}
	cmd.Flags().StringVar(&o.erase, "erase", "", "erase the disks on release: none, quick or secure (default: the design's lifecycle.erase policy of each node)")
	if o.canDelete {
		cmd.Flags().BoolVar(&o.delete, "delete", false, "delete the machines from the provisioner once released (default: keep them, Ready)")
	}
}

// options are the task options the flags give action (nil: none).
func (o *optionFlags) options(action orchestrator.Action) (*orchestrator.TaskOptions, error) {
	if o == nil || (o.erase == "" && !o.delete) {
		return nil, nil
	}
	opt := &orchestrator.TaskOptions{Erase: o.erase, Delete: o.delete}
	if err := opt.Check(action); err != nil {
		return nil, err
	}
	return opt, nil
}

// rescueCmd: `rescue enter|exit`, the rescue_enter and rescue_exit tasks.
func (a *app) rescueCmd() *cobra.Command {
	pick := func(argv []string) (orchestrator.Action, error) {
		switch argv[0] {
		case "enter":
			return orchestrator.ActionRescueEnter, nil
		case "exit":
			return orchestrator.ActionRescueExit, nil
		}
		return "", fmt.Errorf("rescue %.20q: use enter or exit", argv[0])
	}
	return a.taskCmdWith("rescue enter|exit", "Boot the selected deployed nodes into the provisioner's rescue system, or back to their OS (rescue_enter, rescue_exit)",
		cobra.ExactArgs(1), pick, nil)
}

// requester names the local operator: cli:<OS user> (see osUser).
func requester() string { return localRequester() }

// follow shows a task's progress until it ends, then its results; the
// exit status is 0 only when it succeeded.
func (a *app) follow(ctx context.Context, e *orchestrator.Engine, id, output string) error {
	var r *progress.Renderer
	if output == "text" {
		f, ok := a.stdout.(*os.File)
		r = progress.New(a.stdout, ok && progress.IsTerminal(f))
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() { _, err := e.Wait(ctx, id); done <- err }()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		var finished bool
		select {
		case err := <-done:
			if err != nil {
				return usageErr(err)
			}
			finished = true
		case <-tick.C:
		}
		t, res, err := e.Task(ctx, id)
		if err != nil {
			return usageErr(err)
		}
		if r != nil && !t.Action.SiteAction() {
			if finished {
				r.Finish(snapshot(res, time.Since(start)))
			} else {
				r.Update(snapshot(res, time.Since(start)))
			}
		}
		if !finished {
			continue
		}
		if err := a.printTask(t, res, output); err != nil {
			return err
		}
		if t.Status != orchestrator.TaskSucceeded {
			return &exitError{code: exitInvalid}
		}
		return nil
	}
}

func (a *app) printTask(t orchestrator.Task, res []orchestrator.NodeResult, output string) error {
	if output == "json" {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			orchestrator.Task
			Results []orchestrator.NodeResult `json:"results"`
		}{t, res})
	}
	fmt.Fprintf(a.stdout, "task %s  %s  %s  by %s  design %.12s\n%s\n", t.ID, t.Action, t.Status, t.Requester, t.Revision, t.Message)
	if len(res) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTAGE\tOUTCOME\tFAILED CALLS\tREASON")
	for _, r := range res {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", r.Node, r.Stage, r.Outcome, r.Attempts, r.Reason)
	}
	return tw.Flush()
}

// readEngine is an engine that is not started: it reads the state.
func (a *app) readEngine(state string) (*orchestrator.Engine, func(), error) {
	st, err := openStore(state)
	if err != nil {
		return nil, nil, usageErr(err)
	}
	e, err := orchestrator.New(orchestrator.Config{Store: st, Log: a.log})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return e, func() { st.Close() }, nil
}

func (a *app) tasksCmd() *cobra.Command {
	var state, output string
	cmd := &cobra.Command{
		Use:   "tasks [TASK-ID]",
		Short: "List tasks, or show one with its per-node results",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if c, err := a.remote(); err != nil {
				return usageErr(err)
			} else if c != nil {
				return a.remoteTasks(cmd, c, argv, output)
			}
			return a.withReader(state, func(e *orchestrator.Engine) error {
				if len(argv) == 1 {
					t, res, err := e.Task(cmd.Context(), argv[0])
					if err != nil {
						return usageErr(err)
					}
					return a.printTask(t, res, output)
				}
				ts, err := e.Tasks(cmd.Context())
				if err != nil {
					return usageErr(err)
				}
				if output == "json" {
					return json.NewEncoder(a.stdout).Encode(ts)
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TASK\tACTION\tSTATUS\tNODES\tREQUESTER\tCREATED\tMESSAGE")
				for _, t := range ts {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", t.ID, t.Action, t.Status, len(t.Nodes), t.Requester, t.Created.Format("2006-01-02 15:04:05"), t.Message)
				}
				return tw.Flush()
			})
		},
	}
	stateFlag(cmd, &state)
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

func (a *app) nodesCmd() *cobra.Command {
	var state, output string
	var nq nodeQueryFlags
	cmd := &cobra.Command{
		Use:   "nodes [NAME]",
		Short: "List the engine's node records, or show one with its history",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if c, err := a.remote(); err != nil {
				return usageErr(err)
			} else if c != nil {
				return a.remoteNodes(cmd, c, argv, output, &nq)
			} else if err := nq.localErr(); err != nil {
				return err
			}
			return a.withReader(state, func(e *orchestrator.Engine) error {
				if len(argv) == 1 {
					n, err := e.Node(cmd.Context(), argv[0])
					if err != nil {
						return usageErr(err)
					}
					enc := json.NewEncoder(a.stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(n)
				}
				ns, err := e.Nodes(cmd.Context())
				if err != nil {
					return usageErr(err)
				}
				orphans, err := e.Orphans(cmd.Context())
				if err != nil {
					return usageErr(err)
				}
				if output == "json" {
					return json.NewEncoder(a.stdout).Encode(ns)
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NODE\tLIFECYCLE\tLAST ACTION\tSTAGE\tOUTCOME\tMACHINE\tOBSERVED\tTASK\tREASON")
				for _, n := range ns {
					outcome := string(n.Outcome)
					if n.Frozen {
						outcome += " (frozen)"
					}
					reason := n.Reason
					if orphans[n.Name] {
						reason = "orphan: not in the current design, machine " + n.MachineID + " still held; `orchestrator destroy --node " + n.Name + "` releases it"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Name, orDefault(string(n.LifecycleState()), "-"), orDefault(string(n.Action), "-"),
						n.Stage, outcome, n.MachineID, n.Observed, n.Task, reason)
				}
				return tw.Flush()
			})
		},
	}
	stateFlag(cmd, &state)
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	nq.add(cmd)
	return cmd
}

func (a *app) eventsCmd() *cobra.Command {
	var state, output, task, node string
	var after uint64
	var follow bool
	cmd := &cobra.Command{
		Use:   "events [--task ID] [--node NAME] [--since SEQ]",
		Short: "Show the engine's event log",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c, err := a.remote(); err != nil {
				return usageErr(err)
			} else if c != nil {
				return a.remoteEvents(cmd, c, after, task, node, output, follow)
			} else if follow {
				return usageErr(errors.New("--follow streams the events of a running server: give --server (or set " + envServer + ")"))
			}
			return a.withReader(state, func(e *orchestrator.Engine) error {
				evs, err := e.Events(cmd.Context(), after, 0, task, node)
				if err != nil {
					return usageErr(err)
				}
				if output == "json" {
					return json.NewEncoder(a.stdout).Encode(evs)
				}
				for _, ev := range evs {
					fmt.Fprintf(a.stdout, "%6d %s %-5s %-10s %-12s %-12s %s\n", ev.Seq, ev.Time.Format("15:04:05.000"), ev.Level, ev.Kind, ev.Node, ev.Stage, ev.Message)
				}
				return nil
			})
		},
	}
	stateFlag(cmd, &state)
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringVar(&task, "task", "", "only this task's events")
	cmd.Flags().StringVar(&node, "node", "", "only this node's events")
	cmd.Flags().Uint64Var(&after, "since", 0, "only events after this sequence number")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "with --server: keep streaming new events until interrupted")
	return cmd
}

// verbCmd runs a recovery verb on a task, then follows the task.
func (a *app) verbCmd(v orchestrator.Verb, short string) *cobra.Command {
	var ef engineFlags
	cmd := &cobra.Command{
		Use:   string(v) + " TASK-ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if c, err := a.remote(); err != nil {
				return usageErr(err)
			} else if c != nil {
				return a.remoteVerb(cmd, c, argv[0], v, &ef)
			}
			return a.withEngine(cmd.Context(), &ef, func(env *engineEnv) error {
				t, err := env.engine.TaskVerb(cmd.Context(), argv[0], v, requester())
				if err != nil {
					return usageErr(err)
				}
				if ef.noWait {
					fmt.Fprintf(a.stdout, "task %s: %s stored\n", t.ID, v)
					return nil
				}
				return a.follow(cmd.Context(), env.engine, t.ID, ef.output)
			})
		},
	}
	ef.add(cmd, true)
	return cmd
}

// nodeVerbCmd runs adopt, mark-manual-intervention or release-manual.
func (a *app) nodeVerbCmd(use, short string, fn func(ctx context.Context, e *orchestrator.Engine, node, reason string) (orchestrator.NodeRecord, error)) *cobra.Command {
	var ef engineFlags
	var reason string
	cmd := &cobra.Command{
		Use:   use + " NODE",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if c, err := a.remote(); err != nil {
				return usageErr(err)
			} else if c != nil {
				if use == "adopt" && reason != "" {
					rec, err := c.AdoptMachine(cmd.Context(), argv[0], reason)
					if err != nil {
						return apiErr(err)
					}
					out, err := remoteOutput(ef.output)
					if err != nil {
						return err
					}
					return a.writeOut(out, rec)
				}
				return a.remoteNodeVerb(cmd, c, use, argv[0], reason, ef.output)
			}
			return a.withEngine(cmd.Context(), &ef, func(env *engineEnv) error {
				n, err := fn(cmd.Context(), env.engine, argv[0], reason)
				if err != nil {
					return usageErr(err)
				}
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(n)
			})
		},
	}
	ef.add(cmd, false)
	switch use {
	case "mark-manual-intervention":
		cmd.Flags().StringVar(&reason, "reason", "", "why the node is frozen (shown with it)")
	case "adopt": // the verb's one option travels as reason does
		cmd.Use = use + " NODE [--machine SYSTEM_ID]"
		cmd.Flags().StringVar(&reason, "machine", "", "attach this provisioner machine to the node (a leaked machine the sweep reports: it must carry this orchestrator's marker for the node, or none, and no other node may claim it)")
	}
	return cmd
}

func (a *app) sweepCmd() *cobra.Command {
	var ef engineFlags
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Find leaked machines and drifted nodes now",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withEngine(cmd.Context(), &ef, func(env *engineEnv) error {
				rep, err := env.engine.Sweep(cmd.Context())
				if err != nil {
					return usageErr(err)
				}
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			})
		},
	}
	ef.add(cmd, false)
	return cmd
}

// engineCmds are the commands that drive or read the engine.
func (a *app) engineCmds() []*cobra.Command {
	who := requester()
	return []*cobra.Command{
		a.serveCmd(),
		a.taskCmd("task ACTION", "", "Run a task: "+actionList()),
		a.taskCmd("deploy", orchestrator.ActionDeployNodes, "Deploy the selected nodes (deploy_nodes)"),
		a.taskCmdWith("destroy [--erase MODE]", "Release the selected nodes' machines, erasing disks (destroy_nodes)", cobra.NoArgs,
			func([]string) (orchestrator.Action, error) { return orchestrator.ActionDestroyNodes, nil }, &optionFlags{}),
		a.taskCmdWith("decommission [--delete] [--erase MODE]", "Take the selected nodes out of service: release with their erase policy, delete the machines with --delete (decommission_nodes)", cobra.NoArgs,
			func([]string) (orchestrator.Action, error) { return orchestrator.ActionDecommissionNodes, nil }, &optionFlags{canDelete: true}),
		a.rescueCmd(),
		a.taskCmd("test", orchestrator.ActionTestNodes, "Run the provisioner's hardware tests on the selected nodes' machines (test_nodes)"),
		a.taskCmd("redeploy", orchestrator.ActionRedeployNodes, "Release and deploy again (redeploy_nodes)"),
		a.taskCmd("prepare-site", orchestrator.ActionPrepareSite, "Create the design's networks, DHCP and keys in the provisioner (prepare_site)"),
		a.tasksCmd(), a.nodesCmd(), a.eventsCmd(), a.sweepCmd(), a.waitCmd(), a.rebootstrapCmd(),
		a.verbCmd(orchestrator.VerbRetry, "Run a finished task's failed nodes again from the stage that failed"),
		a.verbCmd(orchestrator.VerbResume, "Continue a cancelled or interrupted task's unfinished nodes from their checkpoints"),
		a.verbCmd(orchestrator.VerbRerun, "Run every node of a task again from the top, adopting what the provisioner has"),
		a.verbCmd(orchestrator.VerbRestartClean, "Release every node's machine, then run the task from the top"),
		a.verbCmd(orchestrator.VerbCancel, "Stop a task and release what it allocated and did not finish"),
		a.nodeVerbCmd("adopt", "Take the provisioner's state of a node's machine as the truth, or attach a leaked machine to the node (--machine)", func(ctx context.Context, e *orchestrator.Engine, n, machine string) (orchestrator.NodeRecord, error) {
			return e.AdoptMachine(ctx, n, machine, "", who)
		}),
		a.nodeVerbCmd("mark-manual-intervention", "Freeze a node: nothing automatic touches it until release-manual", func(ctx context.Context, e *orchestrator.Engine, n, why string) (orchestrator.NodeRecord, error) {
			return e.MarkManual(ctx, n, why, who)
		}),
		a.nodeVerbCmd("release-manual", "Unfreeze a node marked for manual intervention", func(ctx context.Context, e *orchestrator.Engine, n, _ string) (orchestrator.NodeRecord, error) {
			return e.ReleaseManual(ctx, n, who)
		}),
	}
}

func actionList() string {
	s := make([]string, len(orchestrator.Actions))
	for i, a := range orchestrator.Actions {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

// waitCmd runs the engine (which resumes every unfinished task) until the
// given task ends.
func (a *app) waitCmd() *cobra.Command {
	var ef engineFlags
	cmd := &cobra.Command{
		Use:   "wait TASK-ID",
		Short: "Run the engine until a task ends (unfinished tasks resume from their checkpoints)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if c, err := a.remote(); err != nil {
				return usageErr(err)
			} else if c != nil {
				return a.remoteWait(cmd, c, argv[0], &ef)
			}
			return a.withEngine(cmd.Context(), &ef, func(env *engineEnv) error {
				return a.follow(cmd.Context(), env.engine, argv[0], ef.output)
			})
		},
	}
	ef.add(cmd, false)
	return cmd
}
