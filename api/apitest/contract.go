package apitest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/slipway-dev/slipway/api"
)

// Contract checks a served API against its OpenAPI document
// (api.Document): every request (a route the document does not list is a
// failure; a request it forbids must be refused with a 4xx) and every
// answer (status, media type, body; for an event stream, status and media
// type only). Failures are kept; Start reports them as test errors when
// the test ends.
type Contract struct {
	router routers.Router

	mu       sync.Mutex
	failures []string
}

// maxChecked bounds the bodies the contract reads to check: a longer
// request body (a large design upload) is passed on unchecked, a longer
// answer is checked for its status and media type only.
const maxChecked = 8 << 20

var registerDecoders sync.Once

// NewContract builds a Contract on the API's document.
func NewContract() (*Contract, error) {
	doc, err := api.Document()
	if err != nil {
		return nil, err
	}
	registerDecoders.Do(func() {
		openapi3filter.RegisterBodyDecoder("application/gzip", openapi3filter.FileBodyDecoder)
		openapi3filter.RegisterBodyDecoder("text/yaml", openapi3filter.PlainBodyDecoder)
		// The exported design layer: YAML text, a string in the document.
		openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.PlainBodyDecoder)
	})
	local := *doc
	local.Servers = nil // any host: the test servers listen on loopback ports
	r, err := gorillamux.NewRouter(&local)
	if err != nil {
		return nil, fmt.Errorf("router over the OpenAPI document: %w", err)
	}
	return &Contract{router: r}, nil
}

// Failures are the contract's failures so far, one line each: method,
// path, status and the validator's reason.
func (c *Contract) Failures() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.failures...)
}

func (c *Contract) fail(r *http.Request, status int, format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures = append(c.failures, fmt.Sprintf("%s %s → %d: %s", r.Method, r.URL.RequestURI(), status, fmt.Sprintf(format, args...)))
}

// Wrap returns h with every request and answer checked. The request's
// body is checked as the handler read it, when the handler read all of it
// (one it refused unread is not).
func (c *Contract) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, "/ui/") { // the dashboard's files, not the API
			h.ServeHTTP(w, r)
			return
		}
		tee := &teeBody{ReadCloser: r.Body}
		if r.Body == nil || r.Body == http.NoBody {
			tee.ReadCloser, tee.eof = http.NoBody, true
		}
		check := r.Clone(r.Context())
		r.Body = tee
		rec := &recorder{ResponseWriter: w}
		route, params, routeErr := c.router.FindRoute(check)
		h.ServeHTTP(rec, r)
		status := rec.status()
		if routeErr != nil {
			c.fail(r, status, "the OpenAPI document has no such route (%v)", routeErr)
			return
		}
		whole := tee.eof && !tee.truncated
		check.Body = io.NopCloser(bytes.NewReader(tee.buf.Bytes()))
		input := &openapi3filter.RequestValidationInput{Request: check, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, ExcludeRequestBody: !whole}}
		if err := openapi3filter.ValidateRequest(r.Context(), input); err != nil && (status < 400 || status >= 500) {
			c.fail(r, status, "the request does not match the OpenAPI document, yet was not refused with a 4xx: %s", reason(err))
		}
		c.checkAnswer(r, input, rec)
	})
}

// teeBody keeps what the handler reads of a request body, up to
// maxChecked bytes, and whether it read to the end.
type teeBody struct {
	io.ReadCloser
	buf       bytes.Buffer
	eof       bool
	truncated bool
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if t.buf.Len()+n > maxChecked {
		t.truncated = true
	} else {
		t.buf.Write(p[:n])
	}
	if errors.Is(err, io.EOF) {
		t.eof = true
	}
	return n, err
}

func (c *Contract) checkAnswer(r *http.Request, input *openapi3filter.RequestValidationInput, rec *recorder) {
	status := rec.status()
	ctype, _, _ := mime.ParseMediaType(rec.Header().Get("Content-Type"))
	streamed := ctype == "text/event-stream"
	if streamed || rec.truncated {
		if err := declaredMedia(input.Route.Operation, status, ctype); err != nil {
			c.fail(r, status, "%v", err)
		}
		return
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: input, Status: status, Header: rec.Header(),
		Body: io.NopCloser(bytes.NewReader(rec.body.Bytes())), Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	if err := openapi3filter.ValidateResponse(r.Context(), out); err != nil {
		c.fail(r, status, "the answer does not match the OpenAPI document: %s", reason(err))
	}
}

// declaredMedia checks that op declares status with media type ctype.
func declaredMedia(op *openapi3.Operation, status int, ctype string) error {
	resp := op.Responses.Status(status)
	if resp == nil || resp.Value == nil {
		return fmt.Errorf("status %d is not declared", status)
	}
	if len(resp.Value.Content) > 0 && resp.Value.Content.Get(ctype) == nil {
		return fmt.Errorf("media type %q is not declared for status %d", ctype, status)
	}
	return nil
}

// reason is the validator's error, short: a schema error's reason and
// where in the body it is, without the schema.
func reason(err error) string {
	var me openapi3.MultiError
	if errors.As(err, &me) && len(me) > 0 {
		err = me[0]
	}
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		return fmt.Sprintf("at /%s: %s", strings.Join(se.JSONPointer(), "/"), se.Reason)
	}
	msg := err.Error()
	if len(msg) > 400 {
		msg = msg[:400] + "…"
	}
	return msg
}

// recorder passes an answer on and keeps its status and (up to
// maxChecked) body. It flushes (the event stream) and unwraps (for
// http.ResponseController's deadlines).
type recorder struct {
	http.ResponseWriter
	code      int
	body      bytes.Buffer
	truncated bool
}

func (w *recorder) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

func (w *recorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if room := maxChecked - w.body.Len(); room < len(b) {
		w.truncated = true
		w.body.Write(b[:max(room, 0)])
	} else {
		w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
