package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	secretstore "github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/sim/lab"
)

// serveFor runs `serve` with args for at most d and returns its exit code
// and stderr: a server that starts is stopped after d (exit 0), one that
// can't start returns at once.
func serveFor(t *testing.T, d time.Duration, args ...string) (int, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	var stderr bytes.Buffer
	code := run(ctx, append([]string{"serve", "--listen", addr, "--introspection-listen", "127.0.0.1:0"}, args...), &bytes.Buffer{}, &stderr)
	return code, stderr.String()
}

// labSite applies the example site with a Site layer whose maas.apiKey is
// ref, and returns the state path and the lab's API key.
func labSite(t *testing.T, dir, ref string) (state, key string) {
	t.Helper()
	lb, err := lab.Start(t.Context(), lab.Config{Design: designtest.Example(t), TimeScale: 0.001, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lb.Close)
	info := lb.Info()
	layer := filepath.Join(dir, "layer")
	if err := os.MkdirAll(layer, 0o755); err != nil {
		t.Fatal(err)
	}
	body := "apiVersion: slipway/v1\nkind: Site\nmetadata: {name: lab}\nspec:\n  maas: {url: \"" + info.MAASURL + "\", apiKey: \"" + ref + "\"}\n"
	if err := os.WriteFile(filepath.Join(layer, "site.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	state = filepath.Join(dir, "state", "slipway.db")
	if code, out, errs := cli(t, "apply", "--state", state, exampleSite, layer); code != 0 {
		t.Fatalf("apply: %d %s %s", code, out, errs)
	}
	return state, info.APIKey
}

// TestServeSecretRefAllowList: under serve, a design's file: and env:
// references resolve only when serve's configuration lists them
// (secretRefs); the refusal names the reference and the key to set. The
// CLI's local commands still resolve them.
func TestServeSecretRefAllowList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "secrets", "maas.key")
	state, key := labSite(t, dir, "file:"+keyFile)
	if err := os.MkdirAll(filepath.Dir(keyFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	code, errs := serveFor(t, 20*time.Second, "--state", state, "--plugin-dir", dir)
	if code != exitUsage || !strings.Contains(errs, "file:"+keyFile) || !strings.Contains(errs, "secretRefs.files") {
		t.Fatalf("serve with a file: reference not allowed: exit %d, %s", code, errs)
	}
	if strings.Contains(errs, key) {
		t.Fatal("the key appears on stderr")
	}
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte("secretRefs:\n  files: [\""+filepath.Dir(keyFile)+"\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, errs := serveFor(t, 3*time.Second, "--config", cfg, "--state", state, "--plugin-dir", dir); code != 0 {
		t.Fatalf("serve with the file's directory allowed: exit %d, %s", code, errs)
	}
	// A local command runs with its user's rights: the reference resolves.
	if code, out, errs := cli(t, "sweep", "--state", state, "--plugin-dir", dir); code != 0 {
		t.Fatalf("local sweep: exit %d, %s %s", code, out, errs)
	}
	// The server's own files are never read, even when allowed.
	if err := os.WriteFile(cfg, []byte("secretRefs:\n  files: [\""+filepath.Dir(state)+"\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	state2, _ := labSite(t, filepath.Join(dir, "two"), "file:"+filepath.Join(filepath.Dir(state), secretstore.DefaultKeyFile))
	if err := os.Rename(state2, filepath.Join(filepath.Dir(state), "two.db")); err != nil {
		t.Fatal(err)
	}
	code, errs = serveFor(t, 20*time.Second, "--config", cfg, "--state", filepath.Join(filepath.Dir(state), "two.db"), "--plugin-dir", dir)
	if code != exitUsage || !strings.Contains(errs, "never read") {
		t.Fatalf("serve with maas.apiKey naming the secret key file: exit %d, %s", code, errs)
	}
}

// TestServeEnvRefAndMasterKey: env: references need secretRefs.env under
// serve; secret:key never yields the secret store's key given in
// SLIPWAY_SECRET_KEY.
func TestServeEnvRefAndMasterKey(t *testing.T) {
	dir := t.TempDir()
	state, key := labSite(t, dir, "env:SLIPWAY_TEST_MAAS_KEY")
	t.Setenv("SLIPWAY_TEST_MAAS_KEY", key)
	code, errs := serveFor(t, 20*time.Second, "--state", state, "--plugin-dir", dir)
	if code != exitUsage || !strings.Contains(errs, "env:SLIPWAY_TEST_MAAS_KEY") || !strings.Contains(errs, "secretRefs.env") {
		t.Fatalf("serve with an env: reference not allowed: exit %d, %s", code, errs)
	}
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte("secretRefs:\n  env: [SLIPWAY_TEST_MAAS_KEY]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, errs := serveFor(t, 3*time.Second, "--config", cfg, "--state", state, "--plugin-dir", dir); code != 0 {
		t.Fatalf("serve with the variable allowed: exit %d, %s", code, errs)
	}

	master := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, secretstore.KeySize))
	t.Setenv(secretstore.KeyEnv, master)
	dir2 := filepath.Join(dir, "two")
	state2, _ := labSite(t, dir2, "secret:key")
	code, errs = serveFor(t, 20*time.Second, "--state", state2, "--plugin-dir", dir)
	if code != exitUsage || !strings.Contains(errs, "reserved") || strings.Contains(errs, master) {
		t.Fatalf("serve with maas.apiKey secret:key: exit %d, %s", code, errs)
	}
	if code, out, errs := cli(t, "sweep", "--state", state2, "--plugin-dir", dir); code == 0 || !strings.Contains(errs, "reserved") {
		t.Fatalf("local sweep with maas.apiKey secret:key: exit %d, %s %s", code, out, errs)
	}
}
