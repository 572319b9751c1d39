package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

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
			dir, err := os.MkdirTemp("", "slipway-demo-")
			if err != nil {
				return usageErr(err)
			}
			defer os.RemoveAll(dir)
			if state == "" {
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
			names := l.design.NodeNames()
			if len(names) == 0 {
				return usageErr(fmt.Errorf("demo site %s has no nodes", site))
			}
			first := names[0]
			// A layer with two mistakes shows that validation reports every
			// problem at once with its file and line, before any hardware.
			mistakes := filepath.Join(dir, "mistakes")
			if err := writeMistakes(mistakes, l); err != nil {
				return usageErr(err)
			}
			fmt.Fprintf(a.stdout, "\n== 0. validation catches mistakes before any hardware is touched\n$ orchestrator validate %s %s\n", site, mistakes)
			if code := run(ctx, []string{"validate", site, mistakes}, a.stdout, a.stdout); code != exitInvalid {
				return &exitError{code: exitUsage, err: fmt.Errorf("demo: the mistakes layer should be invalid, validate exit %d", code)}
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
			fmt.Fprintln(a.stdout, "\n== 6. the virtual lab: one simulated machine per node, enlisted and commissioned in a simulated MAAS")
			if err := a.demoLab(ctx, l.design); err != nil {
				return &exitError{code: exitUsage, err: fmt.Errorf("demo lab: %w", err)}
			}
			fmt.Fprintln(a.stdout, `
== What comes next
Today Slipway ingests, resolves, validates and stores site designs, has its
driver framework, IPMI and MAAS drivers, and runs a virtual lab. The deploy
engine is the next milestone; this demo will then deploy the example site
into the lab end to end.`)
			return nil
		},
	}
	cmd.Flags().StringVar(&site, "site", "examples/site-yaml", "design root to demonstrate with")
	cmd.Flags().StringVar(&state, "state", "", "state database (default: a temporary one)")
	return cmd
}

// writeMistakes writes a layer over the demo site that gives its first two
// nodes the same BMC address and its first network a CIDR with host bits.
func writeMistakes(dir string, l *loaded) error {
	names := l.design.NodeNames()
	nets := make([]string, 0, len(l.design.Networks))
	for n := range l.design.Networks {
		nets = append(nets, n)
	}
	sort.Strings(nets)
	if len(names) < 2 || len(nets) == 0 {
		return fmt.Errorf("the demo site needs two nodes and a network")
	}
	first, second := l.design.Nodes[names[0]], l.design.Nodes[names[1]]
	cidr := l.design.Networks[nets[0]].Spec.CIDR
	ip, _, _ := strings.Cut(cidr, "/")
	body := fmt.Sprintf(`# A site layer with two mistakes, written by 'orchestrator demo'.
apiVersion: slipway/v1
kind: Node
metadata: {name: %s}
spec:
  oob: {address: %s}
---
apiVersion: slipway/v1
kind: Network
metadata: {name: %s}
spec:
  cidr: %s
`, second.Metadata.Name, first.Spec.OOB.Address, nets[0], strings.Replace(cidr, ip, strings.TrimSuffix(ip, "0")+"7", 1))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "mistakes.yaml"), []byte(body), 0o644)
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
