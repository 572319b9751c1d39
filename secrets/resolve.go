// Package secrets resolves the design's secret references to their values:
// env:VAR (an environment variable), file:/path (a file's content without
// its trailing newline) and secret:NAME.
//
// [Resolve] reads secret:NAME from the environment variable
// SLIPWAY_SECRET_<NAME> (upper case, '-' and '.' as '_'). A [Resolver]
// with a Store (the orchestrator's encrypted store,
// [github.com/slipway-dev/slipway/secrets/store]) reads it first from the
// store, under the name in lower case, and falls back to the environment
// variable only when the store does not hold it.
//
// Some references never resolve: the secret store's own key
// (secret:key and env:SLIPWAY_SECRET_KEY, see [store.KeyEnv]) and any
// value that is one of [Resolver.ServerKeys]. A Resolver with a
// [Policy] (the server's) resolves env: and file: only as it allows.
//
// Errors name the reference and where its value was looked for, never a
// value: a reference written wrong may be a clear-text secret.
package secrets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/secrets/store"
)

// EnvPrefix starts the environment variable that holds secret:NAME.
const EnvPrefix = "SLIPWAY_SECRET_"

// ErrNotSet is wrapped by the errors for references whose value is
// nowhere to be found (a secret neither stored nor in the environment, an
// unset environment variable, a missing file), as opposed to values that
// exist but can't be read (a wrong key, a damaged record).
var ErrNotSet = errors.New("not set")

// EnvName is the environment variable secret:name is read from.
func EnvName(name string) string {
	return EnvPrefix + strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToUpper(name))
}

// Resolve returns the value ref refers to, reading secret:NAME from the
// environment only. It is Resolver{}.Resolve.
func Resolve(ref string) (drivers.Secret, error) {
	return Resolver{}.Resolve(ref)
}

// Resolver resolves secret references, secret:NAME from a store first.
type Resolver struct {
	// Store holds secrets by name (e.g. a *store.Store). Its Get's error
	// must wrap store.ErrNotFound when it has no such secret. Nil: the
	// environment only.
	Store interface {
		Get(ctx context.Context, name string) (drivers.Secret, error)
	}
	// Policy limits env: and file: references. Nil: every one resolves
	// (the CLI's local commands, which run with their user's rights).
	Policy *Policy
	// ServerKeys are the server's own keys (the secret store's, the
	// introspection token key): a value holding one is never returned,
	// whatever reference led to it.
	ServerKeys [][]byte
}

// Resolve is ResolveContext with a background context.
func (r Resolver) Resolve(ref string) (drivers.Secret, error) {
	return r.ResolveContext(context.Background(), ref)
}

// ResolveContext returns the value ref refers to. env:VAR and file:/path
// are read as by the package-level Resolve, when r.Policy allows them.
// secret:NAME is looked up, in this order:
//
//  1. in r.Store (when not nil), under NAME in lower case: a stored
//     secret is returned, and an error other than "not found" (e.g. the
//     key is not the one the secret was stored with) is returned as is,
//     without looking further;
//  2. in the environment variable SLIPWAY_SECRET_<NAME> (see EnvName).
//
// A NAME that can't name a stored secret (see store.ValidateName; e.g.
// longer than 63 characters) is only looked up in the environment. The
// secret store's key never resolves (secret:key, env:SLIPWAY_SECRET_KEY),
// nor does a value holding one of r.ServerKeys.
func (r Resolver) ResolveContext(ctx context.Context, ref string) (drivers.Secret, error) {
	sr, err := design.ParseSecretRef(ref)
	if err != nil {
		return drivers.Secret{}, err
	}
	if err := reserved(sr); err != nil {
		return drivers.Secret{}, err
	}
	v, err := r.lookup(ctx, sr)
	if err == nil && serverKey(v.Reveal(), r.ServerKeys) {
		return drivers.Secret{}, fmt.Errorf("%s: %w: its value is one of the server's own keys, which are never handed out; refer to another secret", sr, ErrServerKey)
	}
	return v, err
}

// lookup finds the value of sr where ResolveContext says.
func (r Resolver) lookup(ctx context.Context, sr design.SecretRef) (drivers.Secret, error) {
	switch sr.Scheme {
	case "env":
		if err := r.Policy.allowEnv(sr.Name); err != nil {
			return drivers.Secret{}, err
		}
		return resolveRef(sr)
	case "file":
		p, err := r.Policy.allowFile(sr.Name)
		if err != nil {
			return drivers.Secret{}, err
		}
		return readFile(sr.Name, p)
	}
	name := strings.ToLower(sr.Name)
	if r.Store == nil || store.ValidateName(name) != nil {
		return resolveRef(sr)
	}
	v, err := r.Store.Get(ctx, name)
	switch {
	case err == nil:
		return v, nil
	case !errors.Is(err, store.ErrNotFound):
		return drivers.Secret{}, err
	}
	if v, ok := os.LookupEnv(EnvName(sr.Name)); ok {
		return drivers.NewSecret(v), nil
	}
	return drivers.Secret{}, notSet("secret %s is not set: store it with `orchestrator secret set %s` (value on standard input), or set the environment variable %s", sr.Name, name, EnvName(sr.Name))
}

// resolveRef reads env:, file: and (from the environment) secret: references.
func resolveRef(r design.SecretRef) (drivers.Secret, error) {
	switch r.Scheme {
	case "env":
		v, ok := os.LookupEnv(r.Name)
		if !ok {
			return drivers.Secret{}, notSet("environment variable %s is not set", r.Name)
		}
		return drivers.NewSecret(v), nil
	case "file":
		return readFile(r.Name, r.Name)
	}
	env := EnvName(r.Name)
	v, ok := os.LookupEnv(env)
	if !ok {
		return drivers.Secret{}, notSet("secret %s is not set (it is read from the environment variable %s)", r.Name, env)
	}
	return drivers.NewSecret(v), nil
}

// readFile reads the secret file name (at path, name with its links
// resolved): at most store.MaxValueLen bytes, without its trailing
// newline.
func readFile(name, path string) (drivers.Secret, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return drivers.Secret{}, notSet("read secret file: %s does not exist", name)
	}
	if err != nil {
		return drivers.Secret{}, fmt.Errorf("read secret file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, store.MaxValueLen+2))
	if err != nil {
		return drivers.Secret{}, fmt.Errorf("read secret file %s: %w", name, err)
	}
	v := strings.TrimRight(string(b), "\r\n")
	if len(v) > store.MaxValueLen {
		return drivers.Secret{}, fmt.Errorf("read secret file %s: it is over %d bytes long: a secret file holds one value", name, store.MaxValueLen)
	}
	return drivers.NewSecret(v), nil
}

// notSet is an error wrapping ErrNotSet with a message of its own.
func notSet(format string, args ...any) error {
	return &notSetError{fmt.Sprintf(format, args...)}
}

type notSetError struct{ msg string }

func (e *notSetError) Error() string        { return e.msg }
func (e *notSetError) Is(target error) bool { return target == ErrNotSet }
