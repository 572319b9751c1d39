package api

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/design"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/statestore"
)

// Archive limits: a design is YAML text; these stop a hostile archive.
const (
	maxArchiveFiles = 20000
	maxArchiveBytes = 256 << 20 // uncompressed
)

// uploaded reads a design from the request into a temporary directory:
// a tar.gz of the roots (Content-Type application/gzip; each top-level
// directory of the archive is a root, in name order, later ones layered
// over earlier ones) or a JSON array of documents.
func uploaded(c echo.Context) (dir string, roots []string, err error) {
	dir, err = os.MkdirTemp("", "slipway-design-")
	if err != nil {
		return "", nil, err
	}
	ct := c.Request().Header.Get(echo.HeaderContentType)
	switch {
	case strings.Contains(ct, "gzip") || strings.Contains(ct, "tar"):
		roots, err = untar(c.Request().Body, dir)
	case strings.HasPrefix(ct, echo.MIMEApplicationJSON):
		roots, err = documents(c.Request().Body, dir)
	default:
		err = problem(http.StatusUnsupportedMediaType, "send the design as application/gzip (a tar.gz of the roots) or application/json (an array of documents)")
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, roots, nil
}

func untar(body io.Reader, dir string) ([]string, error) {
	zr, err := gzip.NewReader(body)
	if err != nil {
		return nil, problem(http.StatusBadRequest, "the body is not gzip: "+err.Error())
	}
	tr := tar.NewReader(zr)
	var total int64
	files := 0
	tops := map[string]bool{}
	flat := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, problem(http.StatusBadRequest, "the tar archive is damaged: "+err.Error())
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "." {
			continue
		}
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return nil, problem(http.StatusBadRequest, fmt.Sprintf("archive entry %q leaves the archive", h.Name))
		}
		switch h.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg:
		default:
			continue // links and devices are not design files
		}
		if files++; files > maxArchiveFiles {
			return nil, problem(http.StatusRequestEntityTooLarge, fmt.Sprintf("the archive has more than %d files", maxArchiveFiles))
		}
		if total += h.Size; total > maxArchiveBytes {
			return nil, problem(http.StatusRequestEntityTooLarge, fmt.Sprintf("the archive holds more than %d bytes", maxArchiveBytes))
		}
		top, _, nested := strings.Cut(name, "/")
		if nested {
			tops[top] = true
		} else {
			flat = true
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(f, io.LimitReader(tr, h.Size))
		f.Close()
		if err != nil {
			return nil, problem(http.StatusBadRequest, "reading the archive: "+err.Error())
		}
	}
	if files == 0 {
		return nil, problem(http.StatusBadRequest, "the archive holds no files")
	}
	if flat || len(tops) == 0 { // files at the top: the archive is one root
		return []string{dir}, nil
	}
	roots := make([]string, 0, len(tops))
	for t := range tops {
		roots = append(roots, filepath.Join(dir, t))
	}
	slices.Sort(roots)
	return roots, nil
}

func documents(body io.Reader, dir string) ([]string, error) {
	var docs []json.RawMessage
	dec := json.NewDecoder(body)
	if err := dec.Decode(&docs); err != nil {
		return nil, problem(http.StatusBadRequest, "the body is not a JSON array of documents: "+err.Error())
	}
	if len(docs) == 0 {
		return nil, problem(http.StatusBadRequest, "the array holds no documents")
	}
	var b strings.Builder
	for i, d := range docs {
		if len(d) == 0 || d[0] != '{' {
			return nil, problem(http.StatusBadRequest, fmt.Sprintf("document %d is not a JSON object", i))
		}
		b.WriteString("---\n")
		b.Write(d) // JSON is YAML: each document on its own lines keeps line numbers meaningful
		b.WriteString("\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "documents.yaml"), []byte(b.String()), 0o600); err != nil {
		return nil, err
	}
	return []string{dir}, nil
}

// build loads and validates an uploaded design; findings name files as
// they are in the archive.
func build(ctx context.Context, dir string, roots []string) (*design.Design, design.Findings, error) {
	res, err := yamlingest.Load(ctx, roots)
	if err != nil {
		return nil, nil, problem(http.StatusBadRequest, strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""))
	}
	d, fs := design.Build(res.Sources)
	all := append(design.Findings(res.Findings), fs...)
	for i := range all {
		all[i].File = strings.TrimPrefix(all[i].File, dir+string(filepath.Separator))
	}
	all.Sort()
	return d, all, nil
}

// validationResult is the answer of validate and of an invalid apply.
type validationResult struct {
	Valid    bool            `json:"valid"`
	Errors   int             `json:"errors"`
	Warnings int             `json:"warnings"`
	Nodes    int             `json:"nodes"`
	Findings design.Findings `json:"findings"`
}

func result(d *design.Design, fs design.Findings) validationResult {
	e, w := fs.Count()
	if fs == nil {
		fs = design.Findings{}
	}
	return validationResult{Valid: !fs.HasErrors(), Errors: e, Warnings: w, Nodes: len(d.Nodes), Findings: fs}
}

func (s *Server) validateDesign(c echo.Context) error {
	dir, roots, err := uploaded(c)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	d, fs, err := build(c.Request().Context(), dir, roots)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, result(d, fs))
}

// applied is the answer of a successful apply.
type applied struct {
	Revision string          `json:"revision"`
	Result   string          `json:"result"` // created | restored | unchanged
	Warnings design.Findings `json:"warnings,omitempty"`
	Diff     *design.Diff    `json:"diff,omitempty"`
}

