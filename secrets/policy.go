package secrets

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/powercreds"
	"github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/siteregistry"
)

// Policy limits the env: and file: references a [Resolver] reads. The
// server (`orchestrator serve`) resolves with one built from its
// configuration's secretRefs, empty unless the admin lists something: the
// design, which operators write, can then only name secret:NAME.
type Policy struct {
	// Env lists the environment variables env:VAR may name.
	Env []string
	// Files lists the absolute paths file:PATH may name: a file, or a
	// directory (the files under it, at any depth). Symbolic links are
	// followed before the check, so a link can't lead out.
	Files []string
	// Never lists files never read, even under an allowed directory: the
	// server's own key and token files and its state database.
	Never []string
}

var (
	// ErrNotAllowed is wrapped by the errors for env: and file:
	// references the resolver's Policy does not allow.
	ErrNotAllowed = errors.New("secret reference not allowed")
	// ErrServerKey is wrapped by the errors for references whose value is
	// one of the server's own keys (Resolver.ServerKeys).
	ErrServerKey = errors.New("secret reference resolves to a server key")
)

// reserved reports whether ref names the secret store's own key: the
// variable store.KeyEnv, which is also where the environment fallback of
// secret:key (SLIPWAY_SECRET_KEY) would look. It never resolves.
func reserved(ref design.SecretRef) error {
	switch {
	case ref.Scheme == "secret" && EnvName(ref.Name) == store.KeyEnv,
		ref.Scheme == "env" && ref.Name == store.KeyEnv:
		return fmt.Errorf("%s: the name is reserved: %s holds the secret store's own key, which is never handed out; store the secret under another name", ref, store.KeyEnv)
	case ref.Scheme == "secret" && siteregistry.ReservedSecret(strings.ToLower(ref.Name)):
		return fmt.Errorf("%s: the name is reserved: it holds a site record's API key, which only its site uses (a design's Site binds to its record by name)", ref)
	case ref.Scheme == "secret" && powercreds.Reserved(ref.Name):
		return fmt.Errorf("%s: the name is reserved: it holds a node's power-credential override, which only that node's BMC calls use", ref)
	}
	return nil
}

// allowEnv checks env:name against the policy.
func (p *Policy) allowEnv(name string) error {
	if p == nil || slices.Contains(p.Env, name) {
		return nil
	}
	return notAllowed("env:%s is not allowed on this server: add %s to secretRefs.env in serve's configuration (docs/operations.md), or store the value (`orchestrator secret set NAME`) and refer to it as secret:NAME", name, name)
}

// allowFile checks file:path against the policy and returns the path to
// read: path with its symbolic links resolved (path itself when it does
// not exist, to fail as not set).
func (p *Policy) allowFile(path string) (string, error) {
	real := realPath(path)
	if p == nil {
		return real, nil
	}
	for _, n := range p.Never {
		if real == realPath(n) || filepath.Clean(path) == filepath.Clean(n) {
			return "", notAllowed("file:%s is one of the server's own key, token or state files, never read as a secret", path)
		}
	}
	for _, a := range p.Files {
		ra := realPath(a)
		if real == ra || strings.HasPrefix(real, strings.TrimSuffix(ra, string(filepath.Separator))+string(filepath.Separator)) {
			return real, nil
		}
	}
	return "", notAllowed("file:%s is not allowed on this server: add the file or its directory to secretRefs.files in serve's configuration (docs/operations.md), or store the value (`orchestrator secret set NAME`) and refer to it as secret:NAME", path)
}

// notAllowed is an error wrapping ErrNotAllowed with a message of its own.
func notAllowed(format string, args ...any) error {
	return &notAllowedError{fmt.Sprintf(format, args...)}
}

type notAllowedError struct{ msg string }

func (e *notAllowedError) Error() string        { return e.msg }
func (e *notAllowedError) Is(target error) bool { return target == ErrNotAllowed }

// realPath is path cleaned, with its symbolic links resolved when it
// exists.
func realPath(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}

// serverKey reports whether v holds one of keys: the bytes, their
// base64 encoding (as in a key file or SLIPWAY_SECRET_KEY), anywhere in
// v. The comparisons of the whole value take constant time.
func serverKey(v string, keys [][]byte) bool {
	t := strings.TrimSpace(v)
	dec, _ := base64.StdEncoding.DecodeString(t)
	for _, k := range keys {
		enc := base64.StdEncoding.EncodeToString(k)
		if subtle.ConstantTimeCompare([]byte(t), k) == 1 || subtle.ConstantTimeCompare(dec, k) == 1 ||
			strings.Contains(v, enc) {
			return true
		}
	}
	return false
}
