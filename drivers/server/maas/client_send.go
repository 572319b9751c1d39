package maas

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
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
		body, form = bytes.NewReader(encodeForm(params)), true
	case http.MethodPut:
		body, form = bytes.NewReader(encodeForm(params)), true
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

// encodeForm is params.Encode() (the keys sorted, each key and value
// escaped as url.QueryEscape does), written into one slice of the exact
// size. Encode escaped every value into a string of its own and grew its
// builder by doubling: for a deploy, whose base64 user data is about 10
// KB, three times the body in garbage.
func encodeForm(params url.Values) []byte {
	keys := make([]string, 0, len(params))
	n := 0
	for k, vs := range params {
		keys = append(keys, k)
		for _, v := range vs {
			n += escapedLen(k) + escapedLen(v) + 2
		}
	}
	slices.Sort(keys)
	b := make([]byte, 0, n)
	for _, k := range keys {
		for _, v := range params[k] {
			if len(b) > 0 {
				b = append(b, '&')
			}
			b = append(appendEscaped(b, k), '=')
			b = appendEscaped(b, v)
		}
	}
	return b
}

// keptInQuery says whether url.QueryEscape keeps c as it is: RFC 3986's
// unreserved characters.
func keptInQuery(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

// escapedLen is len(url.QueryEscape(s)).
func escapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if !keptInQuery(s[i]) && s[i] != ' ' {
			n += 2
		}
	}
	return n
}

// appendEscaped appends url.QueryEscape(s) to b.
func appendEscaped(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case keptInQuery(c):
			b = append(b, c)
		case c == ' ':
			b = append(b, '+')
		default:
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return b
}
