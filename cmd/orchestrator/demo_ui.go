package main

import (
	"context"
	"fmt"
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

// dashOpts: the demo's control API and dashboard.
type dashOpts struct {
	listen string // "": none
	given  bool   // --dashboard was on the command line
	keep   bool   // serve until Ctrl-C after the deploy
}

// demoDashboard serves the control API with the web dashboard over the
// demo's engine and prints where, with an admin token made for this demo
// (its state is a temporary one, gone at its end). stop ends it.
func (a *app) demoDashboard(ctx context.Context, env *labrun.Env, e *orchestrator.Engine, st statestore.Store, o dashOpts) (stop func(), err error) {
	if o.listen == "" {
		return func() {}, nil
	}
	tokens := auth.NewStore(st)
	plain, _, err := tokens.Create(ctx, auth.RoleAdmin, "demo")
	if err != nil {
		return nil, err
	}
	authenticate, tokenAdmin := api.TokenStore(tokens)
	srv, err := api.New(api.Config{Engine: e, Consoles: e, Store: st, Authenticate: authenticate, Tokens: tokenAdmin, UI: ui.Handler(),
		Secrets: api.SecretStore(env.SecretStore), BootData: env.Introspection, Layer: designlayer.New(st), Onboardings: onboarding.New(st), Log: a.log})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return nil, fmt.Errorf("dashboard: listen on %s: %w (use --dashboard ADDR, or \"\" for none)", o.listen, err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(sctx, ln, "", "") }()
	fmt.Fprintf(a.stderr, "\ndashboard: http://%s/ui/ — sign in with this demo's admin token %s\n\n", ln.Addr(), plain)
	return func() { cancel(); <-done }, nil
}

// wait keeps the demo (lab, engine, dashboard) running until Ctrl-C when
// --keep asks for it.
func (o dashOpts) wait(ctx context.Context, a *app) {
	if !o.keep || o.listen == "" {
		return
	}
	fmt.Fprintln(a.stderr, "the lab and the dashboard keep running (--keep): Ctrl-C ends them")
	<-ctx.Done()
}
