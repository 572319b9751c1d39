package introspection

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
)

// Report statuses.
const (
	StatusRunning = "running"
	StatusSuccess = "success"
	StatusFailure = "failure"
)

// maxMessage is how much of a report's message is kept, in bytes.
const maxMessage = 4096

// ReportRequest is the body of POST /v1/self/actions/{action}.
type ReportRequest struct {
	Status  string       `json:"status"` // running | success | failure
	Message string       `json:"message,omitempty"`
	Image   *ReportImage `json:"image,omitempty"` // the image the node runs (reportimage.go)
}

// reportKind is a Report's stored form: it carries its schema version
// (internal/storedrec).
var reportKind = storedrec.NewKind("boot action report", reflect.TypeFor[Report]())

// Report is a stored report of one boot action in one deployment.
type Report struct {
	Node       string    `json:"node"`
	Deployment string    `json:"deployment"`
	Action     string    `json:"action"`
	Status     string    `json:"status"`
	Message    string    `json:"message,omitempty"`
	Time       time.Time `json:"time"`
	// Server: recorded by this server, not reported by the node: the
	// action's assets could not be rendered for it (Status failure).
	Server bool `json:"server,omitempty"`
	// Image is the image the node said it runs (reportimage.go).
	Image *ReportImage `json:"image,omitempty"`
}

func reportKey(node, deployment, action string) string {
	return node + "/" + deployment + "/" + action
}

func (s *Server) postReport(c echo.Context) error {
	ss := sessionOf(c)
	if err := s.limitReports(c, ss.rec.Node); err != nil {
		return err
	}
	action := c.Param("action")
	ba := ss.d.BootActions[action]
	if ba == nil || !ba.Spec.NodeFilter.Matches(ss.n) {
		return problem(http.StatusNotFound, fmt.Sprintf("boot action %s does not target this node", echoName(action)))
	}
	req, err := decodeReport(c.Request().Body)
	if err != nil {
		return err
	}
	rep := Report{Node: ss.rec.Node, Deployment: ss.rec.Deployment, Action: action, Status: req.Status,
		Message: cleanMessage(req.Message), Time: statestore.StoreTime(time.Now()), Image: req.Image}
	stored, err := s.storeReport(c.Request().Context(), rep)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, stored)
}

// storeReport stores a report with its event, and returns it; a report
// equal to the stored one (a retry) writes nothing and returns that one.
func (s *Server) storeReport(ctx context.Context, rep Report) (Report, error) {
	key := reportKey(rep.Node, rep.Deployment, rep.Action)
	var prev Report
	found, err := s.getJSON(ctx, reportKind, collReports, key, &prev)
	if err != nil {
		return Report{}, internal(http.StatusServiceUnavailable, "the state store did not answer; try again", err)
	}
	if found && prev.Status == rep.Status && prev.Message == rep.Message && prev.Server == rep.Server && sameImage(prev.Image, rep.Image) {
		return prev, nil // a retry: already recorded
	}
	raw, err := reportKind.Encode(rep)
	if err != nil {
		return Report{}, err
	}
	level := "info"
	if rep.Status == StatusFailure {
		level = "error"
	}
	msg := fmt.Sprintf("boot action %s: %s", rep.Action, rep.Status)
	if rep.Message != "" {
		msg += ": " + rep.Message
	}
	evOp, err := orchestrator.EventOp(record.Event{Time: rep.Time, Node: rep.Node, Stage: record.StageBootstrap,
		Level: level, Kind: "action", Message: msg})
	if err != nil {
		return Report{}, err
	}
	// The report and its event are one write; it must land even when
	// the node hangs up.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := s.store.Write(wctx, statestore.Put(collReports, key, raw), evOp); err != nil {
		return Report{}, internal(http.StatusServiceUnavailable, "the report could not be stored; send it again", err)
	}
	if fn, _ := s.onReport.Load().(func(string)); fn != nil {
		fn(rep.Node)
	}
	return rep, nil
}

// NotifyReports makes the server call fn with the node's name after it
// stored one of its reports (orchestrator.ReportNotifier): the engine
// wakes the node waiting for them.
func (s *Server) NotifyReports(fn func(node string)) { s.onReport.Store(fn) }

// recordRenderFailure records, as a failure of the action whose asset did
// not render, that the node's assets can't be served in this deployment:
// its bootstrap can't succeed, and BootstrapStatus says so at once. The
// message is the render error, which names no secret value.
func (s *Server) recordRenderFailure(ctx context.Context, rec tokenRecord, re *renderError) error {
	rep := Report{Node: rec.Node, Deployment: rec.Deployment, Action: re.action, Status: StatusFailure, Server: true,
		Message: cleanMessage("the assets could not be rendered: " + re.Error()), Time: statestore.StoreTime(time.Now())}
	_, err := s.storeReport(ctx, rep)
	return err
}

