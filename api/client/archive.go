package client

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/design"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
)

// DesignArchive is a design's roots as the API takes them: a tar.gz in
// which each root is a top-level directory "00-<basename>",
// "01-<basename>"… (so the server layers them in the order given), holding
// the root's .yaml and .yml files (hidden directories skipped, as a local
// apply does).
type DesignArchive struct {
	Data []byte
	// Files maps each archive path to the local file it holds.
	Files map[string]string
}

// maxArchiveBytes bounds a design archive given as a root (compressed;
// the server bounds what it holds).
const maxArchiveBytes = 64 << 20

// Archive builds the design archive of roots in memory. One root that is
// a .tar.gz or .tgz file is sent as it is: each top-level directory in
// it is a root, as in `git archive --format=tar.gz HEAD site/`.
func Archive(roots []string) (*DesignArchive, error) {
	if len(roots) == 0 {
		return nil, fmt.Errorf("no design root given")
	}
	if len(roots) == 1 && isTarGz(roots[0]) {
		return readArchive(roots[0])
	}
	width := max(2, len(fmt.Sprint(len(roots)-1)))
	ar := &DesignArchive{Files: map[string]string{}}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for i, root := range roots {
		files, err := yamlingest.Files(root)
		if err != nil {
			return nil, err
		}
		abs, err := filepath.Abs(root)
		if err != nil {
			return nil, fmt.Errorf("design root %s: %w", root, err)
		}
		top := fmt.Sprintf("%0*d-%s", width, i, sanitize(filepath.Base(abs)))
		st, err := os.Stat(root)
		if err != nil {
			return nil, fmt.Errorf("design root %s: %w", root, err)
		}
		for _, f := range files {
			rel := filepath.Base(f)
			if st.IsDir() {
				if rel, err = filepath.Rel(root, f); err != nil {
					return nil, err
				}
			}
			name := top + "/" + filepath.ToSlash(rel)
			if err := addFile(tw, name, f); err != nil {
				return nil, err
			}
			ar.Files[name] = f
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	ar.Data = buf.Bytes()
	return ar, nil
}

// sanitize keeps a root's base name usable as one archive path element.
func sanitize(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < ' ' {
			return '_'
		}
		return r
	}, s)
	if s == "" || s == "." || s == ".." || s == string(filepath.Separator) {
		return "root"
	}
	return s
}

func addFile(tw *tar.Writer, name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("design file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("design file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("design file %s is not a regular file", path)
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: st.Size(), Mode: 0o644,
		ModTime: st.ModTime().Truncate(time.Second), Format: tar.FormatPAX}); err != nil {
		return err
	}
	if n, err := io.Copy(tw, f); err != nil || n != st.Size() {
		if err == nil {
			err = fmt.Errorf("it changed while it was read")
		}
		return fmt.Errorf("design file %s: %w", path, err)
	}
	return nil
}

// Localize rewrites the findings' archive paths into the local files they
// came from.
func (a *DesignArchive) Localize(fs design.Findings) {
	if a == nil {
		return
	}
	for i := range fs {
		if local, ok := a.Files[fs[i].File]; ok {
			fs[i].File = local
		}
	}
}

// isTarGz says whether root names a .tar.gz or .tgz file.
func isTarGz(root string) bool {
	if !strings.HasSuffix(root, ".tar.gz") && !strings.HasSuffix(root, ".tgz") {
		return false
	}
	st, err := os.Stat(root)
	return err == nil && st.Mode().IsRegular()
}

// readArchive reads a design archive given as a root, within
// maxArchiveBytes.
func readArchive(path string) (*DesignArchive, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("design archive %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxArchiveBytes+1))
	if err != nil {
		return nil, fmt.Errorf("design archive %s: %w", path, err)
	}
	if len(b) > maxArchiveBytes {
		return nil, fmt.Errorf("design archive %s is over %d MiB", path, maxArchiveBytes>>20)
	}
	return &DesignArchive{Data: b, Files: map[string]string{}}, nil
}
