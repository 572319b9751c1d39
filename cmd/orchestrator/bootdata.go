package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/introspection"
	"github.com/slipway-dev/slipway/statestore"
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

// bootData renders for the API what the introspection API serves nodes,
// with an introspection server configured like serve's (its token key
// does not matter: the API's answer has the token redacted). Nil when
// no URL is known yet (no design applied): the route then answers 501.
func (a *app) bootData(ctx context.Context, c engineConfig, st statestore.Store) api.BootData {
	url, err := currentIntrospectionURL(ctx, c, st)
	if err != nil {
		a.log.Debug().Err(err).Msg("bootdata: no introspection URL")
		return nil
	}
	key := make([]byte, introspection.KeyLen)
	_, _ = rand.Read(key)
	srv, err := introspection.New(introspection.Config{Store: st, URL: url, SiteURL: true, Key: key, Log: a.log})
	if err != nil {
		a.log.Debug().Err(err).Msg("bootdata")
		return nil
	}
	return srv
}

// currentIntrospectionURL is the URL serve gives nodes when their
// revision's Site names none: the config's, else (for want of serve's
// listener here) the current design's Site's. What a node's boot data
// carries is its deployment revision's Site URL first
// (introspection.Config.SiteURL), as serve's.
func currentIntrospectionURL(ctx context.Context, c engineConfig, st statestore.Store) (string, error) {
	if c.IntrospectionURL != "" {
		return strings.TrimSuffix(c.IntrospectionURL, "/"), nil
	}
	id, err := statestore.CurrentID(ctx, st)
	if err != nil {
		return "", fmt.Errorf("no design applied to %s: %w", c.State, err)
	}
	rev, err := st.Revision(ctx, id)
	if err != nil {
		return "", err
	}
	d, err := design.DecodeRevision(rev.Design)
	if err != nil {
		return "", fmt.Errorf("decode design revision %s: %w", id, err)
	}
	if d.Site == nil || d.Site.Spec.Introspection.URL == "" {
		return "", fmt.Errorf("the current design's Site names no introspection.url: pass --config with introspectionURL")
	}
	return strings.TrimSuffix(d.Site.Spec.Introspection.URL, "/"), nil
}
