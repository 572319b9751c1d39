package localtrust

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// other is the uid of another, unprivileged user (the tests chown to it,
// so they run as root).
const other = 1001

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: files owned by another user are made with chown")
	}
}

func write(t *testing.T, path string, mode fs.FileMode, uid int) {
	t.Helper()
	if err := os.WriteFile(path, []byte("x"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	if err := os.Lchown(path, uid, -1); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string, mode fs.FileMode, uid int) string {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path, uid, -1); err != nil {
		t.Fatal(err)
	}
	return path
}

var (
	state  = Rule{What: "state file", Deny: 0o022, Fix: "use a --state in a directory only you can write"}
	key    = Rule{What: "secret key file", Deny: 0o077}
	plugin = Rule{What: "plugin", Deny: 0o022, RootOwned: true, NoSticky: true}
)

func TestCheck(t *testing.T) {
	needRoot(t)
	base := t.TempDir()
	me := os.Geteuid()
	private := mkdir(t, filepath.Join(base, "private"), 0o700, me)
	shared := mkdir(t, filepath.Join(base, "shared"), 0o777|fs.ModeSticky, me)
	open := mkdir(t, filepath.Join(base, "open"), 0o777, me)
	theirs := mkdir(t, filepath.Join(base, "theirs"), 0o755, other)
	write(t, filepath.Join(private, "mine"), 0o600, me)
	write(t, filepath.Join(private, "planted"), 0o600, other)
	write(t, filepath.Join(private, "groupw"), 0o620, me)
	write(t, filepath.Join(private, "readable"), 0o640, me)
	write(t, filepath.Join(shared, "mine"), 0o600, me)
	write(t, filepath.Join(shared, "planted"), 0o600, other)
	write(t, filepath.Join(open, "mine"), 0o600, me)
	write(t, filepath.Join(theirs, "mine"), 0o600, me)
	mustLink(t, filepath.Join(private, "mine"), filepath.Join(private, "mylink"), me)
	mustLink(t, filepath.Join(private, "mine"), filepath.Join(private, "theirlink"), other)
	mustLink(t, filepath.Join(private, "planted"), filepath.Join(private, "tolanted"), me)

	for _, tc := range []struct {
		name string
		rule Rule
		path string
		want string // "" trusted, else a part of the refusal
	}{
		{"own file", state, "private/mine", ""},
		{"own key", key, "private/mine", ""},
		{"planted by another user", state, "private/planted", "owned by uid 1001, not you"},
		{"group-writable", state, "private/groupw", "mode 0620"},
		{"readable key", key, "private/readable", "mode 0640"},
		{"readable state", state, "private/readable", ""},
		{"own file in a sticky shared directory", state, "shared/mine", ""},
		{"planted in a sticky shared directory", state, "shared/planted", "owned by uid 1001"},
		{"own file in a world-writable directory", state, "open/mine", "directory " + open + " has mode 0777"},
		{"own file in another user's directory", state, "theirs/mine", "directory " + theirs + " is owned by uid 1001"},
		{"own symbolic link", state, "private/mylink", ""},
		{"symbolic link planted by another user", state, "private/theirlink", "symbolic link"},
		{"own link to a planted file", state, "private/tolanted", "owned by uid 1001"},
		{"not a socket", Rule{What: "local socket", Type: fs.ModeSocket, Deny: 0o022}, "private/mine", "not a socket"},
		{"plugin in a sticky directory", plugin, "shared/mine", "has mode 1777"},
		{"a sticky directory itself", Rule{What: "plugin directory", Type: fs.ModeDir, Deny: 0o022, RootOwned: true}, "shared", "mode 1777"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(filepath.Join(base, tc.path), tc.rule)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want == "":
			case err == nil:
				t.Errorf("trusted, want a refusal saying %q", tc.want)
			case !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), tc.want):
				t.Errorf("error %q, want ErrUntrusted saying %q", err, tc.want)
			}
		})
	}
	if err := Check(filepath.Join(private, "missing"), state); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	if err := CheckDir(open, state); !errors.Is(err, ErrUntrusted) {
		t.Errorf("CheckDir of a world-writable directory: %v", err)
	}
	if err := CheckDir(shared, state); err != nil {
		t.Errorf("CheckDir of a sticky directory: %v", err)
	}
}

// TestRootOwned: root's files are trusted by a rule that says so
// (plugins), not otherwise.
func TestRootOwned(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	write(t, f, 0o755, 0)
	if err := Check(f, plugin); err != nil {
		t.Errorf("root-owned plugin: %v", err)
	}
	if err := Check(f, state); err != nil { // the effective user is root here
		t.Errorf("own file: %v", err)
	}
}

func mustLink(t *testing.T, target, link string, uid int) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(link, uid, -1); err != nil {
		t.Fatal(err)
	}
}
