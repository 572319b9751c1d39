package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/introspection"
)

// bootdataCmd prints what the introspection API serves a node in its
// current deployment, rendered by the introspection server's own code.
func (a *app) bootdataCmd() *cobra.Command {
	var sf stateFlags
	var part string
	cmd := &cobra.Command{
		Use:   "bootdata NODE [--part " + strings.Join(introspection.Parts, "|") + "] [--state DB | --server URL]",
		Short: "Print what a node is served in its current deployment (its token redacted)",
		Long: `Bootdata prints one part of what the introspection API serves the node's
current deployment, exactly as the node gets it but with its token replaced
by ` + introspection.RedactedToken + `: self (its resolved design), the
NoCloud meta-data, user-data and vendor-data, or the netplan network-config
(NICs matched by the MACs recorded when the node was commissioned). With
--server it needs an admin token.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if !slices.Contains(introspection.Parts, part) {
				return usageErr(fmt.Errorf("--part %q: use one of %s", part, strings.Join(introspection.Parts, ", ")))
			}
			s, err := a.connect(cmd.Context(), &sf, readState)
			if err != nil {
				return err
			}
			defer s.close()
			b, err := s.c.BootData(cmd.Context(), argv[0], part)
			if err != nil {
				return apiErr(err)
			}
			_, err = a.stdout.Write(b)
			return err
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&part, "part", introspection.PartSelf, "what to print: "+strings.Join(introspection.Parts, ", "))
	return cmd
}
