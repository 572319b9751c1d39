package server

import (
	"fmt"
	"path/filepath"
	"regexp"

	"github.com/slipway-dev/slipway/secrets"
	secretstore "github.com/slipway-dev/slipway/secrets/store"
)

// secretRefsConfig is serve's allow-list of the design's env: and file:
// references (config key secretRefs). Empty by default: under serve the
// design, which operators write, reaches only secret:NAME (the encrypted
// store, then SLIPWAY_SECRET_<NAME>), never the server's environment or
// files. The CLI's local commands run with their user's own rights and
// resolve every reference.
type secretRefsConfig struct {
	Env   []string `yaml:"env"`   // variable names env:VAR may name
	Files []string `yaml:"files"` // absolute paths of files, or directories whose files file:PATH may name
}

// maxSecretRefs bounds each list of secretRefs.
const maxSecretRefs = 256

var envVarRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// check reports the first entry that can't be used.
func (r secretRefsConfig) check() error {
	if len(r.Env) > maxSecretRefs || len(r.Files) > maxSecretRefs {
		return fmt.Errorf("config secretRefs: list at most %d variables and %d files", maxSecretRefs, maxSecretRefs)
	}
	for _, v := range r.Env {
		if !envVarRE.MatchString(v) {
			return fmt.Errorf("config secretRefs.env: %q is not an environment variable name", v)
		}
	}
	for _, f := range r.Files {
		if !filepath.IsAbs(f) {
			return fmt.Errorf("config secretRefs.files: %q is not an absolute path", f)
		}
	}
	return nil
}

// resolver is the engine's secret resolver: the store sec (nil: none)
// first; never the server's keys (keys, and the introspection key) by
// value; under serve, env: and file: only as secretRefs allows, and never
// the server's own files.
func (c Config) resolver(sec *secretstore.Store, keys [][]byte) (secrets.Resolver, error) {
	r := secrets.Resolver{ServerKeys: keys}
	if sec != nil {
		r.Store = sec
	}
	if c.IntrospectionListen != "" {
		k, err := secretstore.LoadOrCreateKey(c.introspectionKeyFile())
		if err != nil {
			return r, fmt.Errorf("introspection key %s (config introspectionKeyFile): %w", c.introspectionKeyFile(), err)
		}
		r.ServerKeys = append(r.ServerKeys, k)
	}
	if !c.serving {
		return r, nil
	}
	r.Policy = &secrets.Policy{Env: c.SecretRefs.Env, Files: c.SecretRefs.Files, Never: c.serverFiles()}
	return r, nil
}

// serverFiles are the files a secret reference never reads: the state
// database, the key and token files, the TLS key.
func (c Config) serverFiles() []string {
	files := []string{c.State, c.keyFile(), c.introspectionKeyFile(), c.adminTokenFile()}
	if c.TLSKey != "" {
		files = append(files, c.TLSKey)
	}
	for i, f := range files {
		if abs, err := filepath.Abs(f); err == nil {
			files[i] = abs
		}
	}
	return files
}

// introspectionKeyFile is where the node token key lives.
func (c Config) introspectionKeyFile() string {
	if c.IntrospectionKeyFile != "" {
		return c.IntrospectionKeyFile
	}
	return filepath.Join(c.dir(), "introspection.key")
}

// adminTokenFile is where serve writes the first admin token.
func (c Config) adminTokenFile() string {
	if c.AdminTokenFile != "" {
		return c.AdminTokenFile
	}
	return filepath.Join(c.dir(), "admin.token")
}
