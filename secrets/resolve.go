// Package secrets resolves the design's secret references to their values:
// env:VAR (an environment variable), file:/path (a file's content without
// its trailing newline) and secret:NAME. Until the orchestrator's
// encrypted store exists, secret:NAME is read from the environment
// variable SLIPWAY_SECRET_<NAME> (upper case, '-' and '.' as '_').
//
// Errors name the reference and where its value was looked for, never a
// value: a reference written wrong may be a clear-text secret.
package secrets

import (
	"fmt"
	"os"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
)

// EnvPrefix starts the environment variable that holds secret:NAME.
const EnvPrefix = "SLIPWAY_SECRET_"

// EnvName is the environment variable secret:name is read from.
func EnvName(name string) string {
	return EnvPrefix + strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToUpper(name))
}

// Resolve returns the value ref refers to.
func Resolve(ref string) (drivers.Secret, error) {
	r, err := design.ParseSecretRef(ref)
	if err != nil {
		return drivers.Secret{}, err
	}
	switch r.Scheme {
	case "env":
		v, ok := os.LookupEnv(r.Name)
		if !ok {
			return drivers.Secret{}, fmt.Errorf("environment variable %s is not set", r.Name)
		}
		return drivers.NewSecret(v), nil
	case "file":
		b, err := os.ReadFile(r.Name)
		if err != nil {
			return drivers.Secret{}, fmt.Errorf("read secret file: %w", err)
		}
		return drivers.NewSecret(strings.TrimRight(string(b), "\r\n")), nil
	}
	env := EnvName(r.Name)
	v, ok := os.LookupEnv(env)
	if !ok {
		return drivers.Secret{}, fmt.Errorf("secret %s is not set (it is read from the environment variable %s)", r.Name, env)
	}
	return drivers.NewSecret(v), nil
}
