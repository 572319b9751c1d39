package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
)

// plan's exit codes, as `terraform plan -detailed-exitcode`: 0 no change,
// 2 changes, 1 an error (an invalid design too).
const (
	exitPlanError   = 1
	exitPlanChanges = 2
)

// planErr makes any error of plan exit 1.
func planErr(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	switch {
	case errors.Is(err, errPlanChanges):
		return err
	case errors.As(err, &ee):
		return &exitError{code: exitPlanError, err: ee.err}
	}
	return &exitError{code: exitPlanError, err: err}
}

// errPlanChanges is plan's exit 2: the plan changes something (printed).
var errPlanChanges = &exitError{code: exitPlanChanges}

func (a *app) planCmd() *cobra.Command {
	var sf stateFlags
	var output string
	cmd := &cobra.Command{
		Use:   "plan [--state PATH | --server URL] [-o table|json|yaml] ROOT...",
		Short: "Show what applying a design and then deploying it would do, without changing anything",
		Long: `Plan uploads the design (directories or files of YAML, later roots
layered over earlier ones; or one .tar.gz whose top-level directories are
the roots, as git archive --format=tar.gz HEAD site/ writes) and shows, for each node, what applying it and
then deploying would do to its machine (release, redeploy, new, configure,
none) and to each site, destructive actions first. Nothing is stored or
changed. Against a serve the provisioner is read; with --state and no
serve running, the plan comes from the stored designs and records and
says so.

Exit status: 0 no change, 2 changes, 1 an error or an invalid design (as
terraform plan -detailed-exitcode), so that CI can post the plan on a
pull request.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return planErr(errors.New("plan needs the design's roots: give one or more directories or files of YAML"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, roots []string) error {
			return planErr(a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				p, err := a.fetchPlan(cmd, s, roots)
				if err != nil {
					return err
				}
				if err := a.emit(output, p, func() error { return writePlan(a.stdout, p) }); err != nil {
					return err
				}
				if p.Changed {
					return errPlanChanges
				}
				return nil
			}))
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return planErr(err) })
	sf.add(cmd)
	outputFlag(cmd, &output)
	a.designLimitFlags(cmd)
	return cmd
}

// fetchPlan asks the API for the plan of roots; an invalid design's
// findings are printed and it is errInvalid.
func (a *app) fetchPlan(cmd *cobra.Command, s *session, roots []string) (apitypes.Plan, error) {
	p, err := s.c.PlanDesign(cmd.Context(), roots)
	var pe *client.ProblemError
	if errors.As(err, &pe) && pe.Status == http.StatusUnprocessableEntity {
		writeFindingsText(a.stderr, pe.Findings)
		fmt.Fprintln(a.stderr, printable(pe.Detail))
		return p, errInvalid
	}
	if s.inProcess && client.IsStatus(err, http.StatusRequestEntityTooLarge) {
		return p, usageErr(fmt.Errorf("%w; here, --max-file-bytes and --max-design-bytes set the limits", err))
	}
	return p, apiErr(err)
}

// planActions are the actions in the order a plan shows them.
var planActions = []string{"release", "redeploy", "new", "configure", "none"}

// planCounts says the plan's counts in order: "1 release, 2 new, 5 none".
func planCounts(counts map[string]int) string {
	var parts []string
	for _, a := range planActions {
		if n := counts[a]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, a))
		}
	}
	if len(parts) == 0 {
		return "no nodes"
	}
	return strings.Join(parts, ", ")
}

// writePlan prints a plan for people (and a pull-request comment): a
// header, the destructive actions, each node that changes with its
// reasons and changes, then each site's changes.
func writePlan(w io.Writer, p apitypes.Plan) error {
	from := "(none)"
	if p.From != "" {
		from = short(p.From)
	}
	fmt.Fprintf(w, "plan %s → %s: %s\n", from, short(p.To), planCounts(p.Counts))
	if !p.Observed {
		fmt.Fprintln(w, "the provisioner was not read: this plan comes from the stored designs and the engine's records")
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "note: %s\n", printable(n))
	}
	if len(p.Destructive) > 0 {
		how := "apply needs their approval: --approval " + p.Approve
		if p.Approve == "" { // the current revision: approved when it was applied
			how = "the current revision's, approved when it was applied"
		}
		fmt.Fprintf(w, "\n%d destructive actions (%s):\n", len(p.Destructive), how)
		for _, d := range p.Destructive {
			fmt.Fprintf(w, "  ! %s\n", printable(d))
		}
	}
	writePlanNodes(w, p)
	writePlanSites(w, p.Sites)
	if !p.Changed {
		fmt.Fprintln(w, "\nno changes: the machines and sites are as the design says")
	}
	return nil
}

func writePlanNodes(w io.Writer, p apitypes.Plan) {
	header := false
	for _, n := range p.Nodes {
		if n.Action == "none" {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nnodes:")
			header = true
		}
		machine := ""
		if n.Machine != "" {
			machine = " machine " + n.Machine
			if n.State != "" {
				machine += " (" + n.State + ")"
			}
		}
		fmt.Fprintf(w, "  %-9s %s%s\n", n.Action, printable(n.Node), printable(machine))
		for _, r := range n.Reasons {
			fmt.Fprintf(w, "      why: %s\n", printable(r))
		}
		if n.Erase != "" {
			fmt.Fprintf(w, "      erase: %s\n", printable(n.Erase))
		}
		writeChanges(w, n.Changes)
	}
	if p.NodesOmitted > 0 {
		fmt.Fprintf(w, "  … and %d more nodes (the stored plan keeps the first %d; the counts above count them all)\n", p.NodesOmitted, len(p.Nodes))
	}
}

func writePlanSites(w io.Writer, sites []apitypes.SitePlan) {
	for _, s := range sites {
		if len(s.Changes) == 0 && len(s.Records) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nsite %s:\n", printable(s.Site))
		writeChanges(w, s.Changes)
		for _, r := range s.Records {
			fmt.Fprintf(w, "      record: %s\n", printable(r))
		}
	}
}

// writeChanges prints provisioner changes: + create, ~ update, - delete.
func writeChanges(w io.Writer, cs []apitypes.PlannedChange) {
	for _, c := range cs {
		mark := map[string]string{"create": "+", "update": "~", "delete": "-"}[c.Op]
		if mark == "" {
			mark = c.Op
		}
		line := fmt.Sprintf("      %s %s %s", mark, c.Part, c.Object)
		if c.Detail != "" {
			line += ": " + c.Detail
		}
		fmt.Fprintln(w, printable(line))
	}
}

// planCell is the designs table's PLAN column: the stored plan in brief.
func planCell(ps *apitypes.PlanSummary) string {
	switch {
	case ps == nil:
		return "-"
	case !ps.Changed:
		return "no change"
	}
	counts := make(map[string]int, len(ps.Counts))
	for a, n := range ps.Counts {
		if a != "none" {
			counts[a] = n
		}
	}
	s := planCounts(counts)
	if ps.Destructive > 0 {
		s = fmt.Sprintf("!%d destructive: %s", ps.Destructive, s)
	}
	return s
}

// revisionPlan is designs show's document: the revision and its plan.
type revisionPlan struct {
	Revision apitypes.RevisionInfo `json:"revision"`
	Plan     *apitypes.Plan        `json:"plan"` // null: none stored
}

func (a *app) designsShowCmd() *cobra.Command {
	var sf stateFlags
	var output string
	cmd := &cobra.Command{
		Use:   "show [--state PATH] REV",
		Short: "Show a stored revision and the plan stored with it when it was applied",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.call(cmd.Context(), &sf, readState, output, func(s *session, output string) error {
				var out revisionPlan
				var err error
				if out.Revision, err = s.c.Design(cmd.Context(), args[0]); err != nil {
					return apiErr(err)
				}
				p, err := s.c.DesignPlan(cmd.Context(), out.Revision.ID)
				if err == nil {
					out.Plan = &p
				} else if !client.IsStatus(err, http.StatusNotFound) {
					return apiErr(err)
				}
				return a.emit(output, out, func() error { return a.printRevisionPlan(out) })
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) printRevisionPlan(rp revisionPlan) error {
	r := rp.Revision
	fmt.Fprintf(a.stdout, "revision %s, created %s, %d nodes, provenance %s\n", r.ID, r.Created.Local().Format("2006-01-02 15:04:05"),
		len(r.Nodes), printable(r.Provenance))
	if r.GitCommit != "" {
		fmt.Fprintf(a.stdout, "git commit %s %s %s\n", r.GitCommit, printable(r.GitAuthor), printable(r.GitMessage))
	}
	fmt.Fprintf(a.stdout, "roots: %s\n\n", printable(strings.Join(r.Roots, " ")))
	if rp.Plan == nil {
		fmt.Fprintln(a.stdout, "no plan is stored with this revision (it was applied before plans were kept)")
		return nil
	}
	return writePlan(a.stdout, *rp.Plan)
}
