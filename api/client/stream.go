package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// ErrStop, returned by a StreamEvents callback, ends the stream without
// an error.
var ErrStop = errors.New("stop the stream")

// maxReconnectWait caps the wait between two attempts to reconnect.
const maxReconnectWait = 10 * time.Second

// StreamEvents calls fn with each event after sequence number since (0:
// from the start), of one task and/or node when given, as the server
// sends them (server-sent events), until ctx ends or fn returns an error.
// A dropped or silent connection is opened again with Last-Event-ID, so no
// event is missed or repeated. It returns ctx's error when ctx ends, nil
// when fn returns ErrStop, fn's error otherwise, and a *ProblemError when
// the server refuses the stream (a bad token, a bad query).
func (c *Client) StreamEvents(ctx context.Context, since uint64, task, node string, fn func(apitypes.Event) error) error {
	last := since
	base := c.reconnect // the server may ask for another with retry:
	wait := base
	for {
		got, err := c.streamOnce(ctx, last, task, node, func(ev apitypes.Event) error {
			if ev.Seq != 0 && ev.Seq <= last {
				return nil // sent again after a reconnect
			}
			if err := fn(ev); err != nil {
				return err
			}
			if ev.Seq > last {
				last = ev.Seq
			}
			return nil
		}, &base)
		var ce *callbackError
		switch {
		case errors.As(err, &ce):
			if errors.Is(ce.err, ErrStop) {
				return nil
			}
			return ce.err
		case ctx.Err() != nil:
			return ctx.Err()
		}
		if refused(err) {
			return err // the server refuses: retrying would not help
		}
		if got {
			wait = base // it was working: reconnect promptly
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(wait*2, maxReconnectWait)
	}
}

// refused: the server refused the stream (a 4xx other than 408 and 429),
// which asking again would not change.
func refused(err error) bool {
	var pe *ProblemError
	return errors.As(err, &pe) && pe.Status < 500 && pe.Status != http.StatusTooManyRequests && pe.Status != http.StatusRequestTimeout
}

// callbackError marks an error that the caller's function returned.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }

// streamOnce reads one connection of the stream until it ends; got
// reports whether it delivered anything (an event or a keep-alive).
func (c *Client) streamOnce(ctx context.Context, last uint64, task, node string, fn func(apitypes.Event) error, retry *time.Duration) (got bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := c.openStream(ctx, last, task, node)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	// A connection that stays silent longer than c.idle is dead (the
	// server sends keep-alives): closing the body ends the read.
	idle := time.AfterFunc(c.idle, cancel)
	defer idle.Stop()
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var cur sseEvent
	for {
		line, err := readLine(br)
		if errors.Is(err, io.EOF) {
			return got, io.ErrUnexpectedEOF
		} else if err != nil {
			return got, err
		}
		idle.Reset(c.idle)
		switch {
		case line == "": // dispatch
			ev, data, isEvent := cur.take()
			got = got || data
			if !isEvent {
				continue
			}
			idle.Stop() // the caller's time is not the server's silence
			err := fn(ev)
			idle.Reset(c.idle)
			if err != nil {
				return got, &callbackError{err}
			}
		case strings.HasPrefix(line, ":"): // a comment: the keep-alive
			got = true
		default:
			cur.field(line, retry)
		}
	}
}

// openStream asks for the event stream after last (with Last-Event-ID)
// and checks that the answer is one.
func (c *Client) openStream(ctx context.Context, last uint64, task, node string) (*http.Response, error) {
	r := request{method: http.MethodGet, path: v1 + "/events/stream", query: eventQuery(0, task, node, 0),
		header: http.Header{"Accept": {"text/event-stream"}, "Cache-Control": {"no-cache"}}}
	if last > 0 {
		r.query.Set("since", strconv.FormatUint(last, 10))
		r.header.Set("Last-Event-ID", strconv.FormatUint(last, 10))
	}
	return c.sendStream(ctx, r, "the event stream", "text/event-stream")
}

// sendStream makes a call whose 200 answer is a stream of media type
// ctype (what names it in errors): a refusal is its problem, another
// media type an error.
func (c *Client) sendStream(ctx context.Context, r request, what, ctype string) (*http.Response, error) {
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, readProblem(resp)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, ctype) {
		resp.Body.Close()
		return nil, fmt.Errorf("%s answered %q, not %s: check the server URL", what, ct, ctype)
	}
	return resp, nil
}

// sseEvent is the server-sent event being read: its fields until the
// blank line that dispatches it.
type sseEvent struct {
	id, event string
	data      strings.Builder
	hasData   bool
}

// field takes one "field: value" line; a retry field sets *retry.
func (e *sseEvent) field(line string, retry *time.Duration) {
	field, value, _ := strings.Cut(line, ":")
	value = strings.TrimPrefix(value, " ")
	switch field {
	case "id":
		e.id = value
	case "event":
		e.event = value
	case "data":
		if e.hasData {
			e.data.WriteByte('\n')
		}
		e.data.WriteString(value)
		e.hasData = true
	case "retry":
		if ms, err := strconv.Atoi(value); err == nil && ms > 0 {
			*retry = min(time.Duration(ms)*time.Millisecond, maxReconnectWait)
		}
	}
}

// take ends the event at a blank line: data says it had data, isEvent
// that the data is an event (the event type is its kind; other data is
// skipped). The id stays for the events that follow, as the format says.
func (e *sseEvent) take() (ev apitypes.Event, data, isEvent bool) {
	data = e.hasData
	if data && json.Unmarshal([]byte(e.data.String()), &ev) == nil {
		isEvent = true
		if ev.Seq == 0 && e.id != "" {
			ev.Seq, _ = strconv.ParseUint(e.id, 10, 64)
		}
		if ev.Kind == "" {
			ev.Kind = e.event
		}
	}
	e.event, e.hasData = "", false
	e.data.Reset()
	return ev, data, isEvent
}

// maxLine bounds one line of the stream.
const maxLine = 4 << 20

// readLine reads one line without its LF or CR LF ending.
func readLine(br *bufio.Reader) (string, error) {
	var b []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if err != nil {
			return "", err
		}
		b = append(b, chunk...)
		if len(b) > maxLine {
			return "", fmt.Errorf("an event stream line is over %d bytes", maxLine)
		}
		if !isPrefix {
			return string(b), nil
		}
	}
}
