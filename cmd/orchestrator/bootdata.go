package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/introspection"
	"github.com/slipway-dev/slipway/statestore"
)

// bootdataCmd prints what the introspection API serves a node in its
// current deployment, rendered by the introspection server's own code.
func (a *app) bootdataCmd() *cobra.Command {
	var state, cfgFile, part string
	cmd := &cobra.Command{
		Use:   "bootdata NODE [--part " + strings.Join(introspection.Parts, "|") + "] [--state DB | --server URL]",
		Short: "Print what a node is served in its current deployment (its token redacted)",
		Long: `Bootdata prints one part of what the introspection API serves the node's
current deployment, exactly as the node gets it but with its token replaced
by ` + introspection.RedactedToken + `: self (its resolved design), the
NoCloud meta-data, user-data and vendor-data, or the netplan network-config
(NICs matched by the MACs recorded when the node was commissioned). With
--server it asks the control API (admin token); else it reads the state
database, which 'serve' must not hold open.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if !slices.Contains(introspection.Parts, part) {
				return usageErr(fmt.Errorf("--part %q: use one of %s", part, strings.Join(introspection.Parts, ", ")))
			}
			if c, err := a.remote(); err != nil {
				return usageErr(err)
			} else if c != nil {
				b, err := c.BootData(cmd.Context(), argv[0], part)
				if err != nil {
					return apiErr(err)
				}
				_, err = a.stdout.Write(b)
				return err
			}
			b, err := a.localBootData(cmd.Context(), cfgFile, state, argv[0], part)
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(b)
			return err
		},
	}
	stateFlag(cmd, &state)
	cmd.Flags().StringVar(&cfgFile, "config", "", "serve's configuration file (for introspectionURL and state)")
	cmd.Flags().StringVar(&part, "part", introspection.PartSelf, "what to print: "+strings.Join(introspection.Parts, ", "))
	return cmd
}

// localBootData renders a part from the state database with an
// introspection server configured like serve's (the token key does not
// matter: the token is redacted).
func (a *app) localBootData(ctx context.Context, cfgFile, state, node, part string) ([]byte, error) {
	c, err := loadEngineConfig(cfgFile)
	if err != nil {
		return nil, usageErr(err)
	}
	if c.State == "" {
		c.State = state
	}
	st, err := openStore(c.State)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	url, err := currentIntrospectionURL(ctx, c, st)
	if err != nil {
		return nil, usageErr(err)
	}
	key := make([]byte, introspection.KeyLen)
	_, _ = rand.Read(key)
	srv, err := introspection.New(introspection.Config{Store: st, URL: url, Key: key, Log: a.log})
	if err != nil {
		return nil, usageErr(err)
	}
	b, _, err := srv.BootData(ctx, node, part)
	if err != nil {
		return nil, usageErr(fmt.Errorf("bootdata %s of node %s: %w", part, node, err))
	}
	return b, nil
}

// currentIntrospectionURL is the URL serve gives nodes: the config's,
// else the current design's Site's.
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
	d := &design.Design{}
	if err := json.Unmarshal(rev.Design, d); err != nil {
		return "", fmt.Errorf("decode design revision %s: %w", id, err)
	}
	if d.Site == nil || d.Site.Spec.Introspection.URL == "" {
		return "", fmt.Errorf("the current design's Site names no introspection.url: pass --config with introspectionURL")
	}
	return strings.TrimSuffix(d.Site.Spec.Introspection.URL, "/"), nil
}
