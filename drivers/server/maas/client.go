// Package maas is the MAAS server driver: it drives a MAAS region (2.x and
// 3.x, API 2.0) through the whole machine lifecycle from the resolved
// design, with gomaasapi's signed client.
package maas

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/juju/gomaasapi/v2"
	segjson "github.com/segmentio/encoding/json"
	"github.com/slipway-dev/slipway/drivers"
)

// client sends the driver's requests to the region: built and signed
// with gomaasapi's client (its API URL and OAuth signer), sent with the
// caller's context (gomaasapi has none) and read by the driver
// (client_send.go).
type client struct {
	base    gomaasapi.Client
	timeout time.Duration // per request, when the caller's deadline is later
	retries int           // for 503/429 (honouring Retry-After) and network errors
	maxWait time.Duration // cap of one Retry-After wait
	cache   *readCache    // told of every write (nil: no cache)
	httpc   *http.Client  // kept connections (maxIdleConns), no redirect followed
	secrets []string      // the key and its secret part: redacted from every error (drivers.RedactSecrets)
	signer  *oauthSigner  // oauth.go
}

// maxIdleConns is how many connections to MAAS are kept open for reuse:
// as many as the engine has requests in flight (Limits.Provisioner), so
// that a busy engine does not open a TCP connection per request (Go's
// default keeps 2).
const maxIdleConns = 128

// readBufferSize is each connection's read buffer: a machine's JSON (10
// KB for a generated node) in one read from the socket where it has
// come, not several reads of Go's default 4 KB.
const readBufferSize = 32 << 10

// writeBufferSize is each connection's write buffer: a deploy's request
// (its form holds the node's base64 user data, about 12 KB) goes to the
// socket in one write, not a flushed 4 KB (Go's default) and the rest.
const writeBufferSize = 32 << 10

func newClient(apiURL, apiKey string, timeout time.Duration, retries int) (*client, error) {
	u := strings.TrimSuffix(apiURL, "/")
	if !strings.HasSuffix(u, "/api/2.0") {
		u += "/api/2.0"
	}
	// gomaasapi's error quotes the key: it is never passed on.
	if strings.Count(apiKey, ":") != 2 {
		return nil, drivers.Errorf(drivers.Permanent, "maas: the API key is not three fields separated by ':' (the key is not shown): check maas.apiKey: consumer:token:secret, as `maas apikey --username USER` prints it")
	}
	c, err := gomaasapi.NewAuthenticatedClient(u+"/", apiKey)
	if err != nil {
		return nil, drivers.Errorf(drivers.Permanent, "maas: the MAAS URL %q can't be used: check maas.url", u)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = maxIdleConns, maxIdleConns
	t.ReadBufferSize, t.WriteBufferSize = readBufferSize, writeBufferSize
	signer, err := newOAuthSigner(apiKey)
	if err != nil {
		return nil, drivers.Errorf(drivers.Transient, "maas: draw the OAuth nonce prefix: %v", err)
	}
	secret := apiKey[strings.LastIndexByte(apiKey, ':')+1:]
	return &client{base: *c, timeout: timeout, retries: retries, maxWait: 30 * time.Second,
		httpc:   &http.Client{Transport: t, CheckRedirect: refuseRedirect},
		secrets: []string{apiKey, secret}, signer: signer}, nil
}

// maxFailedAnswer bounds what is read of an answer that is not a 2xx.
const maxFailedAnswer = 64 << 10

// redirectError is a redirect MAAS answered, not followed: MAAS never
// redirects an API call, and following one would send the key where it
// points (Go's client keeps the Authorization header on a redirect to
// another port of the same host).
type redirectError struct {
	status int
	origin string // where it pointed: scheme and host only
}

func (e *redirectError) Error() string {
	return fmt.Sprintf("MAAS answered %d, a redirect to %s, which is not followed with the API key", e.status, e.origin)
}

// refuseRedirect is the http.Client's CheckRedirect: no redirect is
// followed.
func refuseRedirect(req *http.Request, _ []*http.Request) error {
	e := &redirectError{origin: req.URL.Scheme + "://" + req.URL.Host}
	if req.Response != nil {
		e.status = req.Response.StatusCode
	}
	return e
}

// call runs one request with the per-request timeout and the retry rules,
// and decodes the JSON answer into out (when out is not nil). path is
// relative to /api/2.0/ and ends in "/".
func (c *client) call(ctx context.Context, method, path, op string, params url.Values, out any) error {
	return c.callLimit(ctx, method, path, op, params, out, 0)
}

// callLimit is call whose answer may not be longer than limit bytes (0:
// no limit): the body is cut at limit+1 and refused (Permanent).
func (c *client) callLimit(ctx context.Context, method, path, op string, params url.Values, out any, limit int64) error {
	if method != http.MethodGet {
		c.cache.wrote(path, op, params)
		defer c.cache.wrote(path, op, params)
	}
	return c.retrying(ctx, method, path, op, func(rctx context.Context) error {
		answer, err := c.send(rctx, method, path, op, params, limit)
		if err != nil {
			return err
		}
		defer putAnswer(answer)
		return finalError{c.decodeAnswer(method, path, answer.Bytes(), out, limit)}
	})
}

// finalError is an attempt's outcome that is not retried (nil inside:
// success).
type finalError struct{ err error }

func (e finalError) Error() string { return e.err.Error() }

// retrying runs try, one attempt of a request bounded by the per-request
// timeout, with the retry rules; try's errors are classified, except a
// finalError's, which is the outcome.
func (c *client) retrying(ctx context.Context, method, path, op string, try func(context.Context) error) error {
	var lastErr error
	for attempt := 0; attempt <= c.retries; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, c.timeout)
		err := try(rctx)
		cancel()
		if f, ok := err.(finalError); ok {
			return f.err
		}
		if err == nil {
			return nil
		}
		lastErr = c.classify(ctx, method, path, op, err)
		wait, retry := c.retryAfter(err, attempt)
		if !retry || ctx.Err() != nil || attempt == c.retries {
			return lastErr
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("maas %s %s: %w", method, path, ctx.Err())
		case <-time.After(wait):
		}
	}
	return lastErr
}

