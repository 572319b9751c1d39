package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/slipway-dev/slipway/orchestrator/record"
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
		evs = []record.Event{}
	}
	return c.JSON(http.StatusOK, wireEvents(evs))
}

// streamEvents sends events as server-sent events (id: the sequence, so a
// client reconnects with Last-Event-ID and misses nothing). A stream ends
// after Config.StreamMaxLifetime, and within Config.StreamRecheck of its
// token no longer being valid (revoked); the client then reconnects from
// its last ID, or is refused.
func (s *Server) streamEvents(c echo.Context) error {
	since, err := streamSince(c)
	if err != nil {
		return err
	}
	task, node := c.QueryParam("task"), c.QueryParam("node")
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	ctx := c.Request().Context()
	poll := time.NewTicker(s.cfg.EventPoll)
	defer poll.Stop()
	recheck := time.NewTicker(s.cfg.StreamRecheck)
	defer recheck.Stop()
	life := time.NewTimer(s.cfg.StreamMaxLifetime)
	defer life.Stop()
	for {
		if since, err = s.sendEvents(c, rc, since, task, node); err != nil {
			return nil // the stream ends; the client reconnects from its last ID
		}
		select {
		case <-ctx.Done():
			return nil
		case <-life.C:
			endStream(w, rc, "the stream reached its maximum lifetime: reconnect with Last-Event-ID")
			return nil
		case <-recheck.C:
			if !s.tokenStillValid(c) {
				endStream(w, rc, "the token is no longer valid")
				return nil
			}
		case <-poll.C:
		}
	}
}

// streamSince is where a stream starts: Last-Event-ID, else ?since=.
func streamSince(c echo.Context) (uint64, error) {
	since, err := uintParam(c, "since")
	if err != nil {
		return 0, err
	}
	if id := c.Request().Header.Get("Last-Event-ID"); id != "" {
		if n, err := strconv.ParseUint(id, 10, 64); err == nil {
			since = n
		}
	}
	return since, nil
}

// sendEvents writes the events after since (or a keep-alive) and returns
// the last sequence sent.
func (s *Server) sendEvents(c echo.Context, rc *http.ResponseController, since uint64, task, node string) (uint64, error) {
	w := c.Response()
	_ = rc.SetWriteDeadline(time.Now().Add(time.Minute))
	evs, err := s.cfg.Engine.Events(c.Request().Context(), since, 1000, task, node)
	if err != nil {
		return since, err
	}
	for _, ev := range evs {
		b, _ := json.Marshal(wireEvent(ev))
		if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Kind, b); err != nil {
			return since, err
		}
		since = ev.Seq
	}
	if len(evs) == 0 {
		if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
			return since, err
		}
	}
	return since, rc.Flush()
}

// tokenStillValid checks the stream's token again: it must still verify,
// as the same token.
func (s *Server) tokenStillValid(c echo.Context) bool {
	tok, ok := bearerToken(c.Request())
	if !ok {
		return false
	}
	p, err := s.cfg.Authenticate(c.Request().Context(), tok)
	return err == nil && p.ID == principal(c).ID && p.Role.Allows(RoleViewer)
}

// endStream tells the client why the stream ends (an SSE comment).
func endStream(w io.Writer, rc *http.ResponseController, why string) {
	_, _ = fmt.Fprintf(w, ": %s\n\n", why)
	_ = rc.Flush()
}
