package bolt

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/localtrust"
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

// TestOpenRefusesFilePlantedAfterCheck (issue 33 S2, re-audit): in a
// sticky directory others can write (/tmp), another user creates a file
// at the state file's path after Open has checked that none is there
// and before bbolt opens it. Open refuses it and writes nothing into it,
// and refuses likewise a file planted before a second Open.
func TestOpenRefusesFilePlantedAfterCheck(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the planted file is made with chown")
	}
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(shared, "slipway.db")
	plant := func(path string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
		if err != nil {
			t.Fatalf("plant: %v", err)
		}
		f.Close()
		if err := os.Chmod(path, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, 1001, 1001); err != nil {
			t.Fatal(err)
		}
	}
	SetBeforeOpen(plant)
	defer SetBeforeOpen(nil)
	s, err := Open(state, Options{})
	if err == nil {
		s.Close()
		t.Errorf("Open used a state file another user planted after its check")
	} else if !errors.Is(err, localtrust.ErrUntrusted) || !strings.Contains(err.Error(), "uid 1001") {
		t.Errorf("error %q, want a refusal naming the file's owner (uid 1001)", err)
	}
	fi, err := os.Stat(state)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 0 {
		t.Errorf("the planted file holds %d bytes of the database, want 0", fi.Size())
	}
}

// TestOpenThroughOwnLink: a state path that is the user's own symbolic
// link still opens its target (openState does not follow links itself).
func TestOpenThroughOwnLink(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target.db"), filepath.Join(dir, "link.db")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{target, link} {
		s, err := Open(p, Options{})
		if err != nil {
			t.Fatalf("open %s: %v", p, err)
		}
		s.Close()
	}
}
