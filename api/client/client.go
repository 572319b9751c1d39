// Package client is a typed Go client for Slipway's control API
// (/api/v1, package api). Every method takes a context first; errors the
// server reports are *ProblemError (RFC 9457 problem details with the
// request ID and, for a design, its findings).
//
// The bearer token is sent in the Authorization header only: it is never
// part of an error, a URL or anything the client prints.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/ingest/gitinfo"
	"github.com/slipway-dev/slipway/internal/backoff"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Defaults.
const (
	DefaultTimeout   = 2 * time.Minute // one call, its answer read in full
	DefaultIdle      = 30 * time.Second
	maxResponse      = 64 << 20 // bytes of one JSON answer
	maxProblemBody   = 1 << 20
	userAgentDefault = "slipway-client/v1"
)

// Client talks to one Slipway server. It is safe for concurrent use.
type Client struct {
	base      *url.URL // scheme://host[:port][/prefix], no trailing slash
	token     string
	hc        *http.Client
	timeout   time.Duration
	idle      time.Duration // event stream: reconnect after this long without a byte
	reconnect time.Duration // event stream: first wait before a reconnect
	userAgent string
}

// Option configures a Client.
type Option func(*config) error

type config struct {
	caFile    string
	hc        *http.Client
	timeout   time.Duration
	idle      time.Duration
	reconnect time.Duration
	userAgent string
}

// WithCAFile trusts the PEM certificates in path as well as the system's
// (e.g. a site's own certificate authority).
func WithCAFile(path string) Option {
	return func(c *config) error { c.caFile = path; return nil }
}

// WithHTTPClient uses hc instead of the client's own (its transport then
// decides TLS and connection timeouts; WithCAFile does not apply). Leave
// hc.Timeout zero: it would cut the event stream; calls have their own
// deadline (WithTimeout).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) error {
		if hc == nil {
			return errors.New("client: nil http.Client")
		}
		c.hc = hc
		return nil
	}
}

// WithTimeout bounds each call (not an event stream), default 2 minutes.
func WithTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("client: timeout %v: want a positive duration", d)
		}
		c.timeout = d
		return nil
	}
}

// WithStreamTiming sets how the event stream reconnects: the first wait
// after a dropped connection (doubling up to 10 s while the server stays
// away) and how long the stream may stay silent before it is taken for
// dead (the server sends a keep-alive at least every few seconds).
func WithStreamTiming(reconnect, idle time.Duration) Option {
	return func(c *config) error {
		if reconnect <= 0 || idle <= 0 {
			return errors.New("client: stream timings must be positive")
		}
		c.reconnect, c.idle = reconnect, idle
		return nil
	}
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option {
	return func(c *config) error { c.userAgent = ua; return nil }
}

// New returns a client of the server at baseURL (http:// or https://,
// optionally with a path prefix when the API sits behind a proxy), sending
// token as the bearer token.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: want http(s)://HOST[:PORT]", redactURL(baseURL))
	}
	if u.User != nil {
		return nil, errors.New("server URL: give the token separately, not as user information in the URL")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("server URL %q: no query or fragment", u.Redacted())
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	if strings.ContainsAny(token, "\r\n") {
		return nil, errors.New("the token holds a line break")
	}
	cfg := config{timeout: DefaultTimeout, idle: DefaultIdle, reconnect: 500 * time.Millisecond, userAgent: userAgentDefault}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	hc := cfg.hc
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		tr.TLSHandshakeTimeout = 10 * time.Second
		tr.ResponseHeaderTimeout = cfg.timeout
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		if cfg.caFile != "" {
			pool, err := caPool(cfg.caFile)
			if err != nil {
				return nil, err
			}
			tr.TLSClientConfig.RootCAs = pool
		}
		// No overall Timeout: it would cut the event stream. Each call
		// has a deadline of its own (see do).
		hc = &http.Client{Transport: tr, CheckRedirect: refuseRedirect} // redirect.go
	}
	return &Client{base: u, token: token, hc: hc, timeout: cfg.timeout, idle: cfg.idle, reconnect: cfg.reconnect, userAgent: cfg.userAgent}, nil
}

func caPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s holds no PEM certificate", path)
	}
	return pool, nil
}

func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "(unparsable)"
}

