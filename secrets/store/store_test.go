package store

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
	"github.com/slipway-dev/slipway/statestore/memory"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

func newStore(t *testing.T, r Records, key []byte) *Store {
	t.Helper()
	s, err := New(r, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, memory.New(), testKey(1))
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	now := t0
	s.now = func() time.Time { return now }

	values := map[string]string{
		"bmc-admin":   "hunter2",
		"maas.key":    "consumer:token:secret",
		"ssh_key":     "-----BEGIN KEY-----\nline two\n-----END KEY-----",
		"unicode":     "pässwörd ✓",
		"9":           strings.Repeat("x", MaxValueLen),
		"a-b.c_d-ef0": " spaces kept ",
	}
	for name, v := range values {
		if err := s.Put(ctx, name, v); err != nil {
			t.Fatalf("Put %s: %v", name, err)
		}
	}
	for name, v := range values {
		got, err := s.Get(ctx, name)
		if err != nil {
			t.Fatalf("Get %s: %v", name, err)
		}
		if got.Reveal() != v {
			t.Errorf("Get %s: got %d bytes, want %q", name, len(got.Reveal()), v[:min(len(v), 20)])
		}
		if got.String() != "[redacted]" {
			t.Errorf("Get %s: the secret prints as %q", name, got.String())
		}
	}

	// Replacing keeps Created and moves Updated.
	now = t0.Add(time.Hour)
	if err := s.Put(ctx, "bmc-admin", "hunter3"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, "bmc-admin"); got.Reveal() != "hunter3" {
		t.Errorf("after replace: %q", got.Reveal())
	}
	infos, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != len(values) {
		t.Fatalf("List: %d secrets, want %d", len(infos), len(values))
	}
	for i, in := range infos {
		if i > 0 && infos[i-1].Name >= in.Name {
			t.Errorf("List is not sorted by name: %v", infos)
		}
		wantUpdated := t0
		if in.Name == "bmc-admin" {
			wantUpdated = t0.Add(time.Hour)
		}
		if !in.Created.Equal(t0) || !in.Updated.Equal(wantUpdated) {
			t.Errorf("%s: created %v updated %v, want %v and %v", in.Name, in.Created, in.Updated, t0, wantUpdated)
		}
	}
	b, _ := json.Marshal(infos)
	for _, v := range append(mapValues(values), "hunter3") {
		if bytes.Contains(b, []byte(v)) {
			t.Errorf("List's JSON holds a value: %s", b)
		}
	}

	if err := s.Delete(ctx, "bmc-admin"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "bmc-admin"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "orchestrator secret set bmc-admin") {
		t.Errorf("Get after Delete: %v, want ErrNotFound with what to do", err)
	}
	if err := s.Delete(ctx, "bmc-admin"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete: %v, want ErrNotFound", err)
	}
}

func mapValues(m map[string]string) []string {
	var vs []string
	for _, v := range m {
		vs = append(vs, v)
	}
	return vs
}

func TestPutRejects(t *testing.T) {
	s := newStore(t, memory.New(), testKey(1))
	ctx := t.Context()
	if err := s.Put(ctx, "x", ""); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty value: %v", err)
	}
	long := strings.Repeat("y", MaxValueLen+1)
	if err := s.Put(ctx, "x", long); err == nil || strings.Contains(err.Error(), "yyyy") {
		t.Errorf("too long a value: %v", err)
	}
}

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"a", "0", "bmc-admin", "maas.api_key", strings.Repeat("a", 63)} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	s := newStore(t, memory.New(), testKey(1))
	for _, bad := range []string{"", "A", "Bmc", "-a", ".a", "_a", "a b", "a/b", "a:b", strings.Repeat("a", 64), "é"} {
		if err := ValidateName(bad); err == nil || !strings.Contains(err.Error(), "a-z, 0-9") {
			t.Errorf("%q: %v, want an error saying what to use", bad, err)
		}
		if err := s.Put(t.Context(), bad, "v"); err == nil {
			t.Errorf("Put %q accepted", bad)
		}
		if _, err := s.Get(t.Context(), bad); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("Get %q: %v, want a name error", bad, err)
		}
	}
}

