package redfish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// maxRetryAfter bounds the wait a 503's Retry-After asks for.
const maxRetryAfter = 10 * time.Second

// client is the HTTP client of a BMC: its trust (CA file, pinned
// fingerprint, insecure, or the system's roots), connections kept per
// endpoint and trust, 503 answers retried, redirects followed only on
// the BMC's own origin, and the session tokens it carries noted in seen
// (nil: not noted) so that errors can redact them.
func (d *Driver) client(ep string, b drivers.BMC, seen *tokens) *http.Client {
	key := strings.Join([]string{ep, b.CAFile, b.Fingerprint, strconv.FormatBool(b.Insecure)}, "|")
	d.mu.Lock()
	t := d.transports[key]
	if t == nil {
		t = &http.Transport{TLSClientConfig: tlsConfig(b), MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute,
			TLSHandshakeTimeout: d.s.timeout, ResponseHeaderTimeout: d.s.timeout}
		d.transports[key] = t
	}
	d.mu.Unlock()
	return &http.Client{Timeout: d.s.timeout, CheckRedirect: sameOrigin,
		Transport: guard{next: taskWaiter{next: retry503{next: t, retries: d.s.retries}, poll: d.s.pollInterval}, seen: seen}}
}

// maxRedirects bounds the redirects followed on the BMC's own origin.
const maxRedirects = 5

// redirectError is a redirect (or a task monitor) to another origin
// than the BMC's: not followed, since the request carries the
// credentials (Go's client keeps them on another port of the same host).
type redirectError struct {
	status int
	origin string
}

func (e *redirectError) Error() string {
	return fmt.Sprintf("the BMC answered %d pointing to %s, another origin, where the credentials are not sent", e.status, e.origin)
}

// origin is a URL's scheme, host and port (the scheme's default when it
// names none).
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port)
}

// sameOrigin is the client's CheckRedirect: a redirect is followed only
// to the origin of the first request, and at most maxRedirects times.
func sameOrigin(req *http.Request, via []*http.Request) error {
	if origin(req.URL) != origin(via[0].URL) {
		e := &redirectError{origin: origin(req.URL)}
		if req.Response != nil {
			e.status = req.Response.StatusCode
		}
		return e
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("the BMC redirected %d times", len(via))
	}
	return nil
}

// maxFailedAnswer bounds what is read of a failed answer (gofish reads
// it whole into its error).
const maxFailedAnswer = 64 << 10

// tokens are the session tokens a client sent or was given.
type tokens struct {
	mu   sync.Mutex
	seen []string
}

func (t *tokens) note(v string) {
	if t == nil || v == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !slices.Contains(t.seen, v) {
		t.seen = append(t.seen, v)
	}
}

func (t *tokens) list() []string {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.seen)
}

// guard notes the session tokens of requests and answers, and bounds
// what is read of a failed answer.
type guard struct {
	next http.RoundTripper
	seen *tokens
}

func (g guard) RoundTrip(req *http.Request) (*http.Response, error) {
	g.seen.note(req.Header.Get("X-Auth-Token"))
	if req.Close {
		// gofish marks a request Connection: close unless it made the
		// HTTP client itself: the kept transport's connection (and its
		// TLS session) serves the BMC's next call instead.
		req = req.Clone(req.Context())
		req.Close = false
	}
	resp, err := g.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	g.seen.note(resp.Header.Get("X-Auth-Token"))
	if resp.StatusCode/100 != 2 && resp.Body != nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, maxFailedAnswer), resp.Body}
	}
	return resp, nil
}

// tlsConfig is how the BMC's certificate is checked. A CA file that can't
// be read checks against an empty pool: every connection fails, saying
// why (verifyError).
func tlsConfig(b drivers.BMC) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case b.Insecure:
		c.InsecureSkipVerify = true // the design says so (oob.insecure)
	case b.Fingerprint != "":
		want := strings.ToLower(strings.ReplaceAll(b.Fingerprint, ":", ""))
		c.InsecureSkipVerify = true // the pinned fingerprint is checked instead
		c.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("the BMC sent no certificate")
			}
			sum := sha256.Sum256(raw[0])
			if got := hex.EncodeToString(sum[:]); got != want {
				return fmt.Errorf("the BMC's certificate has SHA-256 %s, not the pinned oob.fingerprint: check the BMC, or update the fingerprint if its certificate was replaced", got)
			}
			return nil
		}
	case b.CAFile != "":
		pool := x509.NewCertPool()
		if pem, err := os.ReadFile(b.CAFile); err == nil {
			pool.AppendCertsFromPEM(pem)
		}
		c.RootCAs = pool
	}
	return c
}

// retry503 resends a request the BMC answered 503 after the wait its
// Retry-After asks (at most maxRetryAfter, and never past the request's
// deadline), at most retries times.
type retry503 struct {
	next    http.RoundTripper
	retries int
}

func (r retry503) RoundTrip(req *http.Request) (*http.Response, error) {
	if isOneShot(req) {
		return r.next.RoundTrip(req) // not retried, so its body (an image pushed) is not held
	}
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	for attempt := 0; ; attempt++ {
		if body != nil {
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		resp, err := r.next.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || attempt >= r.retries {
			return resp, err
		}
		wait := retryAfter(resp.Header.Get("Retry-After"))
		resp.Body.Close()
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(wait):
		}
	}
}

// retryAfter reads a Retry-After of seconds (1s when absent or a date).
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return time.Second
	}
	return min(time.Duration(n)*time.Second, maxRetryAfter)
}

// taskWaiter follows the task monitor of an operation the BMC accepted
// to run as a task (202 with a Location): it reads the monitor until the
// task is no longer running (never past the request's deadline) and
// answers that reading, so a caller sees the operation's end. A task
// that ended in Exception, Killed or Cancelled is answered as a 500 with
// the task's document.
type taskWaiter struct {
	next http.RoundTripper
	poll time.Duration
}

