package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/orchestrator"
)

func uintParam(c echo.Context, name string) (uint64, error) {
	v := c.QueryParam(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, problem(http.StatusBadRequest, name+": want a sequence number")
	}
	return n, nil
}

func (s *Server) listEvents(c echo.Context) error {
	since, err := uintParam(c, "since")
	if err != nil {
		return err
	}
	_, limit, err := paging(c)
	if err != nil {
		return err
	}
	if c.QueryParam("limit") == "" {
		limit = 1000
	}
	evs, err := s.cfg.Engine.Events(c.Request().Context(), since, limit, c.QueryParam("task"), c.QueryParam("node"))
	if err != nil {
		return err
	}
	if evs == nil {
		evs = []orchestrator.Event{}
	}
	return c.JSON(http.StatusOK, evs)
}

// streamEvents sends events as server-sent events (id: the sequence, so a
// client reconnects with Last-Event-ID and misses nothing).
func (s *Server) streamEvents(c echo.Context) error {
	since, err := uintParam(c, "since")
	if err != nil {
		return err
	}
	if id := c.Request().Header.Get("Last-Event-ID"); id != "" {
		if n, err := strconv.ParseUint(id, 10, 64); err == nil {
			since = n
		}
	}
	task, node := c.QueryParam("task"), c.QueryParam("node")
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	ctx := c.Request().Context()
	t := time.NewTicker(s.cfg.EventPoll)
	defer t.Stop()
	for {
		_ = rc.SetWriteDeadline(time.Now().Add(time.Minute))
		evs, err := s.cfg.Engine.Events(ctx, since, 1000, task, node)
		if err != nil {
			return nil // the stream ends; the client reconnects from its last ID
		}
		for _, ev := range evs {
			b, _ := json.Marshal(ev)
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Kind, b); err != nil {
				return nil
			}
			since = ev.Seq
		}
		if len(evs) == 0 {
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return nil
			}
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (s *Server) listAudit(c echo.Context) error {
	since, err := uintParam(c, "since")
	if err != nil {
		return err
	}
	_, limit, err := paging(c)
	if err != nil {
		return err
	}
	if c.QueryParam("limit") == "" {
		limit = 1000
	}
	entries, err := s.cfg.Store.ReadLog(c.Request().Context(), logAudit, since, limit)
	if err != nil {
		return err
	}
	out := make([]AuditRecord, 0, len(entries))
	for _, e := range entries {
		var r AuditRecord
		if err := json.Unmarshal(e.Value, &r); err != nil {
			return fmt.Errorf("audit record %d: %w", e.Seq, err)
		}
		r.Seq = e.Seq
		out = append(out, r)
	}
	return c.JSON(http.StatusOK, out)
}
