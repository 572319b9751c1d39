package plugin

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"github.com/rs/zerolog"
	"github.com/slipway-dev/slipway/drivers"
)

// DefaultStartTimeout bounds how long a plugin may take to start and
// complete the handshake.
const DefaultStartTimeout = 10 * time.Second

// External is one external driver: an executable run as a go-plugin
// subprocess. It starts the process on first use, configures the driver,
// and after the process dies (the call in flight fails as Transient) starts
// it again on the next call. Safe for concurrent use.
type External struct {
	kind, name, path string
	cfg              drivers.Config
	log              zerolog.Logger
	startTimeout     time.Duration
	checksum         []byte // SHA-256 the executable must have (Pin); nil: any

	spawn spawner // the thread plugins are started from (lifetime_linux.go)

	mu       sync.Mutex
	client   *goplugin.Client
	raw      any
	restarts int
}

// NewExternal describes an external driver; nothing starts until it is used.
func NewExternal(kind, name, path string, cfg drivers.Config, log zerolog.Logger) *External {
	return &External{kind: kind, name: name, path: path, cfg: cfg, startTimeout: DefaultStartTimeout,
		log: log.With().Str("driver", kind+"/"+name).Str("plugin", filepath.Base(path)).Logger()}
}

// Pin makes every start check that the executable's SHA-256 is sum
// (go-plugin's SecureConfig); nil pins nothing. It returns e.
func (e *External) Pin(sum []byte) *External {
	e.checksum = sum
	return e
}

// Path is the plugin executable.
func (e *External) Path() string { return e.path }

// get returns the dispensed, configured client, starting the plugin if
// it is not running.
func (e *External) get(ctx context.Context) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client != nil && !e.client.Exited() {
		return e.raw, nil
	}
	if e.client != nil {
		e.client.Kill()
		e.client, e.raw = nil, nil
		e.restarts++
		e.log.Warn().Int("restarts", e.restarts).Msg("driver plugin is not running; starting it again")
	}
	c, raw, err := e.connect()
	if err != nil {
		return nil, err
	}
	if err := raw.(configurer).configure(ctx, e.cfg); err != nil {
		c.Kill()
		return nil, fmt.Errorf("configure driver plugin %s: %w", e.path, err)
	}
	e.client, e.raw = c, raw
	e.log.Debug().Int("protocol", c.NegotiatedVersion()).Msg("driver plugin started")
	return raw, nil
}

// connect starts the process, completes the handshake and dispenses the
// client of the driver's kind. The plugin is told this process's PID and
// dies with it (lifetime.go).
func (e *External) connect() (*goplugin.Client, any, error) {
	cmd := exec.Command(e.path)
	cmd.Env = hostEnv()
	bindChild(cmd)
	cfg := &goplugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          clientSet(),
		Cmd:              cmd,
		SkipHostEnv:      true, // cmd.Env has it, with the host's PID
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           newHCLogger(e.kind+"/"+e.name, e.log),
		StartTimeout:     e.startTimeout,
	}
	if e.checksum != nil {
		cfg.SecureConfig = &goplugin.SecureConfig{Checksum: e.checksum, Hash: sha256.New()}
	}
	c := goplugin.NewClient(cfg)
	var rpc goplugin.ClientProtocol
	var err error
	e.spawn.do(func() { rpc, err = c.Client() })
	if errors.Is(err, goplugin.ErrChecksumsDoNotMatch) {
		c.Kill()
		return nil, nil, drivers.Errorf(drivers.Permanent, "start driver plugin %s: its SHA-256 is no longer the pinned one (the file changed since the orchestrator started): reinstall the pinned plugin, or pin this one and restart", e.path)
	}
	if err != nil {
		c.Kill()
		return nil, nil, drivers.Errorf(drivers.Permanent, "start driver plugin %s: %v (it must be an executable built with Slipway's plugin SDK, protocol %d)", e.path, err, ProtocolVersion)
	}
	raw, err := rpc.Dispense(e.kind)
	if err != nil {
		c.Kill()
		return nil, nil, drivers.Errorf(drivers.Permanent, "driver plugin %s does not serve a %s driver: %v", e.path, e.kind, err)
	}
	return c, raw, nil
}

// Handshake starts the plugin, reads the protocol version it negotiated
// and stops it again, without configuring the driver: for listings.
func (e *External) Handshake() (int, error) {
	defer e.spawn.stop() // after the plugin, stopped or never started
	c, _, err := e.connect()
	if err != nil {
		return 0, err
	}
	defer c.Kill()
	return c.NegotiatedVersion(), nil
}

// after inspects a call's error: when the connection to the plugin broke,
// the process is dropped so that the next call starts a new one.
func (e *External) after(err error) error {
	if err == nil || !errors.Is(err, errTransport) {
		return err
	}
	e.mu.Lock()
	if e.client != nil {
		e.client.Kill()
		e.client, e.raw = nil, nil
		e.restarts++
	}
	e.mu.Unlock()
	e.log.Warn().Err(err).Msg("driver plugin failed during a call; it will be started again on the next call")
	return drivers.NewError(drivers.Transient, fmt.Errorf("driver plugin %s/%s failed during the call and will be restarted: %w", e.kind, e.name, err))
}

// Start starts the plugin now (rather than on first use) and returns the
// protocol version it negotiated.
func (e *External) Start(ctx context.Context) (int, error) {
	if _, err := e.get(ctx); err != nil {
		return 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client == nil {
		return 0, errors.New("plugin stopped while starting")
	}
	return e.client.NegotiatedVersion(), nil
}

// PID is the plugin process's ID, or 0 when it is not running.
func (e *External) PID() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client == nil || e.client.Exited() {
		return 0
	}
	if rc := e.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// Restarts counts how often the plugin was started again after a failure.
func (e *External) Restarts() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.restarts
}

// Close stops the plugin process (and then the thread it was started from).
func (e *External) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client != nil {
		e.client.Kill()
		e.client, e.raw = nil, nil
	}
	e.spawn.stop()
}

// use runs f on the plugin's client of type C.
func use[C any, R any](ctx context.Context, e *External, f func(C) (R, error)) (R, error) {
	var zero R
	raw, err := e.get(ctx)
	if err != nil {
		return zero, err
	}
	c, ok := raw.(C)
	if !ok {
		return zero, drivers.Errorf(drivers.Permanent, "driver plugin %s: unexpected client %T", e.path, raw)
	}
	r, err := f(c)
	return r, e.after(err)
}
