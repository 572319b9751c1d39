package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyFileTrust (issue 33 S2): a key file another user owns is not
// read, and no key is created in a directory others can write.
func TestKeyFileTrust(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the other user's key file is made with chown")
	}
	dir := t.TempDir()
	theirs := filepath.Join(dir, DefaultKeyFile)
	if err := os.WriteFile(theirs, []byte("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 1001, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(theirs); err == nil || !strings.Contains(err.Error(), "owned by uid 1001") {
		t.Errorf("another user's key file: %v, want a refusal naming its owner", err)
	}

	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(open, DefaultKeyFile)
	if _, err := LoadOrCreateKey(key); err == nil || !strings.Contains(err.Error(), "has mode 0777") {
		t.Errorf("a key in a world-writable directory: %v, want a refusal naming the directory's mode", err)
	}
	if _, err := os.Lstat(key); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a key file was created in the world-writable directory: %v", err)
	}
}
