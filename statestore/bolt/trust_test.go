package bolt

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenRefusesUntrusted (issue 33 S2): Open refuses a state file
// another user owns (nothing is written to it) and creates none in a
// directory others can write.
func TestOpenRefusesUntrusted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the other user's state file is made with chown")
	}
	dir := t.TempDir()
	theirs := filepath.Join(dir, "theirs.db")
	s, err := Open(theirs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Chown(theirs, 1001, -1); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(theirs)
	if s, err := Open(theirs, Options{}); err == nil {
		s.Close()
		t.Errorf("another user's state file was opened")
	} else if !strings.Contains(err.Error(), "state file "+theirs+": owned by uid 1001") {
		t.Errorf("error %q, want one naming the file and its owner", err)
	}
	if after, _ := os.ReadFile(theirs); string(after) != string(before) {
		t.Errorf("another user's state file was written")
	}

	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(open, "slipway.db")
	if s, err := Open(state, Options{}); err == nil {
		s.Close()
		t.Errorf("a state file was made in a world-writable directory")
	} else if !strings.Contains(err.Error(), "has mode 0777") {
		t.Errorf("error %q, want one naming the directory's mode", err)
	}
	if _, err := os.Lstat(state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the state file exists: %v", err)
	}
}