// decodeAnswer checks an answer against limit and decodes it into out
// (nil: the answer is not wanted).
func (c *client) decodeAnswer(method, path string, body []byte, out any, limit int64) error {
	if limit > 0 && int64(len(body)) > limit {
		return drivers.Errorf(drivers.Permanent, "maas %s %s: the answer is larger than %d bytes", method, path, limit)
	}
	if out == nil || len(body) == 0 {
		return nil
	}
	if err := segjson.Unmarshal(body, out); err != nil {
		// The decoder's error quotes the answer.
		return drivers.Errorf(drivers.Permanent, "maas %s %s: decode the answer: %s", method, path, drivers.PeerText(err.Error(), c.secrets...))
	}
	return nil
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// retryAfter decides whether to retry and after how long: 503 and 429 wait
// as long as Retry-After says (capped), network errors back off.
func (c *client) retryAfter(err error, attempt int) (time.Duration, bool) {
	backoff := time.Duration(250*(1<<attempt)) * time.Millisecond
	if _, ok := errors.AsType[*redirectError](err); ok {
		return 0, false
	}
	if status, header, _, ok := serverAnswer(err); ok {
		if status != http.StatusServiceUnavailable && status != http.StatusTooManyRequests {
			return 0, false
		}
		if s, perr := strconv.Atoi(header.Get("Retry-After")); perr == nil && s >= 0 {
			return min(time.Duration(s)*time.Second, c.maxWait), true
		}
		return backoff, true
	}
	return backoff, true // a network error or timeout
}

// classify turns a request's errors into classified driver errors.
func (c *client) classify(ctx context.Context, method, path, op string, err error) error {
	what := method + " " + path
	if op != "" {
		what += "?op=" + op
	}
	if ctx.Err() != nil {
		return fmt.Errorf("maas %s: %w", what, ctx.Err())
	}
	if re, ok := errors.AsType[*redirectError](err); ok {
		return drivers.Errorf(drivers.Permanent, "maas %s: %v: check maas.url (the region's API URL, e.g. https://maas.example:5240/MAAS, as the region serves it, not a URL that redirects)", what, re)
	}
	if status, _, body, ok := serverAnswer(err); ok {
		// MAAS's answer, or a proxy's, may echo the request and its key.
		msg := drivers.PeerText(body, c.secrets...)
		switch {
		case status == http.StatusForbidden:
			return &forbiddenError{drivers.Errorf(drivers.Permanent, "maas %s: MAAS refused the request to the API key's user (%d %s): admin-only calls need an administrator's key; check maas.apiKey", what, status, msg)}
		case status == http.StatusUnauthorized:
			return drivers.Errorf(drivers.Permanent, "maas %s: MAAS refused the API key (%d %s); check maas.apiKey", what, status, msg)
		case status == http.StatusNotFound:
			return &notFoundError{drivers.Errorf(drivers.Permanent, "maas %s: not found: %s", what, msg)}
		case status == http.StatusConflict:
			return &conflictError{drivers.Errorf(drivers.Permanent, "maas %s: %s", what, msg)}
		case status == http.StatusBadRequest:
			return drivers.Errorf(drivers.Permanent, "maas %s: MAAS rejected the request: %s", what, msg)
		case status >= 500 || status == http.StatusTooManyRequests:
			return drivers.Errorf(drivers.Transient, "maas %s: %d %s", what, status, msg)
		}
		return drivers.Errorf(drivers.Permanent, "maas %s: %d %s", what, status, msg)
	}
	return drivers.Errorf(drivers.Transient, "maas %s: %s", what, drivers.RedactSecrets(err.Error(), c.secrets...))
}

// notFoundError and conflictError let steps tell 404 and 409 apart.
type notFoundError struct{ error }

func (e *notFoundError) Unwrap() error { return e.error }

type conflictError struct{ error }

// forbiddenError is a 403: the key is good but its user may not do this
// (an admin-only call, such as boot images').
type forbiddenError struct{ error }

func (e *forbiddenError) Unwrap() error { return e.error }

func (e *conflictError) Unwrap() error { return e.error }

func isNotFound(err error) bool {
	var e *notFoundError
	return errors.As(err, &e)
}

func isConflict(err error) bool {
	var e *conflictError
	return errors.As(err, &e)
}
