package gitinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestOf(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("git is required in CI")
		}
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	if err := os.MkdirAll(site, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := Of(t.Context(), []string{site}); got != (Info{}) {
		t.Errorf("outside a work tree: %+v, want zero", got)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(site, "a.yaml"), []byte("x: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "-qm", "init")
	clean := Of(t.Context(), []string{site})
	if len(clean.Commit) != 40 || clean.Dirty {
		t.Errorf("committed tree: %+v, want a commit and not dirty", clean)
	}
	if err := os.WriteFile(filepath.Join(dir, "elsewhere.txt"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Of(t.Context(), []string{site}); got.Dirty {
		t.Errorf("a change outside the roots made them dirty: %+v", got)
	}
	if err := os.WriteFile(filepath.Join(site, "a.yaml"), []byte("x: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Of(t.Context(), []string{filepath.Join(site, "a.yaml")}); !got.Dirty || got.Commit != clean.Commit {
		t.Errorf("changed file root: %+v, want dirty at %s", got, clean.Commit)
	}
}
