package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/slipway-dev/slipway/design"
	"github.com/spf13/cobra"
)

func (a *app) validateCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "validate [-o text|json] ROOT...",
		Short: "Validate a site design and report every finding",
		Long: `Validate reads the design roots (files or directories of YAML; later roots
layer over earlier ones), resolves inheritance and runs every validation rule.
All findings are reported at once, sorted by file and line.

Exit status: 0 when there is no error (warnings allowed), 1 when there are
errors, 2 for usage or I/O problems.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, roots []string) error {
			if output != "text" && output != "json" {
				return usageErr(fmt.Errorf("-o %q: use text or json", output))
			}
			l, err := a.load(cmd.Context(), roots)
			if err != nil {
				return err
			}
			if output == "json" {
				err = writeFindingsJSON(a.stdout, l.findings)
			} else {
				writeFindingsText(a.stdout, l.findings)
				fmt.Fprintln(a.stderr, l.summary())
			}
			if err != nil {
				return usageErr(err)
			}
			if l.findings.HasErrors() {
				return errInvalid
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	a.designLimitFlags(cmd)
	return cmd
}

func writeFindingsText(w io.Writer, fs design.Findings) {
	for _, f := range fs {
		fmt.Fprintln(w, f.String())
	}
}

type findingsJSON struct {
	Valid    bool             `json:"valid"`
	Findings []design.Finding `json:"findings"`
}

func writeFindingsJSON(w io.Writer, fs design.Findings) error {
	if fs == nil {
		fs = design.Findings{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(findingsJSON{Valid: !fs.HasErrors(), Findings: fs})
}
