package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/onboarding"
)

// onboardingVerbs are the workflow verbs an onboarding takes.
var onboardingVerbs = []string{"retry", "resume", "rerun", "restart-clean", "cancel", "adopt", "mark-manual-intervention"}

// onboardingCmd: `onboarding add|list|show|VERB`, clients of the
// onboarding routes (admin), and `design-layer`, the layer's export.
func (a *app) onboardingCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "onboarding",
		Short: "Onboard nodes by hostname and BMC address; list, show and recover onboardings",
	}
	cmd.AddCommand(a.onboardAddCmd(), a.onboardListCmd(), a.onboardShowCmd())
	for _, v := range onboardingVerbs {
		cmd.AddCommand(a.onboardVerbCmd(v))
	}
	return cmd
}

func (a *app) onboardAddCmd() *cobra.Command {
	var sf stateFlags
	var site, output string
	var req onboarding.Request
	var rack string
	cmd := &cobra.Command{
		Use:   "add HOSTNAME=BMC... --site SITE --profile SITE_PROFILE --sku HARDWARE_PROFILE",
		Short: "Onboard nodes: add them to the design's API-managed layer and deploy them",
		Long: `Add builds a Node document per HOSTNAME=BMC (the site, the SKU, the host
profile, the BMC address and DHCP on the PXE network; the PXE MAC is found
when the machine enlists itself), builds the current design again with
them in its API-managed layer, stores that as a new revision and submits
their deploy (POST /api/v1/admin/onboardings/batch). Export the layer with
'orchestrator design-layer' and commit it to git. SITE is the site record's
ID or name, SITE_PROFILE one of its profiles' (ID or name); the three of
--site, --profile and --sku are required. Needs an admin token with --server.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if site == "" || req.ProfileID == "" || req.SKUID == "" {
				return usageErr(errors.New("--site SITE, --profile SITE_PROFILE and --sku HARDWARE_PROFILE are required"))
			}
			for _, arg := range argv {
				host, bmc, ok := strings.Cut(arg, "=")
				if !ok {
					return usageErr(fmt.Errorf("%q: give each node as HOSTNAME=BMC_ADDRESS", arg))
				}
				req.Rows = append(req.Rows, onboarding.Row{Hostname: host, IPMIIP: bmc, Rack: rack})
			}
			return a.call(cmd.Context(), &sf, runEngine, output, func(s *session, output string) error {
				return a.onboard(cmd.Context(), s, site, req, output)
			})
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&site, "site", "", "the site record's ID or name")
	cmd.Flags().StringVar(&req.SKUID, "sku", "", "the design's HardwareProfile the machines are")
	cmd.Flags().StringVar(&req.ProfileID, "profile", "", "the site profile's ID or name (required)")
	cmd.Flags().StringVar(&req.HostProfile, "host-profile", "", "the design's HostProfile (default: the one naming the site profile, else the Site's default)")
	cmd.Flags().StringVar(&rack, "rack", "", "the nodes' rack")
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) onboard(ctx context.Context, s *session, site string, req onboarding.Request, output string) error {
	rec, err := s.c.SiteNamed(ctx, site)
	if err != nil {
		return apiErr(err)
	}
	req.SiteID = rec.ID
	p, err := s.c.SiteProfileNamed(ctx, rec.ID, req.ProfileID)
	if err != nil {
		return apiErr(err)
	}
	req.ProfileID = p.ID
	out, err := s.c.Onboard(ctx, req)
	return a.show(output, out, err, func() error {
		_, err := fmt.Fprintf(a.stdout, "onboarding %s: %d nodes in revision %s (host profile %s), deploy task %s\n",
			out.ID, len(out.Onboarding.Rows), short(out.Onboarding.Revision), out.Onboarding.HostProfileUsed, orNone(out.Onboarding.Task))
		return err
	})
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func (a *app) onboardListCmd() *cobra.Command {
	var sf stateFlags
	var site, host, output string
	cmd := &cobra.Command{
		Use:   "list [--site SITE] [--hostname NODE]",
		Short: "List onboardings, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), &sf, runEngine, output, func(s *session, output string) error {
				siteID := ""
				if site != "" {
					rec, err := s.c.SiteNamed(cmd.Context(), site)
					if err != nil {
						return apiErr(err)
					}
					siteID = rec.ID
				}
				out, err := s.c.Onboardings(cmd.Context(), siteID, host)
				return a.show(output, out, err, func() error { return a.printOnboardings(out.Items) })
			})
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&site, "site", "", "only this site's (ID or name)")
	cmd.Flags().StringVar(&host, "hostname", "", "only those of this node")
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) printOnboardings(items []apitypes.Onboarding) error {
	rows := make([][]string, 0, len(items))
	for _, o := range items {
		rows = append(rows, []string{o.ID, o.Status, o.Onboarding.SiteName, strings.Join(o.Onboarding.Nodes(), ","), orNone(o.Onboarding.Task)})
	}
	return a.printTable("no onboardings", "ID\tSTATUS\tSITE\tNODES\tTASK", rows)
}

func (a *app) onboardShowCmd() *cobra.Command {
	var sf stateFlags
	var output string
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show an onboarding and its deploy task",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.call(cmd.Context(), &sf, runEngine, output, func(s *session, output string) error {
				out, err := s.c.Onboarding(cmd.Context(), argv[0])
				return a.show(output, out, err, func() error { return a.printOnboardings([]apitypes.Onboarding{out}) })
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) onboardVerbCmd(verb string) *cobra.Command {
	var sf stateFlags
	var output string
	cmd := &cobra.Command{
		Use:   verb + " ID",
		Short: "Apply " + verb + " to an onboarding (its deploy task, or its nodes for adopt and mark-manual-intervention)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.call(cmd.Context(), &sf, runEngine, output, func(s *session, output string) error {
				out, err := s.c.OnboardingVerb(cmd.Context(), argv[0], verb)
				return a.show(output, out, err, func() error { return a.printOnboardings([]apitypes.Onboarding{out}) })
			})
		},
	}
	sf.add(cmd)
	outputFlag(cmd, &output)
	return cmd
}

func (a *app) designLayerCmd() *cobra.Command {
	var sf stateFlags
	cmd := &cobra.Command{
		Use:   "design-layer",
		Short: "Print the design's API-managed layer (onboarded nodes) as YAML, to commit to git",
		Long: `design-layer prints the documents onboardings added to the design, as one
YAML file. Commit it as a root of its own after the design's roots: the
next apply that defines these documents takes them over from the layer.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.call(cmd.Context(), &sf, runEngine, "", func(s *session, _ string) error {
				y, err := s.c.DesignLayer(cmd.Context())
				if err != nil {
					return apiErr(err)
				}
				_, err = a.stdout.Write(y)
				return err
			})
		},
	}
	sf.add(cmd)
	return cmd
}
