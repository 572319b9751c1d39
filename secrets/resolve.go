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
// Errors name the reference and where its value was looked for, never a
// value: a reference written wrong may be a clear-text secret.
package secrets

import (
	"context"
	"errors"
	"fmt"
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
}

// Resolve is ResolveContext with a background context.
func (r Resolver) Resolve(ref string) (drivers.Secret, error) {
	return r.ResolveContext(context.Background(), ref)
}

// ResolveContext returns the value ref refers to. env:VAR and file:/path
// are read as by the package-level Resolve. secret:NAME is looked up, in
// this order:
//
//  1. in r.Store (when not nil), under NAME in lower case: a stored
//     secret is returned, and an error other than "not found" (e.g. the
//     key is not the one the secret was stored with) is returned as is,
//     without looking further;
//  2. in the environment variable SLIPWAY_SECRET_<NAME> (see EnvName).
//
// A NAME that can't name a stored secret (see store.ValidateName; e.g.
// longer than 63 characters) is only looked up in the environment.
func (r Resolver) ResolveContext(ctx context.Context, ref string) (drivers.Secret, error) {
	sr, err := design.ParseSecretRef(ref)
	if err != nil {
		return drivers.Secret{}, err
	}
	if sr.Scheme != "secret" || r.Store == nil {
		return resolveRef(sr)
	}
	name := strings.ToLower(sr.Name)
	if store.ValidateName(name) != nil {
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
		b, err := os.ReadFile(r.Name)
		if errors.Is(err, fs.ErrNotExist) {
			return drivers.Secret{}, notSet("read secret file: %s does not exist", r.Name)
		}
		if err != nil {
			return drivers.Secret{}, fmt.Errorf("read secret file: %w", err)
		}
		return drivers.NewSecret(strings.TrimRight(string(b), "\r\n")), nil
	}
	env := EnvName(r.Name)
	v, ok := os.LookupEnv(env)
	if !ok {
		return drivers.Secret{}, notSet("secret %s is not set (it is read from the environment variable %s)", r.Name, env)
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
