package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/ingest/archive"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
)

// Design upload defaults (Config.DesignBodyBytes, DesignParses, DesignWait).
const (
	DefaultDesignBodyBytes = 64 << 20
	DefaultDesignParses    = 2
	DefaultDesignWait      = 2 * time.Second
	// designRetryAfter is the Retry-After of a 503 when every parse slot
	// is taken: about what a large design takes to parse.
	designRetryAfter = 5
	uploadPrefix     = "slipway-design-"
)

// designDefaults fills cfg's unset upload settings.
func designDefaults(cfg *Config) {
	cfg.DesignLimits = cfg.DesignLimits.OrDefault()
	if cfg.DesignBodyBytes <= 0 {
		cfg.DesignBodyBytes = DefaultDesignBodyBytes
	}
	if cfg.DesignParses <= 0 {
		cfg.DesignParses = DefaultDesignParses
	}
	if cfg.DesignWait <= 0 {
		cfg.DesignWait = DefaultDesignWait
	}
}

// startUploads sets up the uploads and, in a configured upload directory,
// removes what a previous process left.
func (s *Server) startUploads() error {
	s.uploads = newUploads(s.cfg)
	if s.cfg.UploadDir == "" {
		return nil
	}
	if err := os.MkdirAll(s.cfg.UploadDir, 0o700); err != nil {
		return fmt.Errorf("upload directory %s: %w (set uploadDir)", s.cfg.UploadDir, err)
	}
	n, err := sweepUploads(s.cfg.UploadDir)
	if err != nil {
		return err
	}
	if n > 0 {
		s.log.Info().Int("removed", n).Str("dir", s.cfg.UploadDir).Msg("removed uploads a previous process left")
	}
	return nil
}

// uploads bounds the design uploads read and parsed at once, and the
// plans of POST /designs/plan made at once (plan.go).
type uploads struct {
	slots chan struct{}
	plans chan struct{}
	wait  time.Duration
	dir   string
	lim   archive.Limits
}

func newUploads(cfg Config) *uploads {
	dir := cfg.UploadDir
	if dir == "" {
		dir = os.TempDir()
	}
	return &uploads{slots: make(chan struct{}, cfg.DesignParses), plans: make(chan struct{}, planSlots), wait: cfg.DesignWait, dir: dir,
		lim: cfg.DesignLimits.OrDefault()}
}

// acquire takes a parse slot, waiting at most u.wait; every slot taken
// is a 503 with Retry-After, as the server, not this caller, is busy.
func (u *uploads) acquire(c echo.Context) error {
	err := u.take(c.Request().Context())
	if err != nil {
		c.Response().Header().Set("Retry-After", strconv.Itoa(designRetryAfter))
	}
	return err
}