// String names the server, never the token.
func (c *Client) String() string { return "slipway API at " + c.base.Redacted() }

// GoString is String, so that %#v does not print the token either.
func (c *Client) GoString() string { return c.String() }

// BaseURL is the server's URL as given to New.
func (c *Client) BaseURL() string { return c.base.String() }

// ProblemError is an error answer of the API.
type ProblemError struct {
	Status    int
	Title     string
	Detail    string
	Type      string
	Instance  string
	RequestID string
	// Findings are a design's validation findings (422 on apply).
	Findings design.Findings
	// Destructive and Approve: an apply refused (409) for want of an
	// approval: the plan's destructive actions, and the approval of
	// exactly those (ApplyOptions.Approve).
	Destructive []string
	Approve     string
}

func (e *ProblemError) Error() string {
	msg := e.Detail
	if msg == "" {
		msg = e.Title
	}
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	s := fmt.Sprintf("HTTP %d: %s", e.Status, msg)
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// IsStatus reports whether err is a *ProblemError with that status.
func IsStatus(err error, status int) bool {
	var pe *ProblemError
	return errors.As(err, &pe) && pe.Status == status
}

// request is one call.
type request struct {
	method, path string
	query        url.Values
	ctype        string
	body         []byte
	header       http.Header
}

// send makes the HTTP request; the caller closes the body of the answer.
func (c *Client) send(ctx context.Context, r request) (*http.Response, error) {
	// r.path is escaped already (seg); the base URL's own path is kept.
	target := c.base.String() + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json") // unless the call asks for a stream
	for k, v := range r.header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("User-Agent", c.userAgent)
	if r.ctype != "" {
		req.Header.Set("Content-Type", r.ctype)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s%s: %w", r.method, c.base.Redacted(), r.path, unwrapURLError(err))
	}
	return resp, nil
}

// unwrapURLError drops *url.Error's repetition of the method and URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// do makes a call and decodes a 2xx JSON answer into out (nil: discard).
func (c *Client) do(ctx context.Context, r request, out any) error {
	b, err := c.doRaw(ctx, r, out != nil)
	if err != nil || out == nil || b == nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the JSON expected: %w", r.method, r.path, err)
	}
	return nil
}

// doRaw makes a call and returns a 2xx answer's body when keep is set
// (nil for 204 No Content).
func (c *Client) doRaw(ctx context.Context, r request, keep bool) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.sendOnce(ctx, r) // idempotency.go: a mutating call with its key, tried again
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return nil, readProblem(resp)
	}
	if !keep || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", r.method, r.path, err)
	}
	if len(b) > maxResponse {
		return nil, fmt.Errorf("%s %s: the answer is over %d bytes", r.method, r.path, maxResponse)
	}
	return b, nil
}

// sendUntilRun sends r, and again after the server's Retry-After (at most
// 5 s, until ctx ends) while it answers 503 saying the call did not run
// (apitypes.NotRunHeader: a standby while no replica leads, as during a
// failover); any other answer is the caller's.
func (c *Client) sendUntilRun(ctx context.Context, r request) (*http.Response, error) {
	for {
		resp, err := c.send(ctx, r)
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(apitypes.NotRunHeader) == "" {
			return resp, err
		}
		wait := time.Second
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			wait = min(time.Duration(s)*time.Second, 5*time.Second)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return resp, nil // no time left to try again: this answer is the caller's
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxProblemBody))
		resp.Body.Close()
		if err := backoff.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// readProblem turns an error answer into a *ProblemError, whether or not
// the body is problem details (a proxy's HTML page is summarised).
func readProblem(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxProblemBody))
	pe := &ProblemError{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode), RequestID: resp.Header.Get("X-Request-Id")}
	var p struct {
		Type      string             `json:"type"`
		Title     string             `json:"title"`
		Status    int                `json:"status"`
		Detail    string             `json:"detail"`
		Instance  string             `json:"instance"`
		RequestID string             `json:"request_id"`
		Findings  []apitypes.Finding `json:"findings"`
		// An apply refused for want of an approval.
		Destructive []string `json:"destructive"`
		Approve     string   `json:"approve"`
	}
	if err := json.Unmarshal(b, &p); err == nil && (p.Title != "" || p.Detail != "") {
		pe.Type, pe.Instance, pe.Detail, pe.Findings = p.Type, p.Instance, p.Detail, apitypes.ToDesignFindings(p.Findings)
		pe.Destructive, pe.Approve = p.Destructive, p.Approve
		if p.Title != "" {
			pe.Title = p.Title
		}
		if p.RequestID != "" {
			pe.RequestID = p.RequestID
		}
		return pe
	}
	// Not problem details: the first line of the body, if it is text.
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	if line != "" && !strings.HasPrefix(line, "<") {
		pe.Detail = line
	} else {
		pe.Detail = pe.Title + " (not an answer of the Slipway API: check the server URL)"
	}
	return pe
}

