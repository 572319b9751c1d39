// Package gitinfo tells which git commit a design root is at and whether
// the work tree has uncommitted changes under it.
package gitinfo

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Info is the git state of a set of design roots.
type Info struct {
	Commit string // HEAD commit, "" when the roots are not in a git work tree
	Dirty  bool   // uncommitted or untracked changes under the roots
}

// Of returns the git state of roots, taking the work tree of the first
// root. It returns a zero Info when git is missing or the roots are not in a
// work tree: provenance is best-effort and never blocks an apply.
func Of(ctx context.Context, roots []string) Info {
	if len(roots) == 0 {
		return Info{}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	dir := roots[0]
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if !isDir(dir) {
		dir = filepath.Dir(dir)
	}
	commit, err := git(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return Info{}
	}
	args := []string{"status", "--porcelain", "--"}
	for _, r := range roots {
		if abs, err := filepath.Abs(r); err == nil {
			args = append(args, abs)
		}
	}
	status, err := git(ctx, dir, args...)
	return Info{Commit: commit, Dirty: err != nil || status != ""}
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}
