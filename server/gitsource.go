package server

// serve's git source (config `git:`): a gitsync.Follower that applies
// each new commit of a branch through the control API's ApplyDir. It runs
// with the engine: under serve on a state file from the start (an empty
// state takes its first design from git), in a replica group only while
// the replica leads. Any replica answers its status (kept in the store).

import (
	"context"
	"path/filepath"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/gitsync"
)

// gitSource is the follower and the apply it calls.
type gitSource struct {
	f   *gitsync.Follower
	app *api.GitApplier
}

// checkGit checks the git: block.
func (c Config) checkGit() error {
	if c.Git == nil {
		return nil
	}
	g := *c.Git
	return g.Check()
}

// newGit makes the follower of c's git: block (nil without one) and
// gives it to env's API.
func (o Options) newGit(c Config, env *Env) (*gitSource, error) {
	if c.Git == nil {
		return nil, nil
	}
	gc := *c.Git
	var lim api.Config
	if err := c.designLimits(&lim); err != nil {
		return nil, err
	}
	gc.Limits, gc.Dir = lim.DesignLimits, filepath.Join(c.dir(), "gitsync")
	app := &api.GitApplier{TrustBindings: gc.TrustBindings}
	opts := gitsync.Options{Applier: app, Store: env.store, Log: o.Log.With().Str("component", "gitsync").Logger()}
	if env.secrets != nil {
		opts.Secrets = env.secrets
	}
	f, err := gitsync.New(gc, opts)
	if err != nil {
		return nil, err
	}
	env.git = f
	return &gitSource{f: f, app: app}, nil
}

// run starts following with srv's apply until ctx ends; the function it
// returns waits for the follower to stop.
func (g *gitSource) run(ctx context.Context, srv *api.Server) (wait func()) {
	if g == nil {
		return func() {}
	}
	g.app.Srv.Store(srv)
	done := make(chan struct{})
	go func() { defer close(done); _ = g.f.Run(ctx) }()
	return func() { <-done }
}
