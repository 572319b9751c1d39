package server

// serve's git source (config `git:`): a gitsync.Follower that applies
// each new commit of a branch through the control API's ApplyDir. It runs
// with the engine: under serve on a state file from the start (an empty
// state takes its first design from git), in a replica group only while
// the replica leads. Any replica answers its status (kept in the store).

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/gitsync"
)

// gitSource is the follower and the apply it calls.
type gitSource struct {
	f   *gitsync.Follower
	app *gitApplier
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
	app := &gitApplier{trust: gc.TrustBindings}
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
	g.app.srv.Store(srv)
	done := make(chan struct{})
	go func() { defer close(done); _ = g.f.Run(ctx) }()
	return func() { <-done }
}

// gitApplier applies a commit's design through the control API.
type gitApplier struct {
	srv   atomic.Pointer[api.Server]
	trust bool
}

func (a *gitApplier) ApplyDir(ctx context.Context, req gitsync.ApplyRequest) (gitsync.ApplyResult, error) {
	srv := a.srv.Load()
	if srv == nil {
		return gitsync.ApplyResult{}, errors.New("the control API is not up yet")
	}
	out, err := srv.ApplyDir(ctx, api.DirApply{Dir: req.Dir, Roots: req.Roots, GitCommit: req.Commit, GitAuthor: req.Author,
		GitMessage: req.Message, Approve: req.Approve, Actor: req.Actor, TrustBindings: a.trust})
	if err != nil {
		return gitsync.ApplyResult{}, err
	}
	res := gitsync.ApplyResult{Revision: out.Revision, Result: out.Result, Destructive: out.Held, Approve: out.Approve, Bindings: out.HeldBindings}
	for _, f := range out.Findings {
		if f.Severity == design.SeverityError {
			res.Findings = append(res.Findings, fmt.Sprintf("%s:%d: %s", f.File, f.Line, f.Message))
		}
	}
	return res, nil
}