func (s *Server) applyDesign(c echo.Context) error {
	ctx := c.Request().Context()
	dir, roots, err := uploaded(c)
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	d, fs, err := build(ctx, dir, roots)
	if err != nil {
		return err
	}
	if fs.HasErrors() {
		r := result(d, fs)
		return &problemError{status: http.StatusUnprocessableEntity, findings: r.Findings,
			detail: fmt.Sprintf("the design has %d errors and %d warnings: nothing applied; fix them and apply again", r.Errors, r.Warnings)}
	}
	body, id, err := d.Canonical()
	if err != nil {
		return err
	}
	var prev []byte
	if cur, err := s.cfg.Store.Current(ctx); err == nil {
		prev = cur.Design
	} else if !errors.Is(err, statestore.ErrNotFound) {
		return err
	}
	if err := s.checkBindings(c, prev, d); err != nil {
		return err
	}
	res, err := s.cfg.Store.PutRevision(ctx, statestore.Revision{ID: id, Created: time.Now(), Roots: []string{"(api upload by " + principal(c).Name + ")"},
		Counts: d.Counts(), Design: body})
	if err != nil {
		return err
	}
	out := applied{Revision: id, Result: res.String(), Warnings: fs}
	if res != statestore.Unchanged {
		if df, err := design.DiffCanonical(prev, body); err == nil {
			out.Diff = &df
		}
	}
	status := http.StatusCreated
	if res == statestore.Unchanged {
		status = http.StatusOK
	}
	return c.JSON(status, out)
}

// RevisionSummary is one entry of GET /designs: an apply of a revision.
type RevisionSummary struct {
	ID        string         `json:"id"`
	Created   time.Time      `json:"created"` // when the content was first stored
	Applied   time.Time      `json:"applied"` // when this apply happened
	Roots     []string       `json:"roots"`
	GitCommit string         `json:"gitCommit,omitempty"`
	GitDirty  bool           `json:"gitDirty,omitempty"`
	Counts    map[string]int `json:"counts"`
	Seq       uint64         `json:"seq"` // position in the history
}

func (s *Server) listDesigns(c echo.Context) error {
	h, err := s.cfg.Store.History(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]RevisionSummary, 0, len(h))
	for _, r := range h {
		out = append(out, RevisionSummary{ID: r.ID, Created: r.Created, Applied: r.Applied, Roots: r.Roots,
			GitCommit: r.GitCommit, GitDirty: r.GitDirty, Counts: r.Counts, Seq: r.Seq})
	}
	return c.JSON(http.StatusOK, out)
}

// revisionInfo is a revision without its design bytes.
type revisionInfo struct {
	ID        string         `json:"id"`
	Created   time.Time      `json:"created"`
	Roots     []string       `json:"roots"`
	GitCommit string         `json:"gitCommit,omitempty"`
	GitDirty  bool           `json:"gitDirty,omitempty"`
	Counts    map[string]int `json:"counts"`
	Nodes     []string       `json:"nodes"`
}

func (s *Server) getDesign(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := s.revision(ctx, c.Param("rev"))
	if err != nil {
		return err
	}
	d, err := s.design(ctx, r.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, revisionInfo{ID: r.ID, Created: r.Created, Roots: r.Roots, GitCommit: r.GitCommit,
		GitDirty: r.GitDirty, Counts: r.Counts, Nodes: d.NodeNames()})
}

func (s *Server) diffDesign(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := s.revision(ctx, c.Param("rev"))
	if err != nil {
		return err
	}
	var prev []byte
	if against := c.QueryParam("against"); against != "" {
		o, err := s.revision(ctx, against)
		if err != nil {
			return err
		}
		prev = o.Design
	} else {
		h, err := s.cfg.Store.History(ctx)
		if err != nil {
			return err
		}
		for i := len(h) - 1; i > 0; i-- {
			if h[i].ID == r.ID {
				o, err := s.cfg.Store.Revision(ctx, h[i-1].ID)
				if err != nil {
					return err
				}
				prev = o.Design
				break
			}
		}
	}
	df, err := design.DiffCanonical(prev, r.Design)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, df)
}

func (s *Server) designNode(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := s.revision(ctx, c.Param("rev"))
	if err != nil {
		return err
	}
	d, err := s.design(ctx, r.ID)
	if err != nil {
		return err
	}
	n, err := d.RenderNode(c.Param("name"))
	if err != nil {
		return problem(http.StatusNotFound, err.Error())
	}
	return c.JSON(http.StatusOK, n)
}

// revision resolves an ID, prefix or "current".
func (s *Server) revision(ctx context.Context, ref string) (statestore.Revision, error) {
	if ref == "current" {
		return s.cfg.Store.Current(ctx)
	}
	if _, err := statestore.NormalizeRef(ref); err != nil {
		return statestore.Revision{}, problem(http.StatusBadRequest, err.Error())
	}
	return s.cfg.Store.Revision(ctx, ref)
}

// currentID is the current revision's ID (without loading its design).
func (s *Server) currentID(ctx context.Context) (string, error) {
	return statestore.CurrentID(ctx, s.cfg.Store)
}

// design returns a revision's design, decoded once and cached.
func (s *Server) design(ctx context.Context, id string) (*design.Design, error) {
	s.mu.Lock()
	d := s.designs[id]
	s.mu.Unlock()
	if d != nil {
		return d, nil
	}
	r, err := s.cfg.Store.Revision(ctx, id)
	if err != nil {
		return nil, err
	}
	d = &design.Design{}
	if err := json.Unmarshal(r.Design, d); err != nil {
		return nil, fmt.Errorf("design revision %s: %w", r.ID, err)
	}
	s.mu.Lock()
	if len(s.designs) > 8 {
		clear(s.designs)
	}
	s.designs[r.ID] = d
	s.mu.Unlock()
	return d, nil
}