// maxTaskBody bounds a task document read.
const maxTaskBody = 1 << 20

func (w taskWaiter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(req)
	loc := ""
	if err == nil {
		loc = resp.Header.Get("Location")
	}
	if err != nil || resp.StatusCode != http.StatusAccepted || loc == "" || req.Method == http.MethodGet || isOneShot(req) {
		return resp, err
	}
	taskURI := acceptedTask(resp)
	mon, err := req.URL.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("task monitor %q: %w", drivers.PeerText(loc), err)
	}
	if origin(mon) != origin(req.URL) {
		return nil, &redirectError{status: http.StatusAccepted, origin: origin(mon)}
	}
	return w.follow(req, mon, taskURI)
}

// follow polls the monitor mon of req's operation until the operation
// ends (or req's context does): a 202 or a Task or Job that has not ended
// is polled again.
func (w taskWaiter) follow(req *http.Request, mon *url.URL, taskURI string) (*http.Response, error) {
	for {
		select {
		case <-req.Context().Done():
			return nil, fmt.Errorf("waiting for task %s: %w", mon.Path, req.Context().Err())
		case <-time.After(max(w.poll, 10*time.Millisecond)):
		}
		get, err := http.NewRequestWithContext(req.Context(), http.MethodGet, mon.String(), nil)
		if err != nil {
			return nil, err
		}
		for _, h := range []string{"X-Auth-Token", "Authorization"} {
			if v := req.Header.Get(h); v != "" {
				get.Header.Set(h, v)
			}
		}
		r, err := w.next.RoundTrip(get)
		if err == nil && r.StatusCode == http.StatusNoContent && taskURI != "" {
			return w.taskAfter204(get, mon.ResolveReference(&url.URL{Path: taskURI}), r)
		}
		if err != nil || r.StatusCode != http.StatusAccepted {
			out, err := taskOutcome(r, err)
			if err != nil || !stillRunning(out) {
				return out, err
			}
			r = out // a Job (iDRAC) answers 200 while it is scheduled or runs
		}
		r.Body.Close()
	}
}

// taskAfter204 reads the Task at task after its monitor answered 204,
// which says the task ended and not how (OpenBMC's bmcweb answers so for
// a failed task too): the Task's answer (a 500 when it did not complete,
// taskOutcome), or the 204 when the Task cannot be read.
func (w taskWaiter) taskAfter204(get *http.Request, task *url.URL, noContent *http.Response) (*http.Response, error) {
	noContent.Body.Close()
	noContent.Body = http.NoBody
	get.URL = task
	r, err := w.next.RoundTrip(get)
	if err != nil || r.StatusCode != http.StatusOK {
		if err == nil {
			r.Body.Close()
		}
		return noContent, nil
	}
	return taskOutcome(r, nil)
}

// acceptedTask is the Task resource a 202's body names ("" when it is no
// Task, or names none under the service root); it closes the body.
func acceptedTask(resp *http.Response) string {
	defer resp.Body.Close()
	var t struct {
		ID        string `json:"@odata.id"`
		Type      string `json:"@odata.type"`
		TaskState string
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, maxTaskBody)).Decode(&t)
	if (t.TaskState == "" && !strings.HasPrefix(t.Type, "#Task.")) || !strings.HasPrefix(t.ID, serviceRoot+"/") || len(t.ID) > maxHandle {
		return ""
	}
	return t.ID
}

// taskOutcome turns a finished task's document into a failure when the
// task did not complete.
func taskOutcome(r *http.Response, err error) (*http.Response, error) {
	if err != nil || r.StatusCode != http.StatusOK {
		return r, err
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxTaskBody))
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	var t jobDoc
	if json.Unmarshal(body, &t) == nil {
		if st := t.state(); st == "Exception" || st == "Killed" || st == "Cancelled" {
			r.StatusCode, r.Status = http.StatusInternalServerError, "500 task "+st
			if t.JobState != "" {
				r.Status = "500 job " + t.JobState + ": " + drivers.PeerText(t.Message)
			}
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return r, nil
}

// jobDoc is what the driver reads of a Task, or of a Job (iDRAC's
// DellJob: JobState and Message, answered 200 throughout).
type jobDoc struct {
	TaskState, JobState, Message string
}

// state is the document's TaskState; a Job's JobState as a TaskState
// (Completed; Failed or CompletedWithErrors: Exception; any other, such
// as Scheduled, Downloading or Running: Running).
func (t jobDoc) state() string {
	switch t.JobState {
	case "":
		return t.TaskState
	case "Completed":
		return "Completed"
	case "Failed", "CompletedWithErrors":
		return "Exception"
	}
	return "Running"
}

// stillRunning: r (200, its body readable again) is a Task or Job that
// has not ended: the operation is followed further.
func stillRunning(r *http.Response) bool {
	if r == nil || r.StatusCode != http.StatusOK {
		return false
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var t jobDoc
	if err != nil || json.Unmarshal(body, &t) != nil {
		return false
	}
	switch t.state() {
	case "", "Completed", "Exception", "Killed", "Cancelled":
		return false
	}
	return true
}

// oneShotKey marks a call's context: its requests are neither retried
// after a 503 nor followed to their task's end. StartFirmwareUpdate's:
// the caller follows the update's task itself, and a 503 there says an
// update is running already.
type oneShotKey struct{}

func oneShot(ctx context.Context) context.Context { return context.WithValue(ctx, oneShotKey{}, true) }

func isOneShot(req *http.Request) bool { return req.Context().Value(oneShotKey{}) != nil }
