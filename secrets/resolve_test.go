package secrets

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/statestore/memory"
)

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	if err := os.WriteFile(file, []byte("from-file\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RESOLVE_TEST_PW", "from-env")
	t.Setenv("SLIPWAY_SECRET_BMC_ADMIN_V2", "from-store")
	for ref, want := range map[string]string{
		"env:RESOLVE_TEST_PW": "from-env",
		"file:" + file:        "from-file",
		"secret:bmc-admin.v2": "from-store",
		"secret:BMC_admin-v2": "from-store",
	} {
		got, err := Resolve(ref)
		if err != nil || got.Reveal() != want {
			t.Errorf("%s: %q, %v; want %q", ref, got.Reveal(), err, want)
		}
	}
	for ref, want := range map[string]string{
		"secret:missing":         "SLIPWAY_SECRET_MISSING",
		"env:RESOLVE_TEST_UNSET": "RESOLVE_TEST_UNSET is not set",
		"file:" + dir + "/none":  "read secret file",
		"hunter2":                "not a secret reference",
		"vault:x":                "unknown scheme",
		"file:relative":          "absolute path",
	} {
		_, err := Resolve(ref)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", ref, err, want)
		}
		// Values nowhere to be found are ErrNotSet; malformed references are not.
		if notSet := !strings.Contains(want, "reference") && !strings.Contains(want, "scheme") && !strings.Contains(want, "absolute"); errors.Is(err, ErrNotSet) != notSet {
			t.Errorf("%s: errors.Is(%v, ErrNotSet) = %t, want %t", ref, err, !notSet, notSet)
		}
	}
	if _, err := Resolve("hunter2"); err != nil && strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the error repeats a clear-text input: %v", err)
	}
	if got := EnvName("bmc-admin.v2"); got != "SLIPWAY_SECRET_BMC_ADMIN_V2" {
		t.Errorf("EnvName: %s", got)
	}
}

// fakeStore counts lookups and fails like a store with another key for
// the names in wrongKey.
type fakeStore struct {
	vals     map[string]string
	wrongKey map[string]bool
	asked    []string
}

func (f *fakeStore) Get(_ context.Context, name string) (drivers.Secret, error) {
	f.asked = append(f.asked, name)
	if f.wrongKey[name] {
		return drivers.Secret{}, fmt.Errorf("cannot decrypt secret %s: %w", name, store.ErrWrongKey)
	}
	v, ok := f.vals[name]
	if !ok {
		return drivers.Secret{}, fmt.Errorf("%w: %s", store.ErrNotFound, name)
	}
	return drivers.NewSecret(v), nil
}

func TestResolverStoreFirst(t *testing.T) {
	t.Setenv("SLIPWAY_SECRET_BOTH", "from-env")
	t.Setenv("SLIPWAY_SECRET_ENV_ONLY", "env-only")
	t.Setenv("SLIPWAY_SECRET_BROKEN", "env-but-broken-in-store")
	long := strings.Repeat("l", 64)
	t.Setenv(EnvName(long), "long-from-env")
	t.Setenv("RESOLVER_TEST_VAR", "plain-env")
	f := &fakeStore{
		vals:     map[string]string{"both": "from-store", "store-only": "store-only", "mixed.case": "lower"},
		wrongKey: map[string]bool{"broken": true},
	}
	r := Resolver{Store: f}
	for ref, want := range map[string]string{
		"secret:both":           "from-store",
		"secret:store-only":     "store-only",
		"secret:env-only":       "env-only",
		"secret:env_only":       "env-only",
		"secret:Mixed.Case":     "lower",
		"secret:" + long:        "long-from-env",
		"env:RESOLVER_TEST_VAR": "plain-env",
	} {
		got, err := r.ResolveContext(t.Context(), ref)
		if err != nil || got.Reveal() != want {
			t.Errorf("%s: %q, %v; want %q", ref, got.Reveal(), err, want)
		}
	}
	for _, n := range f.asked {
		if n == long || n == "RESOLVER_TEST_VAR" {
			t.Errorf("the store was asked for %q", n)
		}
	}
	if got, err := r.Resolve("secret:both"); err != nil || got.Reveal() != "from-store" {
		t.Errorf("Resolve: %q, %v", got.Reveal(), err)
	}

	// Another error of the store is not hidden by the environment.
	_, err := r.Resolve("secret:broken")
	if !errors.Is(err, store.ErrWrongKey) {
		t.Errorf("wrong key: %v, want the store's error", err)
	}
	if errors.Is(err, ErrNotSet) {
		t.Errorf("wrong key: %v says the secret is not set", err)
	}
	_, err = r.Resolve("secret:nowhere")
	if err == nil || !strings.Contains(err.Error(), "orchestrator secret set nowhere") || !strings.Contains(err.Error(), "SLIPWAY_SECRET_NOWHERE") {
		t.Errorf("missing everywhere: %v", err)
	}
	if !errors.Is(err, ErrNotSet) {
		t.Errorf("missing everywhere: %v does not wrap ErrNotSet", err)
	}
	if _, err := r.Resolve("hunter2"); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("clear text: %v", err)
	}
}

func TestResolverWithoutStore(t *testing.T) {
	t.Setenv("SLIPWAY_SECRET_X", "x")
	for _, ref := range []string{"secret:x", "secret:missing", "env:NOPE_NOT_SET", "vault:x"} {
		v1, err1 := Resolve(ref)
		v2, err2 := Resolver{}.Resolve(ref)
		if v1.Reveal() != v2.Reveal() || fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Errorf("%s: Resolve %q, %v; Resolver{} %q, %v", ref, v1.Reveal(), err1, v2.Reveal(), err2)
		}
	}
}

func TestResolverRealStore(t *testing.T) {
	ctx := t.Context()
	s, err := store.New(memory.New(), make([]byte, store.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "bmc", "stored-pw"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLIPWAY_SECRET_BMC", "env-pw")
	t.Setenv("SLIPWAY_SECRET_IPMI", "env-ipmi")
	r := Resolver{Store: s}
	if got, err := r.ResolveContext(ctx, "secret:bmc"); err != nil || got.Reveal() != "stored-pw" {
		t.Errorf("stored: %q, %v", got.Reveal(), err)
	}
	if got, err := r.ResolveContext(ctx, "secret:ipmi"); err != nil || got.Reveal() != "env-ipmi" {
		t.Errorf("fallback: %q, %v", got.Reveal(), err)
	}
}
