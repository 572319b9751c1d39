package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/statestore"
)

// Audit bounds.
const (
	// MaxAuditRecordBytes bounds one audit record's JSON.
	MaxAuditRecordBytes = 3072
	// MaxAuditPageRecords and MaxAuditPageBytes bound a page of GET /audit.
	MaxAuditPageRecords = 1000
	MaxAuditPageBytes   = 1 << 20
)

// Bounds of the audit record's fields, in bytes of their JSON encoding.
// With the keys, time and numbers they stay under MaxAuditRecordBytes.
const (
	maxAuditID     = 64
	maxAuditShort  = 16 // method, role, outcome
	maxAuditRoute  = 128
	maxAuditPath   = 256
	maxAuditDetail = 512
	// What the call did: the action, verb, task and resolution are
	// short names; at most maxAuditTargets targets of maxAuditTarget
	// each (TargetCount says how many there were).
	maxAuditAction  = 48
	maxAuditTarget  = 64
	maxAuditTargets = 8
)

const logAudit = "audit"

// auditKind is an audit record's stored form: it carries its schema
// version (internal/storedrec), and one a newer release wrote is refused.
var auditKind = storedrec.NewKind("audit record", reflect.TypeFor[AuditRecord]())

// bound cuts every text field of r to its bound.
func bound(r *AuditRecord) {
	for _, f := range []struct {
		p *string
		n int
	}{{&r.RequestID, maxAuditID}, {&r.ClientRequestID, maxAuditID}, {&r.Who.ID, maxAuditID}, {&r.Who.Name, maxAuditID},
		{(*string)(&r.Who.Role), maxAuditShort}, {&r.Method, maxAuditShort}, {&r.Route, maxAuditRoute},
		{&r.Path, maxAuditPath}, {&r.Remote, maxAuditID}, {&r.Outcome, maxAuditShort}, {&r.Detail, maxAuditDetail},
		{&r.Action, maxAuditAction}, {&r.Verb, maxAuditAction}, {&r.Task, maxAuditID}, {&r.Resolution, maxAuditAction}} {
		*f.p = clampJSON(*f.p, f.n)
	}
	if len(r.Targets) > maxAuditTargets {
		r.TargetCount = max(r.TargetCount, len(r.Targets))
		r.Targets = r.Targets[:maxAuditTargets:maxAuditTargets]
	}
	for i := range r.Targets {
		r.Targets[i] = clampJSON(r.Targets[i], maxAuditTarget)
	}
	r.TargetCount = max(r.TargetCount, len(r.Targets))
}

// AuditWhat is what a mutating call did, for its audit record.
type AuditWhat struct {
	// Action names the operation: task.create, task.<verb>, node.<verb>,
	// node.rebootstrap, design.apply, secret.put, secret.delete,
	// token.create, token.revoke, drift.resolve, ...
	Action string
	// Verb is the task's action (deploy_nodes, power_on, ...) for
	// task.create, the verb for a task or node verb.
	Verb string
	// Task is the task the call created or acted on; its events carry
	// the correlation ID of the call that created it.
	Task string
	// Targets names what the call acted on: nodes, a secret's name (never
	// its value), a token's ID, a design revision. Only the first
	// maxAuditTargets are kept; the record's target_count says how many.
	Targets []string
	// Resolution is how a drift was resolved.
	Resolution string
}

const auditWhatKey = "slipway.audit.what"

// auditWhat notes, for the call's audit record, what it did. A handler
// may call it more than once (what it was asked first, what it did
// once done): the last call counts. Targets are copied, only the first
// maxAuditTargets of them.
func auditWhat(c echo.Context, w AuditWhat) {
	n := len(w.Targets)
	w.Targets = append([]string(nil), w.Targets[:min(n, maxAuditTargets)]...)
	c.Set(auditWhatKey, auditNoted{w, n})
}

// requestIDOf is the server's ID of the call (its X-Request-Id answer
// header and audit record's request_id): the correlation ID of the task
// the call creates.
func requestIDOf(c echo.Context) string { return c.Response().Header().Get(echo.HeaderXRequestID) }

type auditNoted struct {
	AuditWhat
	count int
}

