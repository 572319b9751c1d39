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
	cmd := &cobra.Command{
		Use:   "apply [--state PATH] ROOT...",
		Short: "Validate a design and store it as a new revision",
		Long: `Apply validates the design and, when it has no errors, stores it as a
content-addressed revision with its source roots and git commit. It prints
the revision ID and what changed since the current revision. Applying the
same content again stores nothing.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, roots []string) error {
			s, err := a.connect(cmd.Context(), &sf, readState)
			if err != nil {
				return err
			}
			defer s.close()
			res, err := s.c.ApplyDesign(cmd.Context(), roots)
			var pe *client.ProblemError
			if errors.As(err, &pe) && pe.Status == http.StatusUnprocessableEntity {
				writeFindingsText(a.stderr, pe.Findings)
				fmt.Fprintln(a.stderr, printable(pe.Detail))
				fmt.Fprintln(a.stderr, "nothing applied: fix the errors above and apply again")
				return errInvalid
			}
			if s.inProcess && client.IsStatus(err, http.StatusRequestEntityTooLarge) {
				return usageErr(fmt.Errorf("%w; here, --max-file-bytes and --max-design-bytes set the limits", err))
			}
			if err != nil {
				return apiErr(err)
			}
			a.printApplied(res)
			return nil
		},
	}
	sf.add(cmd)
	a.designLimitFlags(cmd)
	return cmd
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
			printable(git), printable(strings.Join(h.Roots, " "))})
	}
	return a.printTable("no design applied yet: run 'orchestrator apply ROOT...'", "REVISION\tAPPLIED\tNODES\tGIT\tROOTS", rows)
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
