package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// demoCmd runs what works today end to end on the example site: validate,
// render one node, apply twice. The virtual lab (simulated MAAS, BMCs and
// machines) takes over this command once it lands.
func (a *app) demoCmd() *cobra.Command {
	var site, state string
	cmd := &cobra.Command{
		Use:   "demo [--site DIR]",
		Short: "Run the end-to-end demo on the example site",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if state == "" {
				dir, err := os.MkdirTemp("", "slipway-demo-")
				if err != nil {
					return usageErr(err)
				}
				defer os.RemoveAll(dir)
				state = filepath.Join(dir, "state.db")
			}
			step := func(title string, args ...string) error {
				fmt.Fprintf(a.stdout, "\n== %s\n$ orchestrator %s\n", title, joinArgs(args))
				if code := run(ctx, args, a.stdout, a.stdout); code != exitOK {
					return &exitError{code: code, err: fmt.Errorf("demo step %q failed (exit %d)", title, code)}
				}
				return nil
			}
			l, err := a.load(ctx, []string{site})
			if err != nil {
				return err
			}
			first := ""
			for _, n := range sortedKeys(l.design.Nodes) {
				first = n
				break
			}
			for _, s := range [][]string{
				{"1. validate the whole design", "validate", site},
				{"2. render one node fully resolved", "render", "-o", "yaml", "--node", first, site},
				{"3. apply: store the design as a revision", "apply", "--state", state, site},
				{"4. apply again: identical content stores nothing", "apply", "--state", state, site},
				{"5. list stored revisions", "designs", "--state", state},
			} {
				if err := step(s[0], s[1:]...); err != nil {
					return err
				}
			}
			fmt.Fprintln(a.stdout, `
== What comes next
Today Slipway ingests, resolves, validates and stores site designs. The
virtual lab (simulated MAAS, BMCs and machines), the drivers and the deploy
engine are the next milestones; this demo will then deploy the example site
into the lab end to end.`)
			return nil
		},
	}
	cmd.Flags().StringVar(&site, "site", "examples/site-yaml", "design root to demonstrate with")
	cmd.Flags().StringVar(&state, "state", "", "state database (default: a temporary one)")
	return cmd
}

func joinArgs(args []string) string {
	s := ""
	for i, a := range args {
		if i > 0 {
			s += " "
		}
		s += a
	}
	return s
}