// TestValuesNotStored scans every stored record, and the raw bytes of a
// bolt state file, for the values and the key.
func TestValuesNotStored(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := testKey(7)
	s := newStore(t, db, key)
	values := map[string]string{"one": "correct-horse-battery-staple", "two": "Tr0ub4dor&3-very-secret"}
	for n, v := range values {
		if err := s.Put(ctx, n, v); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := db.List(ctx, coll, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(values) {
		t.Fatalf("%d records, want %d", len(recs), len(values))
	}
	secretsToFind := [][]byte{key, []byte(base64.StdEncoding.EncodeToString(key))}
	for _, v := range values {
		secretsToFind = append(secretsToFind, []byte(v), []byte(base64.StdEncoding.EncodeToString([]byte(v))))
	}
	for _, r := range recs {
		for _, sec := range secretsToFind {
			if bytes.Contains(r.Value, sec) {
				t.Errorf("record %s holds a value or the key: %s", r.Key, r.Value)
			}
		}
		var rec map[string]any
		if err := json.Unmarshal(r.Value, &rec); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"key_id", "nonce", "ciphertext", "created", "updated"} {
			if _, ok := rec[f]; !ok {
				t.Errorf("record %s has no %s: %s", r.Key, f, r.Value)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range secretsToFind {
		if bytes.Contains(raw, sec) {
			t.Errorf("the state file holds a value or the key (%d bytes)", len(sec))
		}
	}
}

func TestWrongKey(t *testing.T) {
	ctx := t.Context()
	mem := memory.New()
	good := newStore(t, mem, testKey(1))
	if err := good.Put(ctx, "pw", "s3cret-value"); err != nil {
		t.Fatal(err)
	}
	bad := newStore(t, mem, testKey(2))
	_, err := bad.Get(ctx, "pw")
	if !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), "cannot decrypt secret pw: the key file is not the one it was stored with") {
		t.Errorf("Get with another key: %v", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error holds the value: %v", err)
	}
	// Storing another secret with the wrong key would mix keys: refused.
	err = bad.Put(ctx, "other", "v")
	if !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), "(pw)") {
		t.Errorf("Put with another key: %v", err)
	}
	// Replacing the secret itself is how a lost key is recovered from.
	if err := bad.Put(ctx, "pw", "new-value"); err != nil {
		t.Fatalf("replace with another key: %v", err)
	}
	if got, err := bad.Get(ctx, "pw"); err != nil || got.Reveal() != "new-value" {
		t.Errorf("after replace: %q, %v", got.Reveal(), err)
	}
	if _, err := good.Get(ctx, "pw"); !errors.Is(err, ErrWrongKey) {
		t.Errorf("old key after replace: %v", err)
	}

	// A record whose key ID was forged to match still does not decrypt.
	v, _ := mem.Get(ctx, coll, "pw")
	var rec record
	if err := json.Unmarshal(v, &rec); err != nil {
		t.Fatal(err)
	}
	rec.KeyID = good.keyID
	v, _ = json.Marshal(rec)
	if _, err := mem.Write(ctx, statestore.Put(coll, "pw", v)); err != nil {
		t.Fatal(err)
	}
	if _, err := good.Get(ctx, "pw"); err == nil || !strings.Contains(err.Error(), "cannot decrypt secret pw") {
		t.Errorf("forged key ID: %v", err)
	}
}

// TestNameBinding moves a ciphertext to another name: it must not decrypt.
func TestNameBinding(t *testing.T) {
	ctx := t.Context()
	mem := memory.New()
	s := newStore(t, mem, testKey(3))
	if err := s.Put(ctx, "admin-pw", "the-admin-password"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "guest-pw", "guest"); err != nil {
		t.Fatal(err)
	}
	v, err := mem.Get(ctx, coll, "admin-pw")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Write(ctx, statestore.Put(coll, "guest-pw", v)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "guest-pw")
	if err == nil {
		t.Fatalf("a ciphertext moved to another name decrypted: %d bytes", len(got.Reveal()))
	}
	if errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), "altered or copied") {
		t.Errorf("moved ciphertext: %v", err)
	}
	if got, err := s.Get(ctx, "admin-pw"); err != nil || got.Reveal() != "the-admin-password" {
		t.Errorf("the original: %v", err)
	}
}

