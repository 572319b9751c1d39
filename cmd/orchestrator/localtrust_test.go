package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	secretstore "github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/server"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// Issue 33 S2: a local user plants a socket, a state file or a key file
// where a victim's state lives; the CLI must use none of them. The tests
// run as root and plant with chown to another uid.

const plantedBy = 1001

// plantedValue is what the victim stores: the test looks for it in what
// the planted things received.
const plantedValue = "victim-secret-value-33"

func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: files owned by another user are planted with chown")
	}
}

// sharedDir is a directory like /tmp: sticky, writable by everyone.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return dir
}

// recorder is a planted HTTP listener on a Unix socket that keeps every
// byte it is sent.
type recorder struct {
	mu   sync.Mutex
	got  []byte
	srv  *http.Server
	done chan struct{}
}

func plantSocket(t *testing.T, path string, uid int, mode fs.FileMode) *recorder {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path, uid, -1); err != nil {
		t.Fatal(err)
	}
	r := &recorder{done: make(chan struct{})}
	r.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		r.mu.Lock()
		r.got = append(append(r.got, req.URL.Path...), b...)
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{}`))
	})}
	go func() { defer close(r.done); _ = r.srv.Serve(ln) }()
	t.Cleanup(func() { r.srv.Close(); <-r.done })
	return r
}

func (r *recorder) received() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.got)
}

func secretSet(t *testing.T, args ...string) (int, string) {
	t.Helper()
	code, _, errs := cliIn(t, strings.NewReader(plantedValue), append([]string{"secret", "set", "bmc-admin"}, args...)...)
	if strings.Contains(errs, plantedValue) {
		t.Errorf("the secret's value is in the error output: %s", errs)
	}
	return code, errs
}

// TestPlantedSocketGetsNoSecret: a socket another user planted beside the
// state (in a shared sticky directory) is refused before a byte is sent.
func TestPlantedSocketGetsNoSecret(t *testing.T) {
	asRoot(t)
	state := filepath.Join(sharedDir(t), "slipway.db")
	rec := plantSocket(t, server.LocalSocket(state), plantedBy, 0o777)
	code, errs := secretSet(t, "--state", state)
	if got := rec.received(); got != "" {
		t.Errorf("the planted socket received %q", got)
	}
	if code == 0 || !strings.Contains(errs, "owned by uid 1001, not you") || !strings.Contains(errs, server.LocalSocket(state)) {
		t.Errorf("exit %d, want a refusal naming the socket and its owner: %s", code, errs)
	} else {
		t.Logf("the refusal: %s", errs)
	}
	if _, err := os.Stat(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a state file was made beside the planted socket: %v", err)
	}
}

// TestGroupWritableSocketRefused: our own socket that others may write
// to is not trusted either.
func TestGroupWritableSocketRefused(t *testing.T) {
	asRoot(t)
	state := filepath.Join(t.TempDir(), "slipway.db")
	rec := plantSocket(t, server.LocalSocket(state), os.Geteuid(), 0o660)
	code, errs := secretSet(t, "--state", state)
	if got := rec.received(); got != "" {
		t.Errorf("the group-writable socket received %q", got)
	}
	if code == 0 || !strings.Contains(errs, "mode 0660") {
		t.Errorf("exit %d, want a refusal naming the mode: %s", code, errs)
	}
}

// fileSum is the SHA-256 of a file: what the test compares to see that
// nothing wrote it.
func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// plantState makes a valid state database at path owned by uid.
func plantState(t *testing.T, path string, uid int, mode fs.FileMode) {
	t.Helper()
	st, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path, uid, -1); err != nil {
		t.Fatal(err)
	}
}

// TestPlantedStateFileRefused: a state file another user planted (or one
// others may write) is not opened, and nothing is written to it.
func TestPlantedStateFileRefused(t *testing.T) {
	asRoot(t)
	for _, tc := range []struct {
		name string
		uid  int
		mode fs.FileMode
		link bool // state is a symbolic link the other user planted to the file
		want string
	}{
		{"planted by another user", plantedBy, 0o600, false, "owned by uid 1001, not you"},
		{"group-writable", os.Geteuid(), 0o620, false, "mode 0620"},
		{"symbolic link planted by another user", plantedBy, 0o600, true, "a symbolic link owned by uid 1001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := sharedDir(t)
			state := filepath.Join(dir, "slipway.db")
			if tc.link {
				theirs := filepath.Join(dir, "theirs.db")
				plantState(t, theirs, tc.uid, tc.mode)
				if err := os.Symlink(theirs, state); err != nil {
					t.Fatal(err)
				}
				if err := os.Lchown(state, tc.uid, -1); err != nil {
					t.Fatal(err)
				}
			} else {
				plantState(t, state, tc.uid, tc.mode)
			}
			before := fileSum(t, state)
			code, errs := secretSet(t, "--state", state)
			if code == 0 || !strings.Contains(errs, "state file "+state) || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, want a refusal naming the state file and %q: %s", code, tc.want, errs)
			}
			if fileSum(t, state) != before {
				t.Errorf("the planted state file was written")
			}
			if _, err := os.Lstat(filepath.Join(dir, secretstore.DefaultKeyFile)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a key file was made beside the planted state: %v", err)
			}
		})
	}
}

// plantKey writes a key the planting user knows, at path, owned by uid.
func plantKey(t *testing.T, path string, uid int) {
	t.Helper()
	if err := os.WriteFile(path, []byte("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path, uid, -1); err != nil {
		t.Fatal(err)
	}
}

// storedSecrets counts the secrets the state file holds, read from the
// file itself.
func storedSecrets(t *testing.T, state string) int {
	t.Helper()
	n := 0
	withState(t, state, func(st *bolt.Store) {
		recs, err := st.List(t.Context(), "secrets", "")
		if err != nil {
			t.Fatal(err)
		}
		n = len(recs)
	})
	return n
}

// TestPlantedKeyFileRefused: a 0600 key file owned by another user, or a
// symbolic link to one that another user planted, is not used to encrypt
// the secret: nothing is stored.
func TestPlantedKeyFileRefused(t *testing.T) {
	asRoot(t)
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, key string)
		want  string
	}{
		{"planted by another user", func(t *testing.T, key string) { plantKey(t, key, plantedBy) },
			"secret key file KEY: owned by uid 1001, not you"},
		{"symbolic link planted by another user", func(t *testing.T, key string) {
			theirs := filepath.Join(filepath.Dir(key), "theirs.key")
			plantKey(t, theirs, plantedBy)
			if err := os.Symlink(theirs, key); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(key, plantedBy, -1); err != nil {
				t.Fatal(err)
			}
		}, "secret key file KEY: a symbolic link owned by uid 1001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := sharedDir(t)
			state := filepath.Join(dir, "slipway.db")
			plantState(t, state, os.Geteuid(), 0o600)
			key := filepath.Join(dir, secretstore.DefaultKeyFile)
			tc.plant(t, key)
			code, errs := secretSet(t, "--state", state)
			want := strings.ReplaceAll(tc.want, "KEY", key)
			if code == 0 || !strings.Contains(errs, want) {
				t.Errorf("exit %d, want a refusal saying %q: %s", code, want, errs)
			}
			if n := storedSecrets(t, state); n != 0 {
				t.Errorf("the state holds %d secrets encrypted with the planted key", n)
			}
		})
	}
}

// TestListenLocalDirectory: serve (and an HA member's --data-dir) makes
// its socket only in a directory no other user can write, or a sticky one
// where no other user can replace it.
func TestListenLocalDirectory(t *testing.T) {
	asRoot(t)
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if ln, err := server.ListenLocal(filepath.Join(open, "slipway.sock")); err == nil {
		ln.Close()
		t.Errorf("a socket was made in a world-writable directory")
	} else if !strings.Contains(err.Error(), "directory "+open+" has mode 0777") {
		t.Errorf("error %q, want one naming the directory and its mode", err)
	}
	ln, err := server.ListenLocal(filepath.Join(sharedDir(t), "slipway.sock"))
	if err != nil {
		t.Fatalf("a sticky directory: %v", err)
	}
	ln.Close()
}

// TestServePluginPinsFromConfig: serve's configuration key pluginSHA256
// reaches the driver registry: a pin that is no SHA-256 stops serve
// before it listens, naming the pin.
func TestServePluginPinsFromConfig(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state", "slipway.db")
	if code, _, errs := cli(t, "apply", "--state", state, designtest.ExampleDir()); code != 0 {
		t.Fatalf("apply: exit %d: %s", code, errs)
	}
	plugins := filepath.Join(dir, "drivers")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte("pluginSHA256:\n  slipway-driver-network-x: abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	code := run(ctx, []string{"serve", "--config", cfg, "--state", state, "--listen", "127.0.0.1:0",
		"--introspection-listen", "127.0.0.1:0", "--plugin-dir", plugins}, &bytes.Buffer{}, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "plugin pin slipway-driver-network-x") {
		t.Errorf("serve with a bad pin: exit %d: %s", code, stderr.String())
	}
}

// TestDriversCommandPins: `drivers --config` applies the configuration's
// pins: a plugin with another SHA-256 is listed as refused and never
// started (a script that would leave a marker file).
func TestDriversCommandPins(t *testing.T) {
	dir := t.TempDir()
	plugins := filepath.Join(dir, "drivers")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "ran")
	if err := os.WriteFile(filepath.Join(plugins, "slipway-driver-network-x"), []byte("#!/bin/sh\ntouch '"+marker+"'\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "serve.yaml")
	pin := strings.Repeat("ab", 32)
	if err := os.WriteFile(cfg, []byte("pluginSHA256:\n  slipway-driver-network-x: "+pin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, "drivers", "--config", cfg, "--plugin-dir", plugins)
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the plugin with another SHA-256 than its pin was started")
	}
	if code != 0 || !strings.Contains(out, "not the pinned "+pin) {
		t.Errorf("exit %d, want the plugin listed as refused for its pin:\n%s%s", code, out, errs)
	}
}