// clampJSON returns s with invalid UTF-8 and control characters replaced
// by '?', cut so that its JSON encoding (json.Marshal's, quotes aside)
// takes at most n bytes; a cut string ends in "…".
func clampJSON(s string, n int) string {
	limit := n
	if jsonLen(s) > n {
		limit = n - len("…")
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		r = safeRune(r)
		if used += jsonCost(r); used > limit {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

func jsonLen(s string) int {
	n := 0
	for _, r := range s {
		n += jsonCost(safeRune(r))
	}
	return n
}

func safeRune(r rune) rune {
	if r == utf8.RuneError || unicode.IsControl(r) {
		return '?'
	}
	return r
}

// jsonCost is the bytes json.Marshal writes for r (HTML escaping on).
func jsonCost(r rune) int {
	switch r {
	case '"', '\\':
		return 2
	case '<', '>', '&', '\u2028', '\u2029':
		return 6
	}
	return utf8.RuneLen(r)
}

// audit writes one record for the call, whatever its outcome;
// unauthenticated refusals are sampled (see refusalSampler).
func (s *Server) audit(r *route) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			err := next(c)
			rec := auditRecord(c, r, err)
			if rec.Status == http.StatusUnauthorized && rec.Who.ID == "" {
				ok, dropped := s.refusals.admit(rec.Remote)
				if !ok {
					s.metrics.auditDropped.Inc()
					return err
				}
				rec.Suppressed = dropped
			}
			if werr := s.writeAudit(c, rec); werr != nil && err == nil {
				return problem(http.StatusInternalServerError, "the audit record could not be written; the change was made: check the state store")
			}
			return err
		}
	}
}

// auditRecord describes the call, bounded.
func auditRecord(c echo.Context, r *route, err error) AuditRecord {
	status := c.Response().Status
	detail, _ := c.Get(auditDetailKey).(string) // what a handler notes (bindings.go)
	if err != nil {
		status, detail = statusOf(err)
	}
	outcome := "ok"
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		outcome = "denied"
	case status >= 400:
		outcome = "failed"
	}
	rec := AuditRecord{Time: time.Now().UTC(), RequestID: c.Response().Header().Get(echo.HeaderXRequestID),
		ClientRequestID: clientRequestID(c), Who: principal(c), Method: r.Method, Route: r.Path,
		Path: shownPath(c), Remote: c.RealIP(), Status: status, Outcome: outcome, Detail: detail}
	if w, ok := c.Get(auditWhatKey).(auditNoted); ok {
		rec.Action, rec.Verb, rec.Task, rec.Resolution = w.Action, w.Verb, w.Task, w.Resolution
		rec.Targets, rec.TargetCount = w.Targets, w.count
	}
	bound(&rec)
	return rec
}

func (s *Server) writeAudit(c echo.Context, rec AuditRecord) error {
	return s.writeAuditCtx(c.Request().Context(), rec)
}

// writeAuditCtx writes rec, also when ctx has ended.
func (s *Server) writeAuditCtx(ctx context.Context, rec AuditRecord) error {
	raw, _ := auditKind.Encode(rec)
	// The audit must be written even when the client went away.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, err := s.cfg.Store.Write(ctx, statestore.Append(logAudit, raw))
	if err != nil {
		s.log.Error().Err(err).Str("request_id", rec.RequestID).Msg("audit record not written")
	}
	return err
}

// auditPageSlack is what the page's envelope takes besides its records.
const auditPageSlack = 128

// listAudit: ?since=SEQ&limit=N, a page of at most N (≤
// MaxAuditPageRecords) records and MaxAuditPageBytes.
func (s *Server) listAudit(c echo.Context) error {
	since, err := uintParam(c, "since")
	if err != nil {
		return err
	}
	_, limit, err := paging(c)
	if err != nil {
		return err
	}
	if c.QueryParam("limit") == "" || limit > MaxAuditPageRecords {
		limit = MaxAuditPageRecords
	}
	entries, err := s.cfg.Store.ReadLog(c.Request().Context(), logAudit, since, limit+1)
	if err != nil {
		return err
	}
	p, err := auditPage(entries, since, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

// auditPage takes up to limit of entries, within MaxAuditPageBytes (at
// least one, so that the cursor moves).
func auditPage(entries []statestore.LogEntry, since uint64, limit int) (AuditPage, error) {
	p := AuditPage{Items: []AuditRecord{}, Next: since}
	size := auditPageSlack
	for i, e := range entries {
		var r AuditRecord
		if err := auditKind.Decode(fmt.Sprint(e.Seq), e.Value, &r); err != nil {
			return p, fmt.Errorf("audit record %d is unreadable: %w; report it (the log is kept as written)", e.Seq, err)
		}
		r.Seq = e.Seq
		bound(&r) // records written before the bounds
		b, _ := json.Marshal(r)
		if i == limit || (len(p.Items) > 0 && size+len(b)+1 > MaxAuditPageBytes) {
			p.More = true
			break
		}
		size += len(b) + 1
		p.Items = append(p.Items, r)
		p.Next = e.Seq
	}
	return p, nil
}
