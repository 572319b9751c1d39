package gitsync

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/ingest/archive"
)

// errTooLarge: the commit's design is over the design limits.
var errTooLarge = errors.New("over the design size limits")

// tree is the design directory of a commit: the tree-ish git reads.
func tree(commit, dir string) string {
	if d := strings.Trim(dir, "/"); d != "" {
		return commit + ":" + d
	}
	return commit + "^{tree}"
}

// checkSize lists the design directory of commit and checks it against
// lim before anything is extracted: files, bytes of each and in all.
func (r *repo) checkSize(ctx context.Context, commit, dir string, lim archive.Limits) error {
	out, err := r.git(ctx, "ls-tree", "-r", "-l", "-z", tree(commit, dir))
	if err != nil {
		return fmt.Errorf("commit %s has no directory %q (git.path): %w", short(commit), dir, err)
	}
	if len(out) >= maxGitOutput {
		return fmt.Errorf("commit %s: %w: the listing of %q alone is over %d bytes", short(commit), errTooLarge, dir, maxGitOutput)
	}
	files, total := 0, int64(0)
	for _, ent := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		meta, name, ok := strings.Cut(ent, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 {
			continue
		}
		if f[0] == "120000" || f[1] == "commit" {
			return fmt.Errorf("commit %s: %s is a symbolic link or a submodule: a design holds plain files only", short(commit), name)
		}
		size, _ := strconv.ParseInt(f[3], 10, 64)
		files++
		total += size
		switch {
		case files > lim.Files:
			return fmt.Errorf("commit %s: %w: more than %d files under %q (designMaxFiles)", short(commit), errTooLarge, lim.Files, dir)
		case size > lim.FileBytes:
			return fmt.Errorf("commit %s: %w: %s is %d bytes, over %d (designMaxFileBytes)", short(commit), errTooLarge, name, size, lim.FileBytes)
		case total > lim.DesignBytes:
			return fmt.Errorf("commit %s: %w: the files under %q are over %d bytes (designMaxBytes)", short(commit), errTooLarge, dir, lim.DesignBytes)
		}
	}
	if files == 0 {
		return fmt.Errorf("commit %s: no files under %q (git.path)", short(commit), dir)
	}
	return nil
}

// extract writes the design directory of commit into a new private
// directory under parent (removed by the caller), within lim.
func (r *repo) extract(ctx context.Context, commit, dir, parent string, lim archive.Limits) (string, error) {
	if err := r.checkSize(ctx, commit, dir, lim); err != nil {
		return "", err
	}
	out, err := os.MkdirTemp(parent, "design-")
	if err != nil {
		return "", fmt.Errorf("git source: extract directory: %w", err)
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- untar(pr, out, lim) }()
	gerr := r.gitTo(ctx, pw, "archive", "--format=tar", tree(commit, dir))
	pw.CloseWithError(gerr)
	uerr := <-done
	_ = pr.Close()
	if err := errors.Join(gerr, uerr); err != nil {
		_ = os.RemoveAll(out)
		return "", fmt.Errorf("commit %s: extract %q: %w", short(commit), dir, err)
	}
	return out, nil
}

// untar writes the regular files of a tar stream under dst, each within
// lim and all together too (whatever the listing said).
func untar(rd io.Reader, dst string, lim archive.Limits) error {
	tr := tar.NewReader(rd)
	total, files := int64(0), 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			_, _ = io.Copy(io.Discard, rd)
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(h.Name)
		if h.Typeflag != tar.TypeReg || strings.HasPrefix(name, "../") || path.IsAbs(name) {
			continue // directories are made as needed; git archive writes no other kind here
		}
		if files++; files > lim.Files || h.Size > lim.FileBytes || total+h.Size > lim.DesignBytes {
			return errTooLarge
		}
		total += h.Size
		if err := writeFile(filepath.Join(dst, filepath.FromSlash(name)), io.LimitReader(tr, h.Size)); err != nil {
			return err
		}
	}
}

func writeFile(p string, rd io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, rd)
	return errors.Join(err, f.Close())
}
