package maas

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// The driver builds and signs its requests as gomaasapi's Get, Post, Put
// and Delete build them (the same URL, query, form body and OAuth
// signature), and reads each answer into a kept buffer: gomaasapi's
// io.ReadAll grew a fresh slice for every answer by doubling from 512
// bytes, about three times each answer's size in garbage (a quarter of
// everything the engine allocated while 10,000 nodes deployed).

// request builds one request of method at path (relative to /api/2.0/),
// as gomaasapi does: a GET carries op and params in the query; a POST
// carries op in the query ("op=" when there is none) and params as a
// form; a PUT carries params as a form; a DELETE an empty body.
func (c *client) request(ctx context.Context, method, path, op string, params url.Values) (*http.Request, error) {
	u := c.base.GetURL(&url.URL{Path: strings.TrimPrefix(path, "/")})
	var body io.Reader
	form := false
	switch method {
	case http.MethodGet:
		q := cloneValues(params)
		if op != "" {
			q.Set("op", op)
		}
		u.RawQuery = q.Encode()
	case http.MethodPost:
		u.RawQuery = url.Values{"op": {op}}.Encode()
		body, form = strings.NewReader(params.Encode()), true
	case http.MethodPut:
		body, form = strings.NewReader(params.Encode()), true
	default:
		body = strings.NewReader("")
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if form {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	c.signer.sign(req)
	return req, nil
}

// do sends a request built by request on the kept connections (Go's
// default keeps 2; gomaasapi also asked for each to be closed, which made
// a busy engine dial MAAS for every request), with no redirect followed.
// A non-2xx answer is a *statusError quoting at most maxFailedAnswer
// bytes of it, and its body is closed.
func (c *client) do(req *http.Request) (*http.Response, error) {
	resp, err := c.httpc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxFailedAnswer))
		return nil, &statusError{status: resp.StatusCode, header: resp.Header, body: string(b)}
	}
	return resp, nil
}

// send makes one attempt of a request and reads its answer into a kept
// buffer, cut after limit+1 bytes (0: not cut). The caller gives the
// buffer back with putAnswer once it has decoded it.
func (c *client) send(ctx context.Context, method, path, op string, params url.Values, limit int64) (*bytes.Buffer, error) {
	req, err := c.request(ctx, method, path, op, params)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if limit > 0 {
		r = io.LimitReader(r, limit+1)
	}
	buf := getAnswer()
	if resp.ContentLength > 0 && (limit <= 0 || resp.ContentLength <= limit) {
		// ReadFrom wants MinRead bytes free for the read that finds the
		// end: without them a buffer of the exact size grows once more.
		buf.Grow(int(resp.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(r); err != nil {
		putAnswer(buf)
		return nil, err
	}
	return buf, nil
}

// answers keeps the answer buffers between requests. A buffer grown past
// maxKeptAnswer (an answer that large: a rare listing or details) is
// left to the collector, so that the pool never holds much.
var answers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxKeptAnswer = 256 << 10

func getAnswer() *bytes.Buffer { return answers.Get().(*bytes.Buffer) }

func putAnswer(b *bytes.Buffer) {
	if b.Cap() > maxKeptAnswer {
		return
	}
	b.Reset()
	answers.Put(b)
}
