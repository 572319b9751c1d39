package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	yamlv3 "gopkg.in/yaml.v3"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

func (a *app) renderCmd() *cobra.Command {
	var output, node string
	cmd := &cobra.Command{
		Use:   "render [-o json|yaml] --node NAME ROOT...",
		Short: "Print one node fully resolved",
		Long: `Render prints one node as Slipway will deploy it: its host profile chain
applied, defaults filled in and its hardware profile attached under
spec.hardware. Exit 1 with the findings if the design has errors.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, roots []string) error {
			if output != "json" && output != "yaml" {
				return usageErr(fmt.Errorf("-o %q: use json or yaml", output))
			}
			if node == "" {
				return usageErr(fmt.Errorf("--node NAME is required"))
			}
			l, err := a.load(cmd.Context(), roots)
			if err != nil {
				return err
			}
			if l.findings.HasErrors() {
				writeFindingsText(a.stderr, l.findings)
				fmt.Fprintln(a.stderr, l.summary())
				return errInvalid
			}
			r, err := l.design.RenderNode(node)
			if err != nil {
				return usageErr(err)
			}
			return writeDoc(a.stdout, output, apitypes.FromRenderedNode(r))
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "json", "output format: json or yaml")
	cmd.Flags().StringVar(&node, "node", "", "name of the node to render")
	a.designLimitFlags(cmd)
	return cmd
}

// writeDoc prints v as indented JSON, or as YAML with the same field
// order and names. A design object is given as its API wire type
// (api/apitypes), whose names are the design schema's: the same in both.
func writeDoc(w io.Writer, format string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == "json" {
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	var n yamlv3.Node
	if err := yamlv3.Unmarshal(b, &n); err != nil {
		return err
	}
	return encodeYAML(w, &n)
}

// encodeYAML writes n in block style, indented by two.
func encodeYAML(w io.Writer, n *yamlv3.Node) error {
	blockStyle(n)
	enc := yamlv3.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return err
	}
	return enc.Close()
}

// blockStyle drops the flow and quoting styles JSON input leaves on nodes.
func blockStyle(n *yamlv3.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}
