package api

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/orchestrator"
)

// Consoles attaches to nodes' serial consoles (the engine).
type Consoles interface {
	Console(ctx context.Context, node, who string, readWrite bool, out io.Writer, attached func()) error
	ConsoleInput(ctx context.Context, node string, data []byte) error
}

// Console modes (?mode=).
const (
	consoleReadOnly  = "read-only"
	consoleReadWrite = "read-write"
)

var consoleModes = []string{consoleReadOnly, consoleReadWrite}

// consoleRoute names the console route in its attach record.
var consoleRoute = route{Method: http.MethodGet, Path: v1 + "/nodes/:name/console"}

// console streams a node's serial console as text/plain, flushed as the
// machine writes. The answer's status is sent once the BMC has accepted
// the console, so a refusal is a problem answer; the attach is audited
// when it happens and the detach when the stream ends (its lifetime, a
// revoked token, the client leaving, or the BMC ending it, which the
// stream's last line says).
func (s *Server) console(c echo.Context) error {
	if s.cfg.Consoles == nil {
		return problem(http.StatusNotImplemented, "this server has no engine to attach consoles with")
	}
	mode := cmp.Or(c.QueryParam("mode"), consoleReadOnly)
	if mode != consoleReadOnly && mode != consoleReadWrite {
		return problem(http.StatusBadRequest, fmt.Sprintf("mode %q: use read-only or read-write", mode))
	}
	name := c.Param("name")
	what := AuditWhat{Action: "node.console.attach", Verb: mode, Targets: []string{name}}
	auditWhat(c, what)
	ctx, cancel := context.WithCancel(c.Request().Context())
	defer cancel()
	w := c.Response()
	rc := http.NewResponseController(w)
	attached := func() {
		w.Header().Set(echo.HeaderContentType, "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		_ = rc.Flush()
		if err := s.writeAudit(c, auditRecord(c, &consoleRoute, nil)); err != nil {
			cancel() // no console without its audit record
		}
		what.Action = "node.console.detach"
		auditWhat(c, what) // the middleware's record, when the stream ends
		go s.watchStream(ctx, c, cancel)
	}
	err := s.cfg.Consoles.Console(ctx, name, who(c), mode == consoleReadWrite, &flushWriter{w: w, rc: rc}, attached)
	if !w.Committed {
		return err
	}
	if err != nil {
		_, _ = fmt.Fprintf(w, "\r\n[slipway: the console ended: %v]\r\n", err)
		_ = rc.Flush()
	}
	return nil
}

// watchStream cancels a stream when it reaches its lifetime or its token
// is no longer valid.
func (s *Server) watchStream(ctx context.Context, c echo.Context, cancel context.CancelFunc) {
	recheck := time.NewTicker(s.cfg.StreamRecheck)
	defer recheck.Stop()
	life := time.NewTimer(s.cfg.StreamMaxLifetime)
	defer life.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-life.C:
			cancel()
			return
		case <-recheck.C:
			if !s.tokenStillValid(c) {
				cancel()
				return
			}
		}
	}
}

// flushWriter writes a chunk of the stream and flushes it at once.
type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f *flushWriter) Write(p []byte) (int, error) {
	_ = f.rc.SetWriteDeadline(time.Now().Add(time.Minute))
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}

// consoleInput types at a node's console attached read-write. The audit
// record counts the characters; it never holds them (a password typed
// at a login prompt stays out of the log).
func (s *Server) consoleInput(c echo.Context) error {
	if s.cfg.Consoles == nil {
		return problem(http.StatusNotImplemented, "this server has no engine to attach consoles with")
	}
	name := c.Param("name")
	auditWhat(c, AuditWhat{Action: "node.console.input", Targets: []string{name}})
	var in apitypes.ConsoleInput
	if err := bindStrict(c, &in); err != nil {
		return err
	}
	if len(in.Data) == 0 || len(in.Data) > orchestrator.MaxConsoleInput {
		return problem(http.StatusBadRequest, fmt.Sprintf("data: %d bytes; send 1 to %d", len(in.Data), orchestrator.MaxConsoleInput))
	}
	c.Set(auditDetailKey, fmt.Sprintf("%d characters typed", len(in.Data)))
	if err := s.cfg.Consoles.ConsoleInput(c.Request().Context(), name, []byte(in.Data)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
