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
	// Pins are plugins' SHA-256 sums (hex) by file name
	// (slipway-driver-<kind>-<name>): a pinned plugin whose file has
	// another sum is refused, never started.
	Pins map[string]string
	Log  zerolog.Logger
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
	shadowed []Info                       // plugins ignored or refused, with the reason
	refused  map[string]error             // kind/name -> why the plugin is never started
	sums     map[string][]byte            // path -> pinned SHA-256, checked again at each start
	pinned   []string                     // file names whose pin was found
	log      zerolog.Logger

	mu       sync.Mutex
	started  []*plugin.External
	closedUp bool
}

// New scans the plugin directory. A directory that does not exist holds no
// plugins; one that can't be read, or that a user other than this one and
// root could write, is an error (trust.go). A plugin file that is not
// trusted, or not the pinned one, is listed with the reason and never
// started.
func New(b Builtins, o Options) (*Registry, error) {
	r := &Registry{builtins: b, log: o.Log, plugins: map[string]map[string]string{
		drivers.KindOOB: {}, drivers.KindServer: {}, drivers.KindNetwork: {},
	}, refused: map[string]error{}, sums: map[string][]byte{}}
	if o.PluginDir == "" {
		return r, nil
	}
	pins, err := parsePins(o.Pins)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(o.PluginDir)
	if errors.Is(err, fs.ErrNotExist) {
		r.log.Debug().Str("dir", o.PluginDir).Msg("plugin directory does not exist: no external drivers")
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read plugin directory: %w", err)
	}
	if err := checkDir(o.PluginDir); err != nil {
		return nil, err
	}
	for _, e := range entries {
		r.add(o.PluginDir, e.Name(), pins)
	}
	r.unpinned(pins)
	return r, nil
}

// add registers the plugin file name in dir, unless it is no plugin, is
// not trusted, or a built-in has its kind and name.
func (r *Registry) add(dir, file string, pins map[string][]byte) {
	m := pluginNameRE.FindStringSubmatch(file)
	if m == nil {
		if strings.HasPrefix(file, PluginPrefix) {
			r.log.Warn().Str("file", file).Msg("ignoring plugin file: name it slipway-driver-<oob|server|network>-<name>")
		}
		return
	}
	path := filepath.Join(dir, file)
	kind, name := m[1], m[2]
	if err := checkPlugin(path, pins[file]); err != nil {
		r.refuse(kind, name, path, err)
		return
	}
	if pin := pins[file]; pin != nil {
		r.pinned = append(r.pinned, file)
	}
	st, err := os.Stat(path)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		r.log.Warn().Str("file", path).Msg("ignoring plugin file: not an executable file")
		return
	}
	if r.hasBuiltin(kind, name) {
		r.shadowed = append(r.shadowed, Info{Kind: kind, Name: name, Source: path,
			Error: "ignored: a built-in driver has this name; rename the plugin"})
		r.log.Warn().Str("file", path).Msg("ignoring plugin: a built-in driver has its kind and name")
		return
	}
	r.plugins[kind][name] = path
	r.sums[path] = pins[file]
}

// refuse records a plugin that is never started, and why.
func (r *Registry) refuse(kind, name, path string, err error) {
	r.shadowed = append(r.shadowed, Info{Kind: kind, Name: name, Source: path, Error: err.Error()})
	if !r.hasBuiltin(kind, name) {
		r.refused[kind+"/"+name] = err
	}
	r.log.Error().Str("file", path).Err(err).Msg("refusing plugin: it is never started")
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
	if err := r.refused[kind+"/"+name]; err != nil && !ok {
		return nil, drivers.Errorf(drivers.Permanent, "%s driver %q: %v", kind, name, err)
	}
	if !ok {
		return nil, r.unknown(kind, name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closedUp {
		return nil, errors.New("driver registry is closed")
	}
	e := plugin.NewExternal(kind, name, path, cfg, r.log).Pin(r.sums[path])
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
				v, err := plugin.NewExternal(kind, name, path, drivers.Config{}, r.log).Pin(r.sums[path]).Handshake()
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
