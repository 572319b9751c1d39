// Package archive reads a design upload, a tar.gz of design roots, into a
// directory and loads it: within byte limits counted while decompressing
// (a tar header's size is not believed), writing only the .yaml and .yml
// regular files, and only under the directory.
package archive

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
)

// DefaultFiles is how many regular files an archive may hold by default
// (a generated 10,000-node site has 255).
const DefaultFiles = 20000

// Limits bound an upload: the YAML limits (per file, whole design) and
// the number of regular files. Zero fields take their defaults.
type Limits struct {
	yamlingest.Limits
	Files int
}

// OrDefault fills the zero fields with the defaults.
func (l Limits) OrDefault() Limits {
	l.Limits = l.Limits.OrDefault()
	if l.Files <= 0 {
		l.Files = DefaultFiles
	}
	return l
}

// The kinds of error Extract returns (errors.Is); the error also wraps
// what the body's reader returned, such as *http.MaxBytesError.
var (
	ErrTooLarge  = errors.New("the archive is too large")
	ErrMalformed = errors.New("the archive is not a tar.gz of design files")
	// ErrTooManyFiles is the files limit (and ErrTooLarge).
	ErrTooManyFiles = fmt.Errorf("%w: too many files", ErrTooLarge)
	// ErrStream is the cap on the decompressed stream (and ErrTooLarge).
	ErrStream = fmt.Errorf("%w: too much besides the design files", ErrTooLarge)
)

// Unpacked is what Extract wrote.
type Unpacked struct {
	Roots []string // each top-level directory, in name order; or dir itself
	Files int      // regular files in the archive
	Bytes int64    // bytes of file content read out of it
}

// Load extracts the tar.gz in body into dir and loads its roots within
// the same limits: what the control API does with an uploaded design.
func Load(ctx context.Context, body io.Reader, dir string, lim Limits) (*yamlingest.Result, *Unpacked, error) {
	lim = lim.OrDefault()
	u, err := Extract(body, dir, lim)
	if err != nil {
		return nil, u, err
	}
	res, err := yamlingest.LoadLimited(ctx, u.Roots, lim.Limits)
	return res, u, err
}

// Extract writes the archive's .yaml and .yml files under dir (which must
// exist). Each file's content may be at most lim.FileBytes, all of them
// together lim.DesignBytes: reading stops at the first byte past a limit.
// The decompressed stream as a whole, headers and skipped entries
// included, may be at most streamBytes(lim).
func Extract(body io.Reader, dir string, lim Limits) (*Unpacked, error) {
	lim = lim.OrDefault()
	zr, err := gzip.NewReader(body)
	if err != nil {
		return nil, fmt.Errorf("%w: the body is not gzip: %w", ErrMalformed, err)
	}
	x := &extractor{dir: dir, lim: lim, u: &Unpacked{}, tops: map[string]bool{}}
	stream := &capped{r: zr, left: streamBytes(lim)}
	tr := tar.NewReader(stream)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return x.u, x.damaged(stream, err)
		}
		if err := x.entry(h, tr); err != nil {
			if errors.Is(err, errStreamCap) {
				return x.u, x.damaged(stream, err)
			}
			return x.u, err
		}
	}
	return x.u, x.roots()
}

// streamBytes bounds the decompressed stream: the content limit plus 2
// KiB of headers and padding per file and 1 MiB for the rest.
func streamBytes(lim Limits) int64 {
	return lim.DesignBytes + int64(lim.Files)*2048 + 1<<20
}

type extractor struct {
	dir  string
	lim  Limits
	u    *Unpacked
	tops map[string]bool
	flat bool
}

func (x *extractor) damaged(stream *capped, err error) error {
	if stream.left < 0 {
		return fmt.Errorf("%w: it decompresses to more than %d bytes of tar stream", ErrStream, streamBytes(x.lim))
	}
	return fmt.Errorf("%w: the tar archive is damaged: %w", ErrMalformed, err)
}

// entry handles one archive entry: a YAML file is written, anything else
// is read through (and counted) without being written.
func (x *extractor) entry(h *tar.Header, r io.Reader) error {
	name := path.Clean(strings.TrimPrefix(h.Name, "./"))
	if name == "." {
		return x.drain(r, h.Name)
	}
	if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
		return fmt.Errorf("%w: entry %q leaves the archive", ErrMalformed, h.Name)
	}
	if h.Typeflag != tar.TypeReg {
		return x.drain(r, name) // directories, links and devices are not design files
	}
	if x.u.Files++; x.u.Files > x.lim.Files {
		return fmt.Errorf("%w: it holds more than %d", ErrTooManyFiles, x.lim.Files)
	}
	if ext := path.Ext(name); ext != ".yaml" && ext != ".yml" {
		return x.drain(r, name)
	}
	return x.write(name, r)
}

// copyLimited copies r to w, stopping one byte past the file's limit or
// the design's, and counts what it read.
func (x *extractor) copyLimited(w io.Writer, r io.Reader, name string) error {
	limit := min(x.lim.FileBytes, x.lim.DesignBytes-x.u.Bytes)
	n, err := io.Copy(w, io.LimitReader(r, limit+1))
	x.u.Bytes += n
	switch {
	case err != nil:
		return fmt.Errorf("%w: reading %s: %w", ErrMalformed, name, err)
	case n > x.lim.FileBytes:
		return fmt.Errorf("%w: %w", ErrTooLarge, &yamlingest.LimitError{File: name, Limit: x.lim.FileBytes})
	case x.u.Bytes > x.lim.DesignBytes:
		return fmt.Errorf("%w: %w", ErrTooLarge, &yamlingest.LimitError{File: name, Limit: x.lim.DesignBytes, Design: true})
	}
	return nil
}

func (x *extractor) drain(r io.Reader, name string) error { return x.copyLimited(io.Discard, r, name) }

func (x *extractor) write(name string, r io.Reader) error {
	dst := filepath.Join(x.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("%w: entry %q: %w", ErrMalformed, name, err)
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("%w: entry %q: %w", ErrMalformed, name, err)
	}
	err = x.copyLimited(f, r, name)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if top, _, nested := strings.Cut(name, "/"); nested {
		x.tops[top] = true
	} else {
		x.flat = true
	}
	return nil
}

// roots: each top-level directory is a root, in name order; files at the
// top make the whole archive one root.
func (x *extractor) roots() error {
	if !x.flat && len(x.tops) == 0 {
		return fmt.Errorf("%w: it holds no .yaml or .yml files", ErrMalformed)
	}
	if x.flat {
		x.u.Roots = []string{x.dir}
		return nil
	}
	for t := range x.tops {
		x.u.Roots = append(x.u.Roots, filepath.Join(x.dir, t))
	}
	slices.Sort(x.u.Roots)
	return nil
}

var errStreamCap = errors.New("decompressed stream over its limit")

// capped reads at most left bytes from r, then fails.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.left = -1
		return 0, errStreamCap
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