func jsonBody(v any) (request, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return request{}, err
	}
	return request{ctype: "application/json", body: b}, nil
}

func (c *Client) get(ctx context.Context, path string, q url.Values, out any) error {
	return c.do(ctx, request{method: http.MethodGet, path: path, query: q}, out)
}

func (c *Client) sendJSON(ctx context.Context, method, path string, in, out any) error {
	r := request{method: method, path: path}
	if in != nil {
		var err error
		if r, err = jsonBody(in); err != nil {
			return err
		}
		r.method, r.path = method, path
	}
	return c.do(ctx, r, out)
}

const v1 = "/api/v1"

func seg(s string) string { return url.PathEscape(s) }

// ---- designs ----

// ApplyResult is the answer of a successful apply (apitypes.Applied,
// its findings and diff the design package's).
type ApplyResult struct {
	Revision string          `json:"revision"`
	Result   string          `json:"result"` // created | restored | unchanged
	Warnings design.Findings `json:"warnings,omitempty"`
	Diff     *design.Diff    `json:"diff,omitempty"` // against the revision that was current; nil when unchanged
	// LayerTakenOver are the API-managed layer's documents the upload
	// defines (they left the layer); LayerKept counts those built over it.
	LayerTakenOver []string `json:"layer_taken_over,omitempty"`
	LayerKept      int      `json:"layer_kept,omitempty"`
	// Plan is what applying the revision and then deploying does (none
	// when unchanged).
	Plan *apitypes.Plan `json:"plan,omitempty"`
}

// Validation is the answer of ValidateDesign (apitypes.ValidationResult,
// its findings the design package's).
type Validation struct {
	Valid    bool            `json:"valid"`
	Errors   int             `json:"errors"`
	Warnings int             `json:"warnings"`
	Nodes    int             `json:"nodes"`
	Findings design.Findings `json:"findings"`
}

// ApplyDesign uploads the design roots (directories or files of YAML,
// later ones layered over earlier ones) and stores them as the current
// revision. A design with errors is refused with a *ProblemError of status
// 422 whose Findings name the local files.
func (c *Client) ApplyDesign(ctx context.Context, roots []string) (ApplyResult, error) {
	return c.ApplyDesignWith(ctx, roots, ApplyOptions{})
}

// ApplyOptions are an apply's options.
type ApplyOptions struct {
	// Approve is a plan's Approve (or a 409's): the approval of that
	// plan's destructive actions; without it, or when the apply would
	// now do other destructive actions, an apply whose plan has some is
	// refused with a *ProblemError of status 409 naming them.
	Approve string
}

// ApplyDesignWith is ApplyDesign with options.
func (c *Client) ApplyDesignWith(ctx context.Context, roots []string, o ApplyOptions) (ApplyResult, error) {
	var out ApplyResult
	ar, err := Archive(roots)
	if err != nil {
		return out, err
	}
	q := provenance(ctx, roots)
	if o.Approve != "" {
		q.Set("approve", o.Approve)
	}
	var w apitypes.Applied
	err = c.do(ctx, request{method: http.MethodPost, path: v1 + "/designs", query: q, ctype: "application/gzip", body: ar.Data}, &w)
	out = ApplyResult{Revision: w.Revision, Result: w.Result, Warnings: apitypes.ToDesignFindings(w.Warnings),
		LayerTakenOver: w.LayerTakenOver, LayerKept: w.LayerKept, Plan: w.Plan}
	if w.Diff != nil {
		d := w.Diff.ToDesign()
		out.Diff = &d
	}
	var pe *ProblemError
	if errors.As(err, &pe) {
		ar.Localize(pe.Findings)
	}
	ar.Localize(out.Warnings)
	return out, err
}