func TestNoKey(t *testing.T) {
	ctx := t.Context()
	mem := memory.New()
	if err := newStore(t, mem, testKey(1)).Put(ctx, "a", "v"); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, mem, nil)
	if infos, err := s.List(ctx); err != nil || len(infos) != 1 || infos[0].Name != "a" {
		t.Errorf("List without a key: %v, %v", infos, err)
	}
	if _, err := s.Get(ctx, "a"); !errors.Is(err, ErrNoKey) {
		t.Errorf("Get without a key: %v", err)
	}
	if err := s.Put(ctx, "b", "v"); !errors.Is(err, ErrNoKey) {
		t.Errorf("Put without a key: %v", err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Errorf("Delete without a key: %v", err)
	}
	for _, n := range []int{0, 16, 31, 33} {
		if _, err := New(mem, make([]byte, n)); err == nil {
			t.Errorf("a %d-byte key was accepted", n)
		}
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etc", "slipway")
	path := filepath.Join(dir, DefaultKeyFile)
	k1, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(k1) != KeySize || bytes.Equal(k1, make([]byte, KeySize)) {
		t.Fatalf("key of %d bytes: %x", len(k1), k1)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v; want mode 0600", fi.Mode().Perm(), err)
	}
	if di, err := os.Stat(dir); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("key directory: %v, %v; want mode 0700", di.Mode().Perm(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".slipway-key-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	b, _ := os.ReadFile(path)
	if got, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b))); err != nil || !bytes.Equal(got, k1) {
		t.Errorf("the file does not hold the key in base64: %v", err)
	}
	k2, err := LoadOrCreateKey(path)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("second load: %v; same key: %v", err, bytes.Equal(k1, k2))
	}

	for _, mode := range []os.FileMode{0o640, 0o604, 0o660, 0o606} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := LoadOrCreateKey(path)
		if err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) {
			t.Errorf("mode %04o: %v, want an error saying chmod 600", mode, err)
		}
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	if k, err := LoadOrCreateKey(path); err != nil || !bytes.Equal(k, k1) {
		t.Errorf("mode 0400: %v", err)
	}

	bad := filepath.Join(dir, "bad.key")
	content := "not-a-key-but-maybe-a-password"
	if err := os.WriteFile(bad, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(bad); err == nil || strings.Contains(err.Error(), content) || !strings.Contains(err.Error(), "base64") {
		t.Errorf("bad key file: %v", err)
	}
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte(base64.StdEncoding.EncodeToString(make([]byte, 16))), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(short); err == nil {
		t.Error("a 16-byte key file was accepted")
	}
	if _, err := LoadOrCreateKey(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory as key file: %v", err)
	}
}

func TestLoadOrCreateKeyConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), DefaultKeyFile)
	keys := make(chan []byte, 8)
	for range cap(keys) {
		go func() {
			k, err := LoadOrCreateKey(path)
			if err != nil {
				t.Error(err)
			}
			keys <- k
		}()
	}
	first := <-keys
	for range cap(keys) - 1 {
		if k := <-keys; !bytes.Equal(k, first) {
			t.Error("concurrent first loads returned different keys")
		}
	}
}

func TestKeyFromEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), DefaultKeyFile)
	t.Setenv(KeyEnv, "")
	if _, ok, err := KeyFromEnv(); ok || err != nil {
		t.Errorf("unset: %v, %v", ok, err)
	}
	fileKey, src, err := LoadKey(path)
	if err != nil || src != path || len(fileKey) != KeySize {
		t.Fatalf("LoadKey without env: %v, %s", err, src)
	}

	envKey := testKey(9)
	t.Setenv(KeyEnv, base64.StdEncoding.EncodeToString(envKey))
	k, ok, err := KeyFromEnv()
	if !ok || err != nil || !bytes.Equal(k, envKey) {
		t.Errorf("KeyFromEnv: %v, %v", ok, err)
	}
	k, src, err = LoadKey(path)
	if err != nil || src != KeyEnv || !bytes.Equal(k, envKey) {
		t.Errorf("LoadKey with env: %v, %s; env key used: %v", err, src, bytes.Equal(k, envKey))
	}
	other := filepath.Join(t.TempDir(), "none.key")
	if _, _, err := LoadKey(other); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("LoadKey created a key file while %s was set: %v", KeyEnv, err)
	}

	for _, v := range []string{"hunter2-password", base64.StdEncoding.EncodeToString(make([]byte, 31))} {
		t.Setenv(KeyEnv, v)
		_, ok, err := KeyFromEnv()
		if !ok || err == nil || strings.Contains(err.Error(), v) || !strings.Contains(err.Error(), KeyEnv) {
			t.Errorf("invalid env key: %v, %v", ok, err)
		}
		if _, _, err := LoadKey(path); err == nil {
			t.Error("LoadKey accepted an invalid env key")
		}
	}
}

// Records must be satisfied by the state stores.
var (
	_ Records = (*memory.Store)(nil)
	_ Records = (*bolt.Store)(nil)
)
