// Package server builds and runs a Slipway server from its
// configuration: it is the composition root of `orchestrator serve`. One
// Config is decoded from the configuration file and the command's flags
// and validated in one place (LoadConfig, config.go); Run provisions from
// it the state store, the secret store, the drivers the current design's
// Sites name, the engine, the introspection API and the control API, on a
// state file (one replica) or on etcd (a replica group: servegroup.go).
// The CLI's commands that run an engine in their own process for want of
// a server (OpenEngine, OpenReader, NewAPI) are built by the same code.
//
// The shape follows Caddy's decode -> provision -> validate of one
// configuration and Nomad's command/agent: the binary's commands parse
// flags and call this package; nothing here knows of cobra or exit codes.
package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/server/ha"
)

// Options are what the process gives a server besides its configuration.
type Options struct {
	Log zerolog.Logger
	// Stderr receives the lines serve says to its operator: where it
	// listens, a first admin token written, a key file created.
	Stderr io.Writer
}

// Run runs a server from c until ctx ends: on etcd as one replica of a
// group when c.Store is set, else on the state file. c comes from
// LoadConfig (it is validated again here).
func Run(ctx context.Context, c Config, o Options) error {
	if err := c.Validate(); err != nil {
		return err
	}
	c.serving = true
	if c.MemoryLimit > 0 {
		debug.SetMemoryLimit(int64(c.MemoryLimit))
	}
	if c.Store != "" {
		return o.serveGroup(ctx, c) // servegroup.go
	}
	return o.serveOne(ctx, c)
}

// serveOne runs the engine and the API (TCP and the local socket) of a
// single replica on a state file until ctx ends.
func (o Options) serveOne(ctx context.Context, c Config) error {
	c.startEmpty = true
	env, err := o.openEngineKey(ctx, c, true)
	if err != nil {
		return err
	}
	defer env.Close()
	tokenFile := c.adminTokenFile()
	if created, err := auth.NewStore(env.store).EnsureAdmin(ctx, tokenFile); err != nil {
		return err
	} else if created {
		fmt.Fprintf(o.Stderr, "first start: an admin token was written to %s (mode 0600); create others with `orchestrator token create`\n", tokenFile)
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (another process there? use --listen)", c.Listen, err)
	}
	id, url := c.identity(ln.Addr())
	env.cluster = ha.Lone{Name: id, URL: url, Path: c.State, Started: time.Now().UTC().Truncate(time.Millisecond)}
	gs, err := o.newGit(c, env) // gitsource.go
	if err != nil {
		ln.Close()
		return err
	}
	srv, err := o.newAPI(c, env)
	if err != nil {
		ln.Close()
		return err
	}
	local, err := ListenLocal(LocalSocket(c.State)) // local.go
	if err != nil {
		ln.Close()
		return err
	}
	scheme := "http"
	if c.TLSCert != "" {
		scheme = "https"
	}
	fmt.Fprintf(o.Stderr, "slipway: engine on %s; control API on %s://%s/api/v1 and %s (Ctrl-C stops; tasks resume at the next start)\n",
		c.State, scheme, ln.Addr(), LocalSocket(c.State))
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Serve(gctx, ln, c.TLSCert, c.TLSKey) })
	g.Go(func() error { return srv.ServeLocal(gctx, local, LocalName) })
	g.Go(func() error { gs.run(gctx, srv)(); return nil })
	if err := g.Wait(); err != nil {
		return err
	}
	return nil
}