// provenance tells the server where an applied design comes from: the
// roots as given, and the git commit of their work tree (its history
// shows them).
func provenance(ctx context.Context, roots []string) url.Values {
	v := url.Values{"root": roots}
	if gi := gitinfo.Of(ctx, roots); gi.Commit != "" {
		v.Set("git_commit", gi.Commit)
		v.Set("git_dirty", strconv.FormatBool(gi.Dirty))
	}
	return v
}

// ValidateDesign validates the design roots on the server without storing
// them; the findings name the local files.
func (c *Client) ValidateDesign(ctx context.Context, roots []string) (Validation, error) {
	var out Validation
	ar, err := Archive(roots)
	if err != nil {
		return out, err
	}
	var w apitypes.ValidationResult
	err = c.do(ctx, request{method: http.MethodPost, path: v1 + "/designs/validate", ctype: "application/gzip", body: ar.Data}, &w)
	out = Validation{Valid: w.Valid, Errors: w.Errors, Warnings: w.Warnings, Nodes: w.Nodes, Findings: apitypes.ToDesignFindings(w.Findings)}
	ar.Localize(out.Findings)
	return out, err
}

// PlanDesign uploads the design roots and answers what applying them and
// then deploying would do; nothing is stored. A design with errors is
// refused as ApplyDesign refuses it (422, findings naming local files).
func (c *Client) PlanDesign(ctx context.Context, roots []string) (apitypes.Plan, error) {
	var out apitypes.Plan
	ar, err := Archive(roots)
	if err != nil {
		return out, err
	}
	err = c.do(ctx, request{method: http.MethodPost, path: v1 + "/designs/plan", ctype: "application/gzip", body: ar.Data}, &out)
	var pe *ProblemError
	if errors.As(err, &pe) {
		ar.Localize(pe.Findings)
	}
	return out, err
}

// DesignPlan is the plan stored with a revision when it was applied.
func (c *Client) DesignPlan(ctx context.Context, rev string) (apitypes.Plan, error) {
	var out apitypes.Plan
	return out, c.get(ctx, v1+"/designs/"+seg(rev)+"/plan", nil, &out)
}

// Designs is the apply history, oldest first (never nil).
func (c *Client) Designs(ctx context.Context) ([]apitypes.RevisionSummary, error) {
	out := []apitypes.RevisionSummary{}
	if err := c.get(ctx, v1+"/designs", nil, &out); err != nil {
		return nil, err
	}
	if out == nil { // the server answered null
		out = []apitypes.RevisionSummary{}
	}
	return out, nil
}

// Design is a stored revision: its ID, a unique prefix of it, or "current".
func (c *Client) Design(ctx context.Context, rev string) (apitypes.RevisionInfo, error) {
	var out apitypes.RevisionInfo
	return out, c.get(ctx, v1+"/designs/"+seg(rev), nil, &out)
}

// Diff is what changed from revision against to revision rev (against
// "": the revision applied before rev).
func (c *Client) Diff(ctx context.Context, rev, against string) (design.Diff, error) {
	var out apitypes.Diff
	q := url.Values{}
	if against != "" {
		q.Set("against", against)
	}
	err := c.get(ctx, v1+"/designs/"+seg(rev)+"/diff", q, &out)
	return out.ToDesign(), err
}

// DesignNode is a node of a revision, resolved (in the design schema's
// names).
func (c *Client) DesignNode(ctx context.Context, rev, name string) (apitypes.RenderedNode, error) {
	var out apitypes.RenderedNode
	return out, c.get(ctx, v1+"/designs/"+seg(rev)+"/nodes/"+seg(name), nil, &out)
}

// ---- nodes ----

// NodeQuery filters the node list. Several values of one field are
// alternatives; Label holds key=value pairs, all of which must hold.
type NodeQuery struct {
	Name, Label, Tag, Rack, Stage, Outcome, Lifecycle []string
	Offset, Limit                                     int // Limit 0: the server's default (100)
}

func (q NodeQuery) values() url.Values {
	return query(q.Offset, q.Limit, map[string][]string{"name": q.Name, "label": q.Label, "tag": q.Tag, "rack": q.Rack,
		"stage": q.Stage, "outcome": q.Outcome, "lifecycle": q.Lifecycle})
}

