package server

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/introspection"
	"github.com/slipway-dev/slipway/statestore"
)

// bootData renders for the API what the introspection API serves nodes,
// with an introspection server configured like serve's (its token key
// does not matter: the API's answer has the token redacted). Nil when
// no URL is known yet (no design applied): the route then answers 501.
func (o Options) bootData(ctx context.Context, c Config, st statestore.Store) api.BootData {
	url, err := currentIntrospectionURL(ctx, c, st)
	if err != nil {
		o.Log.Debug().Err(err).Msg("bootdata: no introspection URL")
		return nil
	}
	key := make([]byte, introspection.KeyLen)
	_, _ = rand.Read(key)
	srv, err := introspection.New(introspection.Config{Store: st, URL: url, SiteURL: true, Key: key, Log: o.Log})
	if err != nil {
		o.Log.Debug().Err(err).Msg("bootdata")
		return nil
	}
	return srv
}

// currentIntrospectionURL is the URL serve gives nodes when their
// revision's Site names none: the config's, else (for want of serve's
// listener here) the current design's Site's. What a node's boot data
// carries is its deployment revision's Site URL first
// (introspection.Config.SiteURL), as serve's.
func currentIntrospectionURL(ctx context.Context, c Config, st statestore.Store) (string, error) {
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
