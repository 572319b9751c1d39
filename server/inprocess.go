package server

import (
	"context"
	"os"
	"path/filepath"

	"github.com/slipway-dev/slipway/api"
)

// InProcess is the engine (or only a reader of the state) and the control
// API served in this process on a private local socket, for one command
// of the CLI that finds no server to talk to: built by the same
// OpenEngine, OpenReader and NewAPI as serve's.
type InProcess struct {
	Socket string // the API's socket, in a directory of this process's own
	close  func()
}

// Close stops the API, closes the engine and removes the socket's
// directory.
func (p *InProcess) Close() { p.close() }

// ServeInProcess opens c's state with the engine (engine) or as a reader
// (createKey: creating the secret key when there is none) and serves the
// control API over it on a socket in a new temporary directory, which
// also holds the uploads (c.UploadDir is replaced).
func ServeInProcess(ctx context.Context, c Config, o Options, engine, createKey bool) (*InProcess, error) {
	var env *Env
	var err error
	if engine {
		env, err = OpenEngine(ctx, c, o)
	} else {
		env, err = OpenReader(c, o, createKey)
	}
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "slipway-cli-")
	if err != nil {
		env.Close()
		return nil, err
	}
	fail := func(err error) (*InProcess, error) { env.Close(); os.RemoveAll(dir); return nil, err }
	c.UploadDir = filepath.Join(dir, "uploads") // this process's own
	srv, err := NewAPI(c, env, o)
	if err != nil {
		return fail(err)
	}
	path := filepath.Join(dir, "api.sock")
	ln, err := api.ListenLocal(path)
	if err != nil {
		return fail(err)
	}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.ServeLocal(sctx, ln, LocalName) }()
	return &InProcess{Socket: path, close: func() { stop(); <-done; env.Close(); os.RemoveAll(dir) }}, nil
}