// query is a list's query string: each parameter with its values (several
// values of one parameter are alternatives), and the page.
func query(offset, limit int, params map[string][]string) url.Values {
	v := url.Values{}
	for name, vals := range params {
		for _, s := range vals {
			v.Add(name, s)
		}
	}
	paging(v, offset, limit)
	return v
}

func paging(v url.Values, offset, limit int) {
	if offset > 0 {
		v.Set("offset", strconv.Itoa(offset))
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
}

// Nodes lists the current design's nodes with their workflow state, one
// page.
func (c *Client) Nodes(ctx context.Context, q NodeQuery) (apitypes.Page[apitypes.NodeSummary], error) {
	var out apitypes.Page[apitypes.NodeSummary]
	return out, c.get(ctx, v1+"/nodes", q.values(), &out)
}

// Node is one node in full.
func (c *Client) Node(ctx context.Context, name string) (apitypes.NodeDetail, error) {
	var out apitypes.NodeDetail
	return out, c.get(ctx, v1+"/nodes/"+seg(name), nil, &out)
}

// Node verbs.
const (
	NodeAdopt         = "adopt"
	NodeMarkManual    = "mark-manual-intervention"
	NodeReleaseManual = "release-manual"
)

// Rebootstrap reissues a node's introspection token for its current
// deployment and puts it back at bootstrap (admins only). The answer's
// Env and UserData hold the new token: for the node, never for a log.
func (c *Client) Rebootstrap(ctx context.Context, name string) (apitypes.Rebootstrapped, error) {
	var out apitypes.Rebootstrapped
	return out, c.sendJSON(ctx, http.MethodPost, v1+"/nodes/"+seg(name)+"/rebootstrap", nil, &out)
}

// BootData is what the introspection API serves a node in its current
// deployment: part is self, meta-data, user-data (its token redacted),
// vendor-data or network-config. Admins only.
func (c *Client) BootData(ctx context.Context, node, part string) ([]byte, error) {
	return c.doRaw(ctx, request{method: http.MethodGet, path: v1 + "/nodes/" + seg(node) + "/bootdata/" + seg(part)}, true)
}

// NodeVerb runs adopt, mark-manual-intervention (with its reason) or
// release-manual on a node.
func (c *Client) NodeVerb(ctx context.Context, name, verb, reason string) (apitypes.NodeRecord, error) {
	var out apitypes.NodeRecord
	switch verb {
	case NodeAdopt, NodeMarkManual, NodeReleaseManual:
	default:
		return out, fmt.Errorf("unknown node verb %q: use adopt, mark-manual-intervention or release-manual", verb)
	}
	var in any
	if reason != "" {
		in = map[string]string{"reason": reason}
	}
	return out, c.sendJSON(ctx, http.MethodPost, v1+"/nodes/"+seg(name)+"/"+verb, in, &out)
}

// AdoptMachine attaches a provisioner machine (e.g. one the sweep reports
// leaked) to a node: adopt with a machine.
func (c *Client) AdoptMachine(ctx context.Context, name, machine string) (apitypes.NodeRecord, error) {
	var out apitypes.NodeRecord
	return out, c.sendJSON(ctx, http.MethodPost, v1+"/nodes/"+seg(name)+"/"+NodeAdopt, map[string]string{"machine": machine}, &out)
}

// ---- tasks ----

// TaskRequest is the body of a new task.
type TaskRequest struct {
	Action         record.Action   `json:"action"`
	NodeFilter     apitypes.Filter `json:"node_filter"`
	DesignRevision string          `json:"design_revision,omitempty"` // "": the current revision
	// Options: decommission_nodes {erase, delete}, destroy_nodes {erase}.
	Options *apitypes.TaskOptions `json:"options,omitempty"`
}

// CreateTask creates a task; the server runs it.
func (c *Client) CreateTask(ctx context.Context, req TaskRequest) (apitypes.Task, error) {
	var out apitypes.Task
	return out, c.sendJSON(ctx, http.MethodPost, v1+"/tasks", req, &out)
}

// Task is a task with its per-node results.
func (c *Client) Task(ctx context.Context, id string) (apitypes.TaskDetail, error) {
	var out apitypes.TaskDetail
	return out, c.get(ctx, v1+"/tasks/"+seg(id), nil, &out)
}

// TaskQuery filters the task list (several values are alternatives).
type TaskQuery struct {
	Status, Action []string
	Offset, Limit  int // Limit 0: the server's default (100)
}

// Tasks lists tasks, newest first, one page.
func (c *Client) Tasks(ctx context.Context, q TaskQuery) (apitypes.Page[apitypes.Task], error) {
	var out apitypes.Page[apitypes.Task]
	return out, c.get(ctx, v1+"/tasks", query(q.Offset, q.Limit, map[string][]string{"status": q.Status, "action": q.Action}), &out)
}

// TaskVerb applies retry, resume, rerun, restart-clean or cancel to a task.
func (c *Client) TaskVerb(ctx context.Context, id string, verb record.Verb) (apitypes.Task, error) {
	var out apitypes.Task
	return out, c.do(ctx, request{method: http.MethodPost, path: v1 + "/tasks/" + seg(id) + "/" + seg(string(verb))}, &out)
}

// ---- events, audit ----

// Events are the events after sequence number since (0: from the start),
// of one task and/or node when given, at most limit of them (0: the
// server's default, 1000).
func (c *Client) Events(ctx context.Context, since uint64, task, node string, limit int) ([]apitypes.Event, error) {
	var out []apitypes.Event
	return out, c.get(ctx, v1+"/events", eventQuery(since, task, node, limit), &out)
}

func eventQuery(since uint64, task, node string, limit int) url.Values {
	v := url.Values{}
	if since > 0 {
		v.Set("since", strconv.FormatUint(since, 10))
	}
	if task != "" {
		v.Set("task", task)
	}
	if node != "" {
		v.Set("node", node)
	}
	paging(v, 0, limit)
	return v
}

// Audit is a page of the audit log after sequence number since: at most
// limit records (0: the server's maximum, apitypes.MaxAuditPageRecords) and
// apitypes.MaxAuditPageBytes. When its More is set, the next page starts after
// its Next. It needs an admin token.
func (c *Client) Audit(ctx context.Context, since uint64, limit int) (apitypes.AuditPage, error) {
	var out apitypes.AuditPage
	v := url.Values{}
	if since > 0 {
		v.Set("since", strconv.FormatUint(since, 10))
	}
	paging(v, 0, limit)
	return out, c.get(ctx, v1+"/audit", v, &out)
}

// ---- secrets, tokens (admin) ----

// Secrets lists the stored secrets' names (never their values).
func (c *Client) Secrets(ctx context.Context) ([]apitypes.SecretInfo, error) {
	var out []apitypes.SecretInfo
	return out, c.get(ctx, v1+"/secrets", nil, &out)
}

// PutSecret stores a secret, encrypted on the server.
func (c *Client) PutSecret(ctx context.Context, name, value string) error {
	return c.sendJSON(ctx, http.MethodPut, v1+"/secrets/"+seg(name), map[string]string{"value": value}, nil)
}

// DeleteSecret deletes a secret.
func (c *Client) DeleteSecret(ctx context.Context, name string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: v1 + "/secrets/" + seg(name)}, nil)
}

// Tokens lists the API tokens (never their values).
func (c *Client) Tokens(ctx context.Context) ([]apitypes.TokenInfo, error) {
	var out []apitypes.TokenInfo
	return out, c.get(ctx, v1+"/tokens", nil, &out)
}

// CreateToken creates a token with a role and a name; the answer's Token
// is its value, shown this once.
func (c *Client) CreateToken(ctx context.Context, role auth.Role, name string) (apitypes.CreatedToken, error) {
	var out apitypes.CreatedToken
	return out, c.sendJSON(ctx, http.MethodPost, v1+"/tokens", map[string]string{"role": string(role), "name": name}, &out)
}

// RevokeToken revokes a token by its ID.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: v1 + "/tokens/" + seg(id)}, nil)
}

// Cluster is the replica group as the server asked sees it.
func (c *Client) Cluster(ctx context.Context) (apitypes.Cluster, error) {
	var out apitypes.Cluster
	return out, c.get(ctx, v1+"/cluster", nil, &out)
}
