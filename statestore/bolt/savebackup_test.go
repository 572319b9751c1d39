package bolt_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/statestore/bolt"
)

// TestSaveBackup: the archive is written whole (0600) and its manifest
// answered; an existing file is never replaced; a cut archive leaves
// nothing behind, neither the file nor a temporary one.
func TestSaveBackup(t *testing.T) {
	archive, _ := backupOf(t)
	want, _ := splitArchive(t, archive)
	dir := t.TempDir()
	file := filepath.Join(dir, "state.backup")
	m, err := bolt.SaveBackup(file, bytes.NewReader(archive))
	if err != nil || m.TxID != want.TxID || m.SchemaVersion != want.SchemaVersion {
		t.Fatalf("SaveBackup: %+v %v, want transaction %d", m, err, want.TxID)
	}
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, archive) {
		t.Fatalf("saved %d bytes (%v), want the %d of the archive", len(got), err, len(archive))
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v %v, want 0600", fi.Mode(), err)
	}

	if _, err := bolt.SaveBackup(file, bytes.NewReader([]byte("other"))); err == nil {
		t.Error("SaveBackup over an existing file: accepted")
	}
	if again, _ := os.ReadFile(file); !bytes.Equal(again, archive) {
		t.Error("SaveBackup over an existing file changed it")
	}

	cut := filepath.Join(dir, "cut.backup")
	if _, err := bolt.SaveBackup(cut, bytes.NewReader(archive[:len(archive)/2])); err == nil || !strings.Contains(err.Error(), "nothing was written to "+cut) {
		t.Errorf("a cut archive: %v", err)
	}
	if _, err := os.Lstat(cut); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a cut archive left %s: %v", cut, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".slipway-backup-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
