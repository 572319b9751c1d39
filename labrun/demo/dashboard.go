package demo

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/designlayer"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/onboarding"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/ui"
)

// Dashboard: the demo's control API and dashboard.
type Dashboard struct {
	Listen string // "": none
	Keep   bool   // serve until ctx ends after the deploy
}

// dashboard serves the control API with the web dashboard over the
// demo's engine and prints where, with an admin token made for this demo
// (its state is a temporary one, gone at its end). stop ends it.
func (o *Options) dashboard(ctx context.Context, env *labrun.Env, e *orchestrator.Engine, st statestore.Store) (stop func(), err error) {
	listen := o.Dashboard.Listen
	if listen == "" {
		return func() {}, nil
	}
	tokens := auth.NewStore(st)
	plain, _, err := tokens.Create(ctx, auth.RoleAdmin, "demo")
	if err != nil {
		return nil, err
	}
	authenticate, tokenAdmin := api.TokenStore(tokens)
	srv, err := api.New(api.Config{Engine: e, Consoles: e, Store: st, Authenticate: authenticate, Tokens: tokenAdmin, UI: ui.Handler(),
		Secrets: api.SecretStore(env.SecretStore), BootData: env.Introspection, Layer: designlayer.New(st), Onboardings: onboarding.New(st), Log: o.Log})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("dashboard: listen on %s: %w (use --dashboard ADDR, or \"\" for none)", listen, err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(sctx, ln, "", "") }()
	fmt.Fprintf(o.Err, "\ndashboard: http://%s/ui/ — sign in with this demo's admin token %s\n\n", ln.Addr(), plain)
	return func() { cancel(); <-done }, nil
}

// wait keeps the demo (lab, engine, dashboard) running until ctx ends
// (Ctrl-C) when Keep asks for it.
func (o Dashboard) wait(ctx context.Context, stderr io.Writer) {
	if !o.Keep || o.Listen == "" {
		return
	}
	fmt.Fprintln(stderr, "the lab and the dashboard keep running (--keep): Ctrl-C ends them")
	<-ctx.Done()
}
