package yaml

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

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

// Load reads every root, later roots layering over earlier ones. Files are
// parsed in parallel; the result is in root, file and document order. An
// error means a root or file could not be read at all; problems inside the
// files are Findings.
func Load(ctx context.Context, roots []string) (*Result, error) {
	type job struct {
		root int
		path string
	}
	var jobs []job
	res := &Result{}
	for i, r := range roots {
		files, err := Files(r)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			jobs = append(jobs, job{i, f})
			res.Files = append(res.Files, f)
		}
	}
	type parsed struct {
		sources  []design.Source
		findings []design.Finding
		err      error
	}
	out := make([]parsed, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(jobs)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				data, err := os.ReadFile(jobs[i].path)
				if err != nil {
					out[i].err = fmt.Errorf("read design file: %w", err)
					continue
				}
				out[i].sources, out[i].findings = ParseFile(jobs[i].path, data, jobs[i].root)
			}
		}()
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