// take takes a parse slot, waiting at most u.wait.
func (u *uploads) take(ctx context.Context) error {
	t := time.NewTimer(u.wait)
	defer t.Stop()
	select {
	case u.slots <- struct{}{}:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	return problem(http.StatusServiceUnavailable, fmt.Sprintf("%d designs are being validated: try again in %d seconds", cap(u.slots), designRetryAfter))
}

func (u *uploads) release() { <-u.slots }

// sweepUploads removes what a previous process left in the upload
// directory (a crash mid-upload) and returns how many it removed.
func sweepUploads(dir string) (int, error) {
	left, err := filepath.Glob(filepath.Join(dir, uploadPrefix+"*"))
	if err != nil {
		return 0, err
	}
	for _, p := range left {
		if err := os.RemoveAll(p); err != nil {
			return 0, fmt.Errorf("remove stale upload %s: %w", p, err)
		}
	}
	return len(left), nil
}

// loadUpload reads the request's design, within a parse slot and the
// limits, into a directory of its own and builds it with the design's
// API-managed layer over it. done removes the directory and frees the
// slot; on an error or a panic that has already happened. Findings name
// files as they are in the upload.
func (s *Server) loadUpload(c echo.Context) (*upload, func(), error) {
	if err := s.uploads.acquire(c); err != nil {
		s.log.Warn().Int("slots", cap(s.uploads.slots)).Str("request_id", c.Response().Header().Get(echo.HeaderXRequestID)).
			Msg("design upload refused: every parse slot is taken (designParses)")
		return nil, nil, err
	}
	var dir string
	cleanup := func() {
		if dir != "" {
			if err := os.RemoveAll(dir); err != nil {
				s.log.Warn().Err(err).Str("dir", dir).Msg("removing an upload")
			}
		}
		s.uploads.release()
	}
	ok := false
	defer func() {
		if !ok {
			cleanup()
		}
	}()
	dir, err := os.MkdirTemp(s.uploads.dir, uploadPrefix)
	if err != nil {
		dir = ""
		return nil, nil, err
	}
	res, roots, err := s.readUpload(c, dir)
	if err != nil {
		return nil, nil, uploadError(err, dir, s.uploads.lim)
	}
	up := &upload{dir: dir, roots: roots, res: res}
	if err := s.buildUpload(c.Request().Context(), up); err != nil {
		return nil, nil, err
	}
	ok = true
	return up, cleanup, nil
}

// readUpload loads a tar.gz of the roots (each top-level directory a root,
// in name order, later ones layered over earlier ones) or a JSON array of
// documents.
func (s *Server) readUpload(c echo.Context, dir string) (*yamlingest.Result, []string, error) {
	ctx, body := c.Request().Context(), c.Request().Body
	ct := c.Request().Header.Get(echo.HeaderContentType)
	switch {
	case strings.Contains(ct, "gzip") || strings.Contains(ct, "tar"):
		res, u, err := archive.Load(ctx, body, dir, s.uploads.lim)
		if err != nil {
			return nil, nil, err
		}
		return res, u.Roots, nil
	case strings.HasPrefix(ct, echo.MIMEApplicationJSON):
		if err := documents(body, dir, s.uploads.lim.FileBytes); err != nil {
			return nil, nil, err
		}
		res, err := yamlingest.LoadLimited(ctx, []string{dir}, s.uploads.lim.Limits)
		return res, []string{dir}, err
	}
	return nil, nil, problem(http.StatusUnsupportedMediaType, "send the design as application/gzip (a tar.gz of the roots) or application/json (an array of documents)")
}

// documentsFile is the file a JSON upload becomes.
const documentsFile = "documents.yaml"

// documents writes a JSON array of documents as one YAML file, a document
// at a time (JSON is YAML; each document on its own lines keeps line
// numbers meaningful), reading at most limit+1 bytes of the body.
func documents(body io.Reader, dir string, limit int64) error {
	lr := &io.LimitedReader{R: body, N: limit + 1}
	dec := json.NewDecoder(lr)
	f, err := os.OpenFile(filepath.Join(dir, documentsFile), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	n, err := writeDocuments(dec, w)
	switch {
	case lr.N <= 0:
		return &yamlingest.LimitError{File: documentsFile, Limit: limit}
	case err != nil:
		return err
	case n == 0:
		return problem(http.StatusBadRequest, "the array holds no documents")
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func writeDocuments(dec *json.Decoder, w io.Writer) (int, error) {
	notArray := func(err error) error {
		if errors.As(err, new(*http.MaxBytesError)) {
			return err
		}
		return problem(http.StatusBadRequest, "the body is not a JSON array of documents: "+err.Error())
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return 0, notArray(fmt.Errorf("it does not start with ["))
	}
	n := 0
	for ; dec.More(); n++ {
		var doc json.RawMessage
		if err := dec.Decode(&doc); err != nil {
			return n, notArray(err)
		}
		if len(doc) == 0 || doc[0] != '{' {
			return n, problem(http.StatusBadRequest, fmt.Sprintf("document %d is not a JSON object", n))
		}
		if _, err := fmt.Fprintf(w, "---\n%s\n", doc); err != nil {
			return n, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return n, notArray(err)
	}
	return n, nil
}

// uploadError turns what reading an upload returned into a problem: 413
// for a limit (the body's, a file's, the design's, the archive's), 400 for
// the rest; paths are named as in the upload.
func uploadError(err error, dir string, lim archive.Limits) error {
	var pe *problemError
	var mbe *http.MaxBytesError
	var le *yamlingest.LimitError
	clean := func(s string) string { return strings.ReplaceAll(s, dir+string(filepath.Separator), "") }
	switch {
	case errors.As(err, &pe):
		return err
	case errors.As(err, &mbe):
		return problem(http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is over the limit of %d bytes for a design upload: "+
			"send a tar.gz of the roots (their YAML may be %d bytes in all)", mbe.Limit, lim.DesignBytes))
	case errors.As(err, &le) && le.Design:
		return problem(http.StatusRequestEntityTooLarge, clean(le.Error())+": split the design or ask the operator to raise designMaxBytes (docs/api.md)")
	case errors.As(err, &le):
		return problem(http.StatusRequestEntityTooLarge, clean(le.Error())+": split the file or ask the operator to raise designMaxFileBytes (docs/api.md)")
	case errors.Is(err, archive.ErrTooManyFiles):
		return problem(http.StatusRequestEntityTooLarge, err.Error()+": send only the design's files, or ask the operator to raise designMaxFiles")
	case errors.Is(err, archive.ErrTooLarge):
		return problem(http.StatusRequestEntityTooLarge, err.Error()+": send a tar.gz of the design's .yaml files only")
	case errors.Is(err, context.Canceled):
		return problem(http.StatusBadRequest, "the upload was interrupted")
	}
	return problem(http.StatusBadRequest, clean(err.Error()))
}
