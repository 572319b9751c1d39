// Package registry finds drivers by kind and name: the built-ins wired
// explicitly by cmd/orchestrator, and external drivers, executables named
// slipway-driver-<kind>-<name> in a plugin directory, run with go-plugin.
package registry

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/plugin"
)

// Factories make a configured driver.
type (
	OOBFactory     = func(drivers.Config) (drivers.OOB, error)
	ServerFactory  = func(drivers.Config) (drivers.Server, error)
	NetworkFactory = func(drivers.Config) (drivers.Network, error)
)

// Builtins are the drivers compiled into the orchestrator, by kind and name.
type Builtins struct {
	OOB     map[string]OOBFactory
	Server  map[string]ServerFactory
	Network map[string]NetworkFactory
}

// Options configure a registry.
type Options struct {
	// PluginDir holds external drivers; "" means none.
	PluginDir string
	Log       zerolog.Logger
}

// Info describes one registered driver.
type Info struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Source   string `json:"source"`             // "builtin" or the plugin's path
	Protocol int    `json:"protocol,omitempty"` // plugin protocol version; built-ins speak plugin.ProtocolVersion
	Error    string `json:"error,omitempty"`    // why the driver can't be used
}

// PluginPrefix starts the file name of every external driver.
const PluginPrefix = "slipway-driver-"

var pluginNameRE = regexp.MustCompile(`^` + PluginPrefix + `(oob|server|network)-([a-z0-9][a-z0-9_-]*)$`)

// Registry hands out drivers. Close it to stop the plugin processes.
type Registry struct {
	builtins Builtins
	plugins  map[string]map[string]string // kind -> name -> path
	shadowed []Info
	log      zerolog.Logger

	mu       sync.Mutex
	started  []*plugin.External
	closedUp bool
}

// New scans the plugin directory. A directory that does not exist holds no
// plugins; one that can't be read is an error.
func New(b Builtins, o Options) (*Registry, error) {
	r := &Registry{builtins: b, log: o.Log, plugins: map[string]map[string]string{
		drivers.KindOOB: {}, drivers.KindServer: {}, drivers.KindNetwork: {},
	}}
	if o.PluginDir == "" {
		return r, nil
	}
	entries, err := os.ReadDir(o.PluginDir)
	if errors.Is(err, fs.ErrNotExist) {
		r.log.Debug().Str("dir", o.PluginDir).Msg("plugin directory does not exist: no external drivers")
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read plugin directory: %w", err)
	}
	for _, e := range entries {
		m := pluginNameRE.FindStringSubmatch(e.Name())
		if m == nil {
			if strings.HasPrefix(e.Name(), PluginPrefix) {
				r.log.Warn().Str("file", e.Name()).Msg("ignoring plugin file: name it slipway-driver-<oob|server|network>-<name>")
			}
			continue
		}
		path := filepath.Join(o.PluginDir, e.Name())
		st, err := os.Stat(path)
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			r.log.Warn().Str("file", path).Msg("ignoring plugin file: not an executable file")
			continue
		}
		kind, name := m[1], m[2]
		if r.hasBuiltin(kind, name) {
			r.shadowed = append(r.shadowed, Info{Kind: kind, Name: name, Source: path,
				Error: "ignored: a built-in driver has this name; rename the plugin"})
			r.log.Warn().Str("file", path).Msg("ignoring plugin: a built-in driver has its kind and name")
			continue
		}
		r.plugins[kind][name] = path
	}
	return r, nil
}

func (r *Registry) hasBuiltin(kind, name string) bool {
	switch kind {
	case drivers.KindOOB:
		return r.builtins.OOB[name] != nil
	case drivers.KindServer:
		return r.builtins.Server[name] != nil
	case drivers.KindNetwork:
		return r.builtins.Network[name] != nil
	}
	return false
}

// external starts tracking a plugin so that Close stops it.
func (r *Registry) external(kind, name string, cfg drivers.Config) (*plugin.External, error) {
	path, ok := r.plugins[kind][name]
	if !ok {
		return nil, r.unknown(kind, name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closedUp {
		return nil, errors.New("driver registry is closed")
	}
	e := plugin.NewExternal(kind, name, path, cfg, r.log)
	r.started = append(r.started, e)
	return e, nil
}

func (r *Registry) unknown(kind, name string) error {
	var names []string
	for _, i := range r.List(context.Background(), false) {
		if i.Kind == kind && i.Error == "" {
			names = append(names, i.Name)
		}
	}
	return drivers.Errorf(drivers.Permanent, "no %s driver named %q (registered: %s); install slipway-driver-%s-%s in the plugin directory or fix the Site's drivers.%s",
		kind, name, strings.Join(names, ", "), kind, name, kind)
}

// OOB returns the OOB driver called name.
func (r *Registry) OOB(name string, cfg drivers.Config) (drivers.OOB, error) {
	if f := r.builtins.OOB[name]; f != nil {
		return f(cfg)
	}
	e, err := r.external(drivers.KindOOB, name, cfg)
	if err != nil {
		return nil, err
	}
	return plugin.OOB{External: e}, nil
}

// Server returns the server driver called name.
func (r *Registry) Server(name string, cfg drivers.Config) (drivers.Server, error) {
	if f := r.builtins.Server[name]; f != nil {
		return f(cfg)
	}
	e, err := r.external(drivers.KindServer, name, cfg)
	if err != nil {
		return nil, err
	}
	return plugin.Server{External: e}, nil
}

// Network returns the network driver called name.
func (r *Registry) Network(name string, cfg drivers.Config) (drivers.Network, error) {
	if f := r.builtins.Network[name]; f != nil {
		return f(cfg)
	}
	e, err := r.external(drivers.KindNetwork, name, cfg)
	if err != nil {
		return nil, err
	}
	return plugin.Network{External: e}, nil
}

// List describes every driver, sorted by kind and name. With handshake,
// each plugin is started briefly to read its protocol version (and a
// plugin that fails to start says why in Error).
func (r *Registry) List(ctx context.Context, handshake bool) []Info {
	var out []Info
	add := func(kind string, names []string) {
		for _, n := range names {
			out = append(out, Info{Kind: kind, Name: n, Source: "builtin", Protocol: plugin.ProtocolVersion})
		}
	}
	add(drivers.KindOOB, keys(r.builtins.OOB))
	add(drivers.KindServer, keys(r.builtins.Server))
	add(drivers.KindNetwork, keys(r.builtins.Network))
	for kind, byName := range r.plugins {
		for name, path := range byName {
			i := Info{Kind: kind, Name: name, Source: path}
			if handshake && ctx.Err() == nil {
				v, err := plugin.NewExternal(kind, name, path, drivers.Config{}, r.log).Handshake()
				if err != nil {
					i.Error = err.Error()
				}
				i.Protocol = v
			}
			out = append(out, i)
		}
	}
	out = append(out, r.shadowed...)
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].Kind != out[b].Kind {
			return out[a].Kind < out[b].Kind
		}
		return out[a].Name < out[b].Name
	})
	return out
}

// Close stops every plugin process the registry started.
func (r *Registry) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.started {
		e.Close()
	}
	r.started, r.closedUp = nil, true
}

func keys[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
