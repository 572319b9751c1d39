package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"

	"github.com/slipway-dev/slipway/internal/localtrust"
)

// Plugins run with the orchestrator's privileges (often root), so the
// registry starts only plugins no other user could have written: the
// directory and the file owned by root or by the orchestrator's user,
// neither writable by group or others (a sticky directory like /tmp is
// refused too: anyone may add a file to it). A pinned plugin must also
// have its pinned SHA-256.

// maxPluginBytes bounds the file a pin is checked against.
const maxPluginBytes = 1 << 30

const pluginFix = "install plugins as root (or the orchestrator's user) with mode 0755 in a directory only they can write, or give another --plugin-dir"

var (
	dirRule = localtrust.Rule{What: "plugin directory", Type: fs.ModeDir, Deny: 0o022, RootOwned: true, Fix: pluginFix}
	// fileRule: NoSticky — the plugin's own directory must not be
	// writable by others at all.
	fileRule = localtrust.Rule{What: "plugin", Deny: 0o022, RootOwned: true, NoSticky: true, Fix: pluginFix}
)

// checkDir checks the plugin directory (and the ones above it).
func checkDir(dir string) error {
	return localtrust.Check(dir, dirRule)
}

// checkPlugin checks the plugin file at path, and its SHA-256 when it is
// pinned.
func checkPlugin(path string, pin []byte) error {
	if err := localtrust.Check(path, fileRule); err != nil {
		return err
	}
	if pin == nil {
		return nil
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return fmt.Errorf("refusing the plugin %s: %w", path, err)
	}
	if !bytes.Equal(sum, pin) {
		return fmt.Errorf("refusing the plugin %s: its SHA-256 is %x, not the pinned %x: install the plugin that was pinned, or pin this one (sha256sum %s) if you trust it",
			path, sum, pin, path)
	}
	return nil
}

// fileSHA256 is the SHA-256 of the file at path, at most maxPluginBytes.
func fileSHA256(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, maxPluginBytes+1))
	if err != nil {
		return nil, err
	}
	if n > maxPluginBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxPluginBytes)
	}
	return h.Sum(nil), nil
}

// parsePins decodes the pins: file name -> SHA-256 in hex.
func parsePins(pins map[string]string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(pins))
	for file, hexSum := range pins {
		if !pluginNameRE.MatchString(file) {
			return nil, fmt.Errorf("plugin pin %q: name the plugin's file, slipway-driver-<oob|server|network>-<name>", file)
		}
		sum, err := hex.DecodeString(hexSum)
		if err != nil || len(sum) != sha256.Size {
			return nil, fmt.Errorf("plugin pin %s: %q is not a SHA-256 (64 hexadecimal digits, as sha256sum prints)", file, hexSum)
		}
		out[file] = sum
	}
	return out, nil
}

// unpinned warns about pins whose plugin is not in the directory.
func (r *Registry) unpinned(pins map[string][]byte) {
	found := map[string]bool{}
	for _, f := range r.pinned {
		found[f] = true
	}
	var missing []string
	for f := range pins {
		if !found[f] {
			missing = append(missing, f)
		}
	}
	sort.Strings(missing)
	for _, f := range missing {
		r.log.Warn().Str("file", f).Msg("a plugin is pinned but not in the plugin directory")
	}
}
