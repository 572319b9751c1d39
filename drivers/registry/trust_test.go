package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/slipway-dev/slipway/drivers"
)

// Issue 33 S5: a plugin another user could write, or one whose SHA-256
// is not the pinned one, is never run. The plugins here are scripts that
// leave a marker file when they run: the marker is the test's evidence.

const otherUID = 1001

func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: plugins owned by another user are made with chown")
	}
}

// markerPlugin writes an executable at dir/name that creates marker when
// it runs, and returns its content.
func markerPlugin(t *testing.T, dir, name, marker string, mode fs.FileMode, uid int) []byte {
	t.Helper()
	body := []byte("#!/bin/sh\ntouch '" + marker + "'\nexit 3\n")
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, body, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path, uid, -1); err != nil {
		t.Fatal(err)
	}
	return body
}

// exercise lists the drivers (starting each plugin) and asks for the
// plugin driver "x" and uses it: everything that could run it.
func exercise(t *testing.T, r *Registry) error {
	t.Helper()
	r.List(t.Context(), true)
	n, err := r.Network("x", drivers.Config{})
	if err != nil {
		return err
	}
	_, err = n.ConfigurePorts(t.Context(), drivers.Node{NodeRef: drivers.NodeRef{Name: "n1"}}, drivers.PhaseProduction)
	return err
}

func ran(t *testing.T, marker string) bool {
	t.Helper()
	_, err := os.Stat(marker)
	return !errors.Is(err, fs.ErrNotExist)
}

func pluginDir(t *testing.T, mode fs.FileMode) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "drivers")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPluginDirWritableByOthers: a plugin directory others may write
// (0777, or 1777 like /tmp) is refused as a whole.
func TestPluginDirWritableByOthers(t *testing.T) {
	asRoot(t)
	for _, mode := range []fs.FileMode{0o777, 0o777 | fs.ModeSticky, 0o775} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := pluginDir(t, mode)
			marker := filepath.Join(t.TempDir(), "ran")
			markerPlugin(t, dir, "slipway-driver-network-x", marker, 0o755, otherUID)
			r, err := New(Builtins{}, Options{PluginDir: dir, Log: zerolog.Nop()})
			if err == nil {
				defer r.Close()
				_ = exercise(t, r)
				t.Errorf("a plugin directory with mode %s was used", mode)
			} else if !strings.Contains(err.Error(), "directory "+dir) || !strings.Contains(err.Error(), "chmod go-w") {
				t.Errorf("error %q, want one naming the directory and the fix", err)
			} else if want := map[fs.FileMode]string{0o777: "0777", 0o777 | fs.ModeSticky: "1777", 0o775: "0775"}[mode]; !strings.Contains(err.Error(), "mode "+want) {
				t.Errorf("error %q, want the mode as chmod takes it, %s", err, want)
			}
			if ran(t, marker) {
				t.Errorf("the plugin in a directory with mode %s ran", mode)
			}
		})
	}
}

// TestPluginFileNotTrusted: in a good directory, a plugin file owned by
// another (non-root) user, or one its group may write, is refused: listed
// with the reason, never started.
func TestPluginFileNotTrusted(t *testing.T) {
	asRoot(t)
	for _, tc := range []struct {
		name string
		mode fs.FileMode
		uid  int
		want string
	}{
		{"owned by another user", 0o755, otherUID, "owned by uid 1001"},
		{"group-writable", 0o775, 0, "mode 0775"},
		{"writable by others", 0o757, 0, "mode 0757"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := pluginDir(t, 0o755)
			marker := filepath.Join(t.TempDir(), "ran")
			markerPlugin(t, dir, "slipway-driver-network-x", marker, tc.mode, tc.uid)
			r, err := New(Builtins{}, Options{PluginDir: dir, Log: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			err = exercise(t, r)
			if ran(t, marker) {
				t.Fatalf("the untrusted plugin ran")
			}
			path := filepath.Join(dir, "slipway-driver-network-x")
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("using it: %v, want an error naming %s and %q", err, path, tc.want)
			}
			if drivers.Classify(err) != drivers.Permanent {
				t.Errorf("error class %v, want permanent", drivers.Classify(err))
			}
			if l := r.List(t.Context(), false); len(l) != 1 || !strings.Contains(l[0].Error, tc.want) {
				t.Errorf("List = %+v, want the plugin with the reason it is refused", l)
			}
		})
	}
}

// TestPluginPinned: a plugin whose SHA-256 is not the pinned one is
// refused; one that matches runs.
func TestPluginPinned(t *testing.T) {
	asRoot(t)
	dir := pluginDir(t, 0o755)
	marker := filepath.Join(t.TempDir(), "ran")
	body := markerPlugin(t, dir, "slipway-driver-network-x", marker, 0o755, 0)
	good := sha256.Sum256(body)
	bad := sha256.Sum256(append(body, '\n'))

	r, err := New(Builtins{}, Options{PluginDir: dir, Log: zerolog.Nop(),
		Pins: map[string]string{"slipway-driver-network-x": hex.EncodeToString(bad[:])}})
	if err != nil {
		t.Fatal(err)
	}
	err = exercise(t, r)
	r.Close()
	if ran(t, marker) {
		t.Fatalf("a plugin whose SHA-256 is not the pinned one ran")
	}
	if err == nil || !strings.Contains(err.Error(), "SHA-256") || !strings.Contains(err.Error(), hex.EncodeToString(good[:])) {
		t.Errorf("mismatch: %v, want an error naming the file's SHA-256", err)
	}

	r, err = New(Builtins{}, Options{PluginDir: dir, Log: zerolog.Nop(),
		Pins: map[string]string{"slipway-driver-network-x": strings.ToUpper(hex.EncodeToString(good[:]))}})
	if err != nil {
		t.Fatal(err)
	}
	_ = exercise(t, r) // the script is no plugin: it runs, then fails the handshake
	r.Close()
	if !ran(t, marker) {
		t.Errorf("the plugin matching its pin did not run")
	}
	// Replaced after the registry checked it: the start checks again.
	os.Remove(marker)
	r, err = New(Builtins{}, Options{PluginDir: dir, Log: zerolog.Nop(),
		Pins: map[string]string{"slipway-driver-network-x": hex.EncodeToString(good[:])}})
	if err != nil {
		t.Fatal(err)
	}
	markerPlugin(t, dir, "slipway-driver-network-x", marker, 0o755, 0)
	if err := os.WriteFile(filepath.Join(dir, "slipway-driver-network-x"), append(body, []byte("# changed\n")...), 0o755); err != nil {
		t.Fatal(err)
	}
	err = exercise(t, r)
	r.Close()
	if ran(t, marker) || err == nil || !strings.Contains(err.Error(), "no longer the pinned one") {
		t.Errorf("a pinned plugin replaced after the start: ran %v, error %v", ran(t, marker), err)
	}
	if _, err := New(Builtins{}, Options{PluginDir: dir, Pins: map[string]string{"slipway-driver-network-x": "abc"}}); err == nil {
		t.Errorf("a pin that is no SHA-256 must be an error")
	}
}
