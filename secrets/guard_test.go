package secrets

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// TestMasterKeyNeverResolves: with the secret store's key in
// SLIPWAY_SECRET_KEY (which is also where the environment fallback of
// secret:key looks), no reference yields it: not secret:key in any case,
// not env:SLIPWAY_SECRET_KEY, not a file holding it, not a stored secret
// holding it.
func TestMasterKeyNeverResolves(t *testing.T) {
	key := make([]byte, store.KeySize)
	for i := range key {
		key[i] = byte(i + 7)
	}
	enc := base64.StdEncoding.EncodeToString(key)
	t.Setenv(store.KeyEnv, enc)
	s, err := store.New(memory.New(), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "copied", enc); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "copy.key")
	if err := os.WriteFile(keyFile, []byte(enc+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOLDS_THE_KEY", "SLIPWAY_SECRET_KEY="+enc)
	for _, r := range []Resolver{{}, {Store: s}, {Store: s, ServerKeys: [][]byte{key}}} {
		for _, ref := range []string{"secret:key", "secret:KEY", "secret:Key", "env:" + store.KeyEnv} {
			v, err := r.Resolve(ref)
			if err == nil || strings.Contains(v.Reveal(), enc) {
				t.Errorf("%s (store %t): resolved (%d bytes), want an error", ref, r.Store != nil, len(v.Reveal()))
				continue
			}
			if !strings.Contains(err.Error(), "reserved") || !strings.Contains(err.Error(), store.KeyEnv) || strings.Contains(err.Error(), enc) {
				t.Errorf("%s: %v: want it to say the name is reserved for %s", ref, err, store.KeyEnv)
			}
		}
	}
	// Copies of the key are refused by value when the resolver knows it.
	r := Resolver{Store: s, ServerKeys: [][]byte{key}}
	for _, ref := range []string{"secret:copied", "file:" + keyFile, "env:HOLDS_THE_KEY"} {
		v, err := r.Resolve(ref)
		if err == nil || v.Reveal() != "" {
			t.Errorf("%s: resolved (%d bytes), want an error", ref, len(v.Reveal()))
			continue
		}
		if !errors.Is(err, ErrServerKey) || strings.Contains(err.Error(), enc) || !strings.Contains(err.Error(), ref) {
			t.Errorf("%s: %v: want ErrServerKey naming the reference", ref, err)
		}
	}
	// Other secrets still resolve.
	t.Setenv("SLIPWAY_SECRET_KEYS", "not-the-key")
	if v, err := r.Resolve("secret:keys"); err != nil || v.Reveal() != "not-the-key" {
		t.Errorf("secret:keys: %q, %v", v.Reveal(), err)
	}
	if err := s.Put(t.Context(), "key", "x"); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("storing a secret named key: %v, want a refusal", err)
	}
}

// TestPolicy: with a policy, env: and file: resolve only from its lists;
// the refusal names the reference and the configuration key to allow it,
// and files in Never are never read.
func TestPolicy(t *testing.T) {
	dir := t.TempDir()
	allowed := filepath.Join(dir, "allowed")
	if err := os.MkdirAll(filepath.Join(allowed, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(p, v string) string {
		t.Helper()
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inDir := write(filepath.Join(allowed, "sub", "pw"), "in-dir")
	single := write(filepath.Join(dir, "single"), "single")
	other := write(filepath.Join(dir, "other"), "other")
	never := write(filepath.Join(allowed, "slipway.key"), "server-key")
	link := filepath.Join(allowed, "link")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	neverLink := filepath.Join(dir, "never-link")
	if err := os.Symlink(never, neverLink); err != nil {
		t.Fatal(err)
	}
	t.Setenv("POLICY_OK", "env-ok")
	t.Setenv("POLICY_NO", "env-no")
	r := Resolver{Policy: &Policy{Env: []string{"POLICY_OK"}, Files: []string{allowed + "/", single}, Never: []string{never}}}
	for ref, want := range map[string]string{
		"env:POLICY_OK":  "env-ok",
		"file:" + inDir:  "in-dir",
		"file:" + single: "single",
	} {
		if v, err := r.Resolve(ref); err != nil || v.Reveal() != want {
			t.Errorf("%s: %q, %v; want %q", ref, v.Reveal(), err, want)
		}
	}
	for ref, key := range map[string]string{
		"env:POLICY_NO":                      "secretRefs.env",
		"file:" + other:                      "secretRefs.files",
		"file:" + link:                       "secretRefs.files", // leads out of the allowed directory
		"file:" + allowed + "/../other":      "secretRefs.files",
		"file:" + never:                      "never read",
		"file:" + neverLink:                  "never read",
		"file:/etc/passwd":                   "secretRefs.files",
		"file:" + filepath.Join(dir, "none"): "secretRefs.files",
	} {
		v, err := r.Resolve(ref)
		if err == nil {
			t.Errorf("%s: resolved %q, want a refusal", ref, v.Reveal())
			continue
		}
		if !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), ref) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v: want ErrNotAllowed naming the reference and %q", ref, err, key)
		}
		if errors.Is(err, ErrNotSet) {
			t.Errorf("%s: %v says not set", ref, err)
		}
	}
	// Never holds even when the file's directory is allowed and no policy
	// lists anything else; an empty policy refuses every env: and file:.
	r = Resolver{Policy: &Policy{}}
	for _, ref := range []string{"env:POLICY_OK", "file:" + inDir} {
		if _, err := r.Resolve(ref); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("empty policy, %s: %v", ref, err)
		}
	}
	t.Setenv("SLIPWAY_SECRET_FROM_ENV", "fallback")
	if v, err := r.Resolve("secret:from-env"); err != nil || v.Reveal() != "fallback" {
		t.Errorf("secret: under a policy: %q, %v", v.Reveal(), err)
	}
}

// TestFileSizeBound: a file reference reads at most store.MaxValueLen bytes.
func TestFileSizeBound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, []byte(strings.Repeat("x", store.MaxValueLen+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve("file:" + p); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("a file over the bound: %v", err)
	}
	if err := os.WriteFile(p, []byte(strings.Repeat("x", store.MaxValueLen)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := Resolve("file:" + p); err != nil || len(v.Reveal()) != store.MaxValueLen {
		t.Errorf("a file at the bound: %d bytes, %v", len(v.Reveal()), err)
	}
}
