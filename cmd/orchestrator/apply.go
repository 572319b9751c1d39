package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/ingest/gitinfo"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
	"github.com/spf13/cobra"
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

func openStore(path string) (statestore.Store, error) {
	return openStoreOpts(path, bolt.Options{})
}

// openStoreOpts is openStore with options (serve verifies every page).
func openStoreOpts(path string, opts bolt.Options) (statestore.Store, error) {
	s, err := bolt.Open(path, opts)
	if err != nil {
		return nil, usageErr(err)
	}
	return s, nil
}

func (a *app) applyCmd() *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:   "apply [--state PATH] ROOT...",
		Short: "Validate a design and store it as a new revision",
		Long: `Apply validates the design and, when it has no errors, stores it as a
content-addressed revision with its source roots and git commit. It prints
the revision ID and what changed since the current revision. Applying the
same content again stores nothing.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, roots []string) error {
			if c, err := a.remote(); err != nil {
				return usageErr(err)
			} else if c != nil {
				return a.remoteApply(cmd, c, roots)
			}
			ctx := cmd.Context()
			l, err := a.load(ctx, roots)
			if err != nil {
				return err
			}
			writeFindingsText(a.stderr, l.findings)
			if l.findings.HasErrors() {
				fmt.Fprintln(a.stderr, l.summary())
				fmt.Fprintln(a.stderr, "nothing applied: fix the errors above and apply again")
				return errInvalid
			}
			body, id, err := l.design.Canonical()
			if err != nil {
				return usageErr(err)
			}
			store, err := openStore(state)
			if err != nil {
				return err
			}
			defer store.Close()
			var prev []byte
			cur, err := store.Current(ctx)
			switch {
			case err == nil:
				prev = cur.Design
			case !errors.Is(err, statestore.ErrNotFound):
				return usageErr(err)
			}
			gi := gitinfo.Of(ctx, roots)
			res, err := store.PutRevision(ctx, statestore.Revision{
				ID: id, Created: time.Now(), Roots: roots, GitCommit: gi.Commit, GitDirty: gi.Dirty,
				Counts: l.design.Counts(), Design: body,
			})
			if err != nil {
				return usageErr(err)
			}
			a.log.Info().Str("revision", id).Str("result", res.String()).Str("state", state).Msg("design applied")
			switch res {
			case statestore.Unchanged:
				fmt.Fprintf(a.stdout, "revision %s is already current: nothing stored\n", short(id))
				return nil
			case statestore.Restored:
				fmt.Fprintf(a.stdout, "revision %s (stored before) is current again\n", short(id))
			default:
				fmt.Fprintf(a.stdout, "revision %s stored\n", short(id))
			}
			d, err := design.DiffCanonical(prev, body)
			if err != nil {
				return usageErr(err)
			}
			writeDiff(a.stdout, d)
			return nil
		},
	}
	stateFlag(cmd, &state)
	a.designLimitFlags(cmd)
	return cmd
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
	var state string
	cmd := &cobra.Command{
		Use:   "designs [--state PATH]",
		Short: "List applied design revisions, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c, err := a.remote(); err != nil {
				return usageErr(err)
			} else if c != nil {
				return a.remoteDesigns(cmd, c)
			}
			store, err := openStore(state)
			if err != nil {
				return err
			}
			defer store.Close()
			hist, err := store.History(cmd.Context())
			if err != nil {
				return usageErr(err)
			}
			if len(hist) == 0 {
				fmt.Fprintln(a.stdout, "no design applied yet: run 'orchestrator apply ROOT...'")
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
					h.Counts[design.KindNode], git, strings.Join(h.Roots, " "))
			}
			return tw.Flush()
		},
	}
	stateFlag(cmd, &state)
	return cmd
}

func (a *app) diffCmd() *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:   "diff [--state PATH] REV1 REV2",
		Short: "Show what changed between two stored revisions",
		Long:  "Diff compares two stored revisions, given by ID or unique ID prefix (at least 4 characters).",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if c, err := a.remote(); err != nil {
				return usageErr(err)
			} else if c != nil {
				return a.remoteDiff(cmd, c, args[0], args[1])
			}
			store, err := openStore(state)
			if err != nil {
				return err
			}
			defer store.Close()
			ctx := cmd.Context()
			r1, err := store.Revision(ctx, args[0])
			if err != nil {
				return usageErr(err)
			}
			r2, err := store.Revision(ctx, args[1])
			if err != nil {
				return usageErr(err)
			}
			d, err := design.DiffCanonical(r1.Design, r2.Design)
			if err != nil {
				return usageErr(err)
			}
			fmt.Fprintf(a.stdout, "%s -> %s\n", short(r1.ID), short(r2.ID))
			writeDiff(a.stdout, d)
			return nil
		},
	}
	stateFlag(cmd, &state)
	return cmd
}