// decodeReport reads a report body strictly: one JSON object, known
// fields only, a known status.
func decodeReport(r io.Reader) (ReportRequest, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return ReportRequest{}, problem(http.StatusRequestEntityTooLarge, fmt.Sprintf("the report is over the limit of %d bytes", mbe.Limit))
		}
		return ReportRequest{}, problem(http.StatusBadRequest, "the report body could not be read")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var req ReportRequest
	if err := dec.Decode(&req); err != nil {
		return ReportRequest{}, problem(http.StatusBadRequest, "the report is not a JSON object {\"status\": \"success\"|\"failure\"|\"running\", \"message\": \"...\"}: "+jsonProblem(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ReportRequest{}, problem(http.StatusBadRequest, "the report has data after its JSON object")
	}
	switch req.Status {
	case StatusRunning, StatusSuccess, StatusFailure:
	default:
		return ReportRequest{}, problem(http.StatusBadRequest, "the report's status must be success, failure or running")
	}
	if err := req.Image.check(); err != nil {
		return ReportRequest{}, err
	}
	return req, nil
}

// jsonProblem describes a decoding error without echoing the body.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("field %s has the wrong type", echoName(te.Field))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the body ends early"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + echoName(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`))
	}
	return "not valid JSON"
}

// nameRE is what a name from the caller must look like to be echoed in
// an answer: a DNS label or a JSON field name. A token never does (its
// prefix has '_'), so a token put in the wrong place is not echoed.
var nameRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]{0,62}$`)

// echoName quotes a name from the caller for an answer, or says "(name
// not shown)" for anything else.
func echoName(s string) string {
	if nameRE.MatchString(s) {
		return `"` + s + `"`
	}
	return "(name not shown)"
}

// cleanMessage keeps a report's message printable, on one line and at
// most maxMessage bytes.
func cleanMessage(m string) string {
	m = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, m)
	m = strings.TrimSpace(m)
	if len(m) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(m[cut]) {
			cut--
		}
		m = m[:cut] + "…"
	}
	return m
}

// BootstrapStatus implements orchestrator.Bootstrapper: Done when every
// signalling boot action that targets the node reported success in this
// deployment (at once when there is none), Failed when one reported
// failure or when the node's assets could not be rendered, InProgress
// otherwise. It says when the node last reported and when its token was
// issued.
func (s *Server) BootstrapStatus(ctx context.Context, d *design.Design, node, deployment string) (orchestrator.BootstrapProgress, error) {
	p := orchestrator.BootstrapProgress{URL: s.baseURL}
	if u, err := s.urlOf(d); err == nil {
		p.URL = u // what the node was told
	}
	n := d.Nodes[node]
	if n == nil {
		return p, drivers.Errorf(drivers.Permanent, "node %s is not in the design", node)
	}
	var signalling []string
	for _, name := range d.BootActionsFor(n) {
		if d.BootActions[name].Spec.Signaling {
			signalling = append(signalling, name)
		}
	}
	if len(signalling) == 0 {
		p.Result = drivers.Done("no signalling boot action targets %s: nothing to wait for", node)
		return p, nil
	}
	recs, err := s.store.List(ctx, collReports, node+"/"+deployment+"/")
	if err != nil {
		return p, drivers.NewError(drivers.Transient, fmt.Errorf("read the boot action reports of %s: %w", node, err))
	}
	got := map[string]Report{}
	for _, r := range recs {
		var rep Report
		if err := reportKind.Decode(r.Key, r.Value, &rep); errors.Is(err, storedrec.ErrNewerVersion) {
			return p, err
		} else if err != nil {
			continue
		}
		if rep.Server && rep.Status == StatusFailure {
			p.Result = drivers.Failed("%s: %s; set the missing secret and `rebootstrap` the node, or correct the design and redeploy it", node, rep.Message)
			return p, nil
		}
		got[rep.Action] = rep
		if rep.Time.After(p.LastReport) {
			p.LastReport = rep.Time
		}
	}
	if p.Issued, err = s.issuedAt(ctx, node, deployment); err != nil {
		return p, err
	}
	p.Result = s.signalled(node, signalling, got)
	return p, nil
}

// issuedAt is when the node's token for the deployment was last issued
// (zero when it has none).
func (s *Server) issuedAt(ctx context.Context, node, deployment string) (time.Time, error) {
	_, cur, _, err := s.currentRecord(ctx, node)
	if err != nil || cur == nil || cur.Deployment != deployment {
		return time.Time{}, err
	}
	return cur.Issued, nil
}

// signalled judges the reports of the signalling actions.
func (s *Server) signalled(node string, signalling []string, got map[string]Report) drivers.Result {
	var waiting []string
	for _, name := range signalling {
		rep, ok := got[name]
		switch {
		case !ok:
			waiting = append(waiting, name+" (no report yet)")
		case rep.Status == StatusFailure:
			msg := rep.Message
			if msg == "" {
				msg = "no message"
			}
			return drivers.Failed("boot action %s failed on %s: %s", name, node, msg)
		case rep.Status != StatusSuccess:
			waiting = append(waiting, name+" ("+rep.Status+")")
		}
	}
	if len(waiting) > 0 {
		return drivers.InProgress(10*time.Second, "waiting for boot action reports from %s: %s", node, strings.Join(waiting, ", "))
	}
	return drivers.Done("every signalling boot action reported success: %s", strings.Join(signalling, ", "))
}

// The engine wakes a node at its reports.
var _ orchestrator.ReportNotifier = (*Server)(nil)
