package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// gitCmd: what the server's git source did, and the approval of a commit
// it holds (docs/gitops.md).
func (a *app) gitCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "git",
		Short: "The git remote serve follows: its status, and approving a held commit",
		Long: `A serve with a git: block follows a branch of a git remote: each new
commit is fetched, validated, planned and applied. A commit whose plan has
destructive actions (or that changes credential bindings) is held until an
operator approves it by its commit ID. These commands talk to that serve
(--server URL --token, or its local socket).`,
	}
	cmd.AddCommand(a.gitStatusCmd(), a.gitApproveCmd())
	return cmd
}

func (a *app) gitStatusCmd() *cobra.Command {
	var sf stateFlags
	var output string
	cmd := &cobra.Command{
		Use:   "status [-o text|json|yaml]",
		Short: "What the git source fetched, applied, held or refused, and why",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			output, err := checkOutput(output)
			if err != nil {
				return err
			}
			s, err := a.connect(cmd.Context(), &sf, readState)
			if err != nil {
				return err
			}
			defer s.close()
			st, err := s.c.GitStatus(cmd.Context())
			return a.show(output, st, err, func() error { return a.printGitStatus(st) })
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) gitApproveCmd() *cobra.Command {
	var sf stateFlags
	var output string
	cmd := &cobra.Command{
		Use:   "approve COMMIT [-o text|json|yaml]",
		Short: "Apply the commit held for approval (its destructive actions approved), naming it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			output, err := checkOutput(output)
			if err != nil {
				return err
			}
			s, err := a.connect(cmd.Context(), &sf, readState)
			if err != nil {
				return err
			}
			defer s.close()
			ev, err := s.c.GitApprove(cmd.Context(), args[0])
			if err := a.show(output, ev, err, func() error {
				fmt.Fprintf(a.stdout, "commit %s: %s %s %s\n", ev.Commit, ev.Outcome, ev.Revision, ev.Reason)
				return nil
			}); err != nil {
				return err
			}
			if ev.Outcome != "applied" { // e.g. held again: its plan changed since it was shown
				return &exitError{code: exitInvalid, err: fmt.Errorf("commit %.12s was not applied (%s): see `orchestrator git status`", ev.Commit, ev.Outcome)}
			}
			return nil
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) printGitStatus(st apitypes.GitStatus) error {
	w := a.stdout
	fmt.Fprintf(w, "remote  %s  branch %s  path %s\n", st.Remote, st.Branch, orDefault(st.Path, "/"))
	if f := st.LastFetch; f != nil {
		fmt.Fprintf(w, "fetched %s  %s%s\n", f.Time.Local().Format("2006-01-02 15:04:05"), f.Commit, orEmpty(f.Error, "  error: "))
	}
	if ap := st.Applied; ap != nil {
		fmt.Fprintf(w, "applied %s -> revision %.12s (%s) by %s: %s\n", ap.Commit, ap.Revision, ap.Result, ap.Author, ap.Message)
	}
	if h := st.Held; h != nil {
		who := ""
		if h.AdminApproves {
			who = " (an admin's token: it changes credential bindings)"
		}
		fmt.Fprintf(w, "HELD    %s -> revision %.12s: approve with `orchestrator git approve %.12s`%s\n", h.Commit, h.Revision, h.Commit, who)
		for _, d := range h.Destructive {
			fmt.Fprintf(w, "        - %s\n", d)
		}
	}
	if r := st.Rejected; r != nil {
		fmt.Fprintf(w, "%-7s %s: %s\n", strings.ToUpper(r.Outcome), r.Commit, r.Reason)
		for _, f := range r.Findings {
			fmt.Fprintf(w, "        %s\n", f)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tTRIGGER\tCOMMIT\tOUTCOME\tREVISION\tREASON")
	for _, e := range st.Events {
		fmt.Fprintf(tw, "%s\t%s\t%.12s\t%s\t%.12s\t%s\n", e.Time.Local().Format("2006-01-02 15:04:05"), e.Trigger, e.Commit, e.Outcome, e.Revision, e.Reason)
	}
	return tw.Flush()
}

// orEmpty is prefix+s, or "" when s is.
func orEmpty(s, prefix string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}
