package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/design"
)

// defaultStatePath is where the state database lives unless --state or
// SLIPWAY_STATE say otherwise.
const defaultStatePath = "slipway.db"

func stateFlag(cmd *cobra.Command, p *string) {
	def := os.Getenv("SLIPWAY_STATE")
	if def == "" {
		def = defaultStatePath
	}
	cmd.Flags().StringVar(p, "state", def, "path of the state database (env SLIPWAY_STATE)")
}

func (a *app) applyCmd() *cobra.Command {
	var sf stateFlags
	var output string
	var approve bool
	var approval string
	cmd := &cobra.Command{
		Use:   "apply [--state PATH] [--approve | --approval APPROVAL] ROOT...",
		Short: "Validate a design, show its plan and store it as a new revision",
		Long: `Apply validates the design, shows its plan (what applying it and then
deploying would do: see 'orchestrator plan') and, when it has no errors,
stores it as a content-addressed revision with its source roots, git
commit and plan. It prints the revision ID and what changed since the
current revision. Applying the same content again stores nothing.

A plan with destructive actions (a machine released or redeployed) is
refused unless approved. --approval takes the approval a plan printed
(orchestrator plan, e.g. in a pull request's review): it approves exactly
those destructive actions of that revision, and the apply is refused if
it would now do others. --approve plans again just before and approves
what that plan says.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, roots []string) error {
			return a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				return a.apply(cmd, s, roots, output, approval, approve)
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	cmd.Flags().BoolVar(&approve, "approve", false, "plan again and approve that plan's destructive actions (and only those)")
	cmd.Flags().StringVar(&approval, "approval", "", "the approval a reviewed plan printed: approve exactly its destructive actions")
	cmd.MarkFlagsMutuallyExclusive("approve", "approval")
	a.designLimitFlags(cmd)
	return cmd
}

// apply applies the design and prints what it stored, then its plan.
// With approval it gives that approval; with approve it plans first and
// approves that plan's destructive actions (an apply that would then do
// others is refused); without, a refusal for destructive actions plans
// to show them.
func (a *app) apply(cmd *cobra.Command, s *session, roots []string, output, approval string, approve bool) error {
	o := client.ApplyOptions{Approve: approval}
	if approve {
		p, err := a.fetchPlan(cmd, s, roots) // plan.go
		if err != nil {
			return nothingApplied(a, err)
		}
		o.Approve = p.Approve
	}
	res, err := s.c.ApplyDesignWith(cmd.Context(), roots, o)
	var pe *client.ProblemError
	switch {
	case errors.As(err, &pe) && pe.Status == http.StatusUnprocessableEntity:
		writeFindingsText(a.stderr, pe.Findings)
		fmt.Fprintln(a.stderr, printable(pe.Detail))
		return nothingApplied(a, errInvalid)
	case errors.As(err, &pe) && pe.Status == http.StatusConflict && pe.Approve != "":
		return a.refused(cmd, s, roots, output, pe, approve || approval != "")
	case s.inProcess && client.IsStatus(err, http.StatusRequestEntityTooLarge):
		return usageErr(fmt.Errorf("%w; here, --max-file-bytes and --max-design-bytes set the limits", err))
	case err != nil:
		return apiErr(err)
	}
	return a.emit(output, res, func() error {
		a.printApplied(res)
		if res.Plan != nil {
			fmt.Fprintln(a.stdout)
			return writePlan(a.stdout, *res.Plan)
		}
		return nil
	})
}

// nothingApplied says so after an invalid design's findings.
func nothingApplied(a *app, err error) error {
	if errors.Is(err, errInvalid) {
		fmt.Fprintln(a.stderr, "nothing applied: fix the errors above and apply again")
	}
	return err
}

// refused shows the plan of an apply refused for its destructive
// actions (-o text) and fails with what to do.
func (a *app) refused(cmd *cobra.Command, s *session, roots []string, output string, pe *client.ProblemError, approve bool) error {
	if output == "text" {
		if p, err := s.c.PlanDesign(cmd.Context(), roots); err == nil {
			_ = writePlan(a.stdout, p)
		}
	}
	fmt.Fprintln(a.stderr, printable(pe.Detail))
	hint := "review the plan and run apply again with --approval " + pe.Approve
	if approve { // the design, the machines or the records changed since the approved plan was made
		hint = "the plan is not the one approved (it changed since it was made): review it and approve it again"
	}
	return &exitError{code: exitInvalid, err: errors.New("nothing applied: " + hint)}
}

// printApplied says what apply stored and what changed.
func (a *app) printApplied(res client.ApplyResult) {
	writeFindingsText(a.stderr, res.Warnings)
	a.log.Info().Str("revision", res.Revision).Str("result", res.Result).Msg("design applied")
	defer a.printLayer(res) // after what was stored, also when nothing was
	switch res.Result {
	case "unchanged":
		fmt.Fprintf(a.stdout, "revision %s is already current: nothing stored\n", short(res.Revision))
		return
	case "restored":
		fmt.Fprintf(a.stdout, "revision %s (stored before) is current again\n", short(res.Revision))
	default:
		fmt.Fprintf(a.stdout, "revision %s stored\n", short(res.Revision))
	}
	if res.Diff != nil {
		writeDiff(a.stdout, *res.Diff)
	}
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// writeDiff prints the node changes in full and other kinds as counts.
func writeDiff(w io.Writer, d design.Diff) {
	fmt.Fprintln(w, d.Summary())
	n := d.Kind(design.KindNode)
	for _, name := range n.Added {
		fmt.Fprintf(w, "  + node %s\n", name)
	}
	for _, name := range n.Removed {
		fmt.Fprintf(w, "  - node %s\n", name)
	}
	for _, c := range n.Changed {
		fmt.Fprintf(w, "  ~ node %s: %s\n", c.Name, strings.Join(c.Paths, ", "))
	}
	for _, k := range d.Kinds {
		if k.Kind == design.KindNode {
			continue
		}
		for _, c := range k.Changed {
			fmt.Fprintf(w, "  ~ %s %s: %s\n", strings.ToLower(k.Kind), c.Name, strings.Join(c.Paths, ", "))
		}
	}
}

func (a *app) designsCmd() *cobra.Command {
	var sf stateFlags
	var output string
	cmd := &cobra.Command{
		Use:   "designs [--state PATH]",
		Short: "List applied design revisions, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				hist, err := s.c.Designs(cmd.Context()) // never nil: [] in JSON
				return a.show(output, hist, err, func() error { return a.printDesigns(hist) })
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	cmd.AddCommand(a.designsShowCmd()) // plan.go
	return cmd
}

func (a *app) printDesigns(hist []apitypes.RevisionSummary) error {
	rows := make([][]string, 0, len(hist))
	for i, h := range hist {
		mark := " "
		if i == len(hist)-1 {
			mark = "*"
		}
		git := "-"
		if h.Provenance == "none" { // a raw upload that said nothing of its origin
			git = "none"
		}
		if h.GitCommit != "" {
			git = short(h.GitCommit)
			if h.GitDirty {
				git += "+dirty"
			}
		}
		rows = append(rows, []string{mark + short(h.ID), h.Applied.Local().Format(time.DateTime), strconv.Itoa(h.Counts[design.KindNode]),
			printable(git), planCell(h.Plan), printable(strings.Join(h.Roots, " "))})
	}
	return a.printTable("no design applied yet: run 'orchestrator apply ROOT...'", "REVISION\tAPPLIED\tNODES\tGIT\tPLAN\tROOTS", rows)
}

func (a *app) diffCmd() *cobra.Command {
	var sf stateFlags
	var output string
	cmd := &cobra.Command{
		Use:   "diff [--state PATH] REV1 REV2",
		Short: "Show what changed between two stored revisions",
		Long:  "Diff compares two stored revisions, given by ID or unique ID prefix (at least 4 characters).",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				ctx := cmd.Context()
				r1, err := s.c.Design(ctx, args[0])
				if err != nil {
					return apiErr(err)
				}
				r2, err := s.c.Design(ctx, args[1])
				if err != nil {
					return apiErr(err)
				}
				d, err := s.c.Diff(ctx, r2.ID, r1.ID)
				return a.show(output, d, err, func() error {
					fmt.Fprintf(a.stdout, "%s -> %s\n", short(r1.ID), short(r2.ID))
					writeDiff(a.stdout, d)
					return nil
				})
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	return cmd
}

// printLayer says what became of the design's API-managed layer.
func (a *app) printLayer(res client.ApplyResult) {
	if len(res.LayerTakenOver) > 0 {
		fmt.Fprintf(a.stdout, "taken over from the API-managed layer (now defined in git): %s\n", strings.Join(res.LayerTakenOver, ", "))
	}
	if res.LayerKept > 0 {
		fmt.Fprintf(a.stdout, "%d documents of the API-managed layer built over it ('orchestrator design-layer' exports them to commit)\n", res.LayerKept)
	}
}
