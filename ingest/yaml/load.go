package yaml

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/slipway-dev/slipway/design"
)

// Result is what Load read.
type Result struct {
	Sources  []design.Source
	Findings []design.Finding // malformed YAML and unconvertible documents
	Files    []string         // every file read, in order
}

// Files lists the .yaml and .yml files of one root: the file itself, or the
// files under a directory in lexical order, skipping hidden directories.
func Files(root string) ([]string, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("design root %s: %w", root, err)
	}
	if !st.IsDir() {
		return []string{root}, nil
	}
	var out []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext == ".yaml" || ext == ".yml" {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("design root %s: %w", root, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("design root %s holds no .yaml or .yml files", root)
	}
	sort.Strings(out)
	return out, nil
}

// Limits bound what Load reads; a zero field takes its default.
type Limits struct {
	FileBytes   int64 // one file
	DesignBytes int64 // every file of every root together
}

// The default limits: a generated 10,000-node site is 3.3 MB in 255 files
// (20 KB the largest); written as one file it would fit 2.5 times in
// DefaultFileBytes, and the whole site 5 times in DefaultDesignBytes.
const (
	DefaultFileBytes   = 8 << 20
	DefaultDesignBytes = 16 << 20
)

// OrDefault fills the zero fields with the defaults; a file may be no
// larger than the design.
func (l Limits) OrDefault() Limits {
	if l.FileBytes <= 0 {
		l.FileBytes = DefaultFileBytes
	}
	if l.DesignBytes <= 0 {
		l.DesignBytes = DefaultDesignBytes
	}
	l.FileBytes = min(l.FileBytes, l.DesignBytes)
	return l
}

// LimitError is a file, or the design, larger than its limit.
type LimitError struct {
	File   string // the file that passed the limit
	Limit  int64
	Design bool // the limit of the whole design, not of one file
}

func (e *LimitError) Error() string {
	if e.Design {
		return fmt.Sprintf("the design passes %d bytes, the limit for all its files together, at %s", e.Limit, e.File)
	}
	return fmt.Sprintf("design file %s is larger than %d bytes, the limit for one file", e.File, e.Limit)
}

// Load reads every root within the default limits (LoadLimited).
func Load(ctx context.Context, roots []string) (*Result, error) {
	return LoadLimited(ctx, roots, Limits{})
}

// LoadLimited reads every root, later roots layering over earlier ones.
// Files are parsed in parallel; the result is in root, file and document
// order. An error means a root or file could not be read at all, or one
// passed a limit (*LimitError: sizes are checked before reading and
// counted while reading, as a file can grow); problems inside the files
// are Findings.
func LoadLimited(ctx context.Context, roots []string, lim Limits) (*Result, error) {
	lim = lim.OrDefault()
	var jobs []loadJob
	res := &Result{}
	for i, r := range roots {
		files, err := Files(r)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			jobs = append(jobs, loadJob{i, f})
			res.Files = append(res.Files, f)
		}
	}
	if err := checkSizes(res.Files, lim); err != nil {
		return nil, err
	}
	out, err := parseAll(ctx, jobs, lim)
	if err != nil {
		return nil, err
	}
	for _, p := range out {
		if p.err != nil {
			return nil, p.err
		}
		res.Sources = append(res.Sources, p.sources...)
		res.Findings = append(res.Findings, p.findings...)
	}
	return res, nil
}

// loadJob is a file to parse and the index of the root it is under.
type loadJob struct {
	root int
	path string
}

// parsedFile is what parsing a loadJob gave.
type parsedFile struct {
	sources  []design.Source
	findings []design.Finding
	err      error
}

// parseAll reads and parses the files on GOMAXPROCS workers, all of them
// counting against lim's total; the results are in the jobs' order.
func parseAll(ctx context.Context, jobs []loadJob, lim Limits) ([]parsedFile, error) {
	out := make([]parsedFile, len(jobs))
	var total atomic.Int64
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(jobs)); w++ {
		wg.Go(func() {
			for i := range next {
				data, err := readFile(jobs[i].path, lim, &total)
				if err != nil {
					out[i].err = err
					continue
				}
				out[i].sources, out[i].findings = ParseFile(jobs[i].path, data, jobs[i].root)
			}
		})
	}
	var err error
feed:
	for i := range jobs {
		select {
		case next <- i:
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	return out, err
}

// checkSizes refuses, before anything is read, a file or a design whose
// files are larger than the limits say.
func checkSizes(files []string, lim Limits) error {
	var total int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return fmt.Errorf("read design file: %w", err)
		}
		if st.Size() > lim.FileBytes {
			return &LimitError{File: f, Limit: lim.FileBytes}
		}
		if total += st.Size(); total > lim.DesignBytes {
			return &LimitError{File: f, Limit: lim.DesignBytes, Design: true}
		}
	}
	return nil
}

// readFile reads at most the file's limit plus one byte, counting what it
// read into total.
func readFile(path string, lim Limits, total *atomic.Int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read design file: %w", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if st, err := f.Stat(); err == nil {
		buf.Grow(int(min(st.Size(), lim.FileBytes)) + 1)
	}
	if _, err := buf.ReadFrom(io.LimitReader(f, lim.FileBytes+1)); err != nil {
		return nil, fmt.Errorf("read design file: %w", err)
	}
	if int64(buf.Len()) > lim.FileBytes {
		return nil, &LimitError{File: path, Limit: lim.FileBytes}
	}
	if total.Add(int64(buf.Len())) > lim.DesignBytes {
		return nil, &LimitError{File: path, Limit: lim.DesignBytes, Design: true}
	}
	return buf.Bytes(), nil
}
