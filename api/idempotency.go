package api

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/statestore"
)

// Idempotent mutating calls (docs/api.md, "Idempotency-Key").
//
// A client gives a mutating call an Idempotency-Key and sends it again,
// with the same key, when it could not read the answer (a cut
// connection, a 502/503 while the state store's leader changes). The
// server remembers each key of each principal for the retry window: what
// call it was (method, path, the query's digest, the body's HMAC) and its
// answer; the key given to another call is refused (422), as the IETF
// draft (httpapi-idempotency-key-header) and Stripe do. A call
// with a known key is not applied again: the first one's answer is given
// (marked Idempotency-Replayed). The record that the call changed the
// state goes with the call's own Writes, in their transactions
// (statestore.Attachment): a call whose commit was ambiguous has its
// record too, or neither. Its answer follows in a Write of its own; a
// retry that finds the first mark and no answer (the answer was lost
// with the server) is told so (409) rather than applied twice.
const (
	// IdempotencyHeader names the key a client gives a mutating call.
	IdempotencyHeader = "Idempotency-Key"
	// ReplayedHeader marks the answer of an earlier call, answered again.
	ReplayedHeader = "Idempotency-Replayed"
	// MaxIdempotencyKey bounds a key: 1 to 128 of [A-Za-z0-9._:-].
	MaxIdempotencyKey = 128
	// DefaultIdempotencyWindow is how long a key is remembered
	// (Config.IdempotencyWindow).
	DefaultIdempotencyWindow = 24 * time.Hour
	// DefaultIdempotencyRecords bounds the keys remembered, of all
	// principals (Config.IdempotencyRecords): past it the oldest go.
	DefaultIdempotencyRecords = 10000
	// DefaultIdempotencyPrincipalRecords bounds the keys remembered of
	// one principal (Config.IdempotencyPrincipalRecords): past it that
	// principal's oldest go, so one token's calls evict no one else's.
	DefaultIdempotencyPrincipalRecords = 1000
	// MaxKeptAnswer bounds an answer kept for a retry; a larger one is
	// not kept (the retry is told so).
	MaxKeptAnswer = 64 << 10

	collIdem       = "idempotency"        // principal/key -> idemRecord
	collIdemExpiry = "idempotency-expiry" // <expiry unix, 20 digits>/principal/key -> ""
	idemSweepEvery = 64                   // answers kept between sweeps
)

// idemKind is an idemRecord's stored form: it carries its schema version
// (internal/storedrec).
var idemKind = storedrec.NewKind("idempotency record", reflect.TypeFor[idemRecord]())

// idemRecord is what the server remembers of a key.
type idemRecord struct {
	Principal string `json:"principal"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	// Query is the SHA-256 of the call's query parameters, sorted
	// (querySum): a call with other parameters (another ?approve=, say)
	// is another call. "": a record kept before the query was.
	Query   string    `json:"query,omitempty"`
	Expires time.Time `json:"expires"`
	// BodyMAC is the body's HMAC-SHA256 under MACKey's key, a random key
	// of the process that answered: no digest a secret in the body could
	// be guessed from (another process can't check it, and does not).
	BodyMAC string `json:"body_mac,omitempty"`
	MACKey  string `json:"mac_key,omitempty"`
	// Answered: Status and the answer (Answer and Type, or a problem's
	// Detail) are kept, unless NotKept says why not.
	Answered bool   `json:"answered,omitempty"`
	Status   int    `json:"status,omitempty"`
	Type     string `json:"type,omitempty"`
	Answer   string `json:"answer,omitempty"`
	Detail   string `json:"detail,omitempty"`
	NotKept  string `json:"not_kept,omitempty"`
}

// idemState is the keys of the calls in progress here (a retry that
// comes while its first try still runs waits) and the sweep's pace.
type idemState struct {
	mu       sync.Mutex
	busy     map[string]bool
	kept     atomic.Uint64
	sweeping atomic.Bool
	macOnce  sync.Once
	macKey   []byte
	macKeyID string
}

// mac is a new HMAC of the process's key, and the key's ID.
func (st *idemState) mac() (hash.Hash, string) {
	st.macOnce.Do(func() {
		st.macKey = []byte(rand.Text() + rand.Text())
		id := sha256.Sum256(st.macKey)
		st.macKeyID = hex.EncodeToString(id[:8])
	})
	return hmac.New(sha256.New, st.macKey), st.macKeyID
}

func (st *idemState) claim(k string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.busy[k] {
		return false
	}
	if st.busy == nil {
		st.busy = map[string]bool{}
	}
	st.busy[k] = true
	return true
}

func (st *idemState) release(k string) {
	st.mu.Lock()
	delete(st.busy, k)
	st.mu.Unlock()
}

// idempotent is the Idempotency-Key middleware of a mutating route
// (after the token check and the body limit).
func (s *Server) idempotent(r *route) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			key := c.Request().Header.Get(IdempotencyHeader)
			if key == "" {
				return next(c)
			}
			if !safeIdempotencyKey(key) {
				return problem(http.StatusBadRequest, fmt.Sprintf("the %s header must be 1 to %d characters of A-Z, a-z, 0-9, '.', '_', ':' and '-' (a random one per call, e.g. a UUID)", IdempotencyHeader, MaxIdempotencyKey))
			}
			rk := idemScope(principal(c)) + "/" + key
			if !s.idem.claim(rk) {
				c.Response().Header().Set("Retry-After", "1")
				c.Response().Header().Set(NotRun, "1")
				return problem(http.StatusConflict, "a call with this "+IdempotencyHeader+" is in progress: try again when it has ended")
			}
			defer s.idem.release(rk)
			return s.once(c, r, rk, next)
		}
	}
}

// idemScope is whose keys a key is among: the token's ID; for the local
// socket's callers, who share one ID, the user's name too.
func idemScope(p Principal) string {
	if p.ID == LocalPrincipalID {
		return p.ID + ":" + p.Name
	}
	return p.ID
}

func safeIdempotencyKey(k string) bool {
	if k == "" || len(k) > MaxIdempotencyKey {
		return false
	}
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// once runs the call unless its key is known: then it answers what the
// first call answered.
func (s *Server) once(c echo.Context, r *route, rk string, next echo.HandlerFunc) error {
	req := c.Request()
	ctx := req.Context()
	prev, found, err := s.idemRecord(ctx, rk)
	if err != nil {
		return err
	}
	sum, keyID := s.idem.mac()
	body := io.TeeReader(req.Body, sum)
	if found {
		_, _ = io.Copy(io.Discard, body) // bounded by the route's body limit
		return s.replay(c, r, prev, keyID, hex.EncodeToString(sum.Sum(nil)))
	}
	rec := idemRecord{Principal: idemScope(principal(c)), Method: r.Method, Path: req.URL.Path, Query: querySum(req), MACKey: keyID,
		Expires: time.Now().Add(cmp.Or(s.cfg.IdempotencyWindow, DefaultIdempotencyWindow)).UTC()}
	applied, err := idemOps(rk, rec)
	if err != nil {
		return err
	}
	if !prev.Expires.IsZero() { // an expired record of the key: its index entry goes
		applied = append(applied, statestore.Delete(collIdemExpiry, expiryKey(prev.Expires, rk)))
	}
	att := statestore.NewAttachment(applied...)
	req.Body = readCloser{body, req.Body}
	c.SetRequest(req.WithContext(statestore.WithAttachment(ctx, att)))
	cw := &captureWriter{ResponseWriter: c.Response().Writer}
	c.Response().Writer = cw
	herr := next(c)
	att.Off()
	c.Response().Writer = cw.ResponseWriter
	_, _ = io.Copy(io.Discard, body)
	s.keepAnswer(c, r, rk, rec, sum, cw, herr)
	return herr
}

// keepAnswer remembers the call's answer for its retries: a success. Not
// a refusal (4xx: nothing was applied; a retry runs again and is refused
// again, or passes if the state changed), nor a failure that may pass
// (5xx): a retry runs the call unless its record says it was applied. So
// calls that change nothing fill no records (one token's refused calls
// could otherwise evict everyone's keys).
func (s *Server) keepAnswer(c echo.Context, r *route, rk string, rec idemRecord, sum hash.Hash, cw *captureWriter, herr error) {
	rec.Status = c.Response().Status
	if herr != nil {
		rec.Status, rec.Detail = statusOf(herr)
	}
	if rec.Status >= 400 {
		return
	}
	rec.Answered, rec.BodyMAC = true, hex.EncodeToString(sum.Sum(nil))
	switch {
	case r.SecretAnswer: // a retry is told the call was made, never given the answer again
		rec.NotKept, rec.Detail = "it holds a secret", ""
	case cw.over:
		rec.NotKept = fmt.Sprintf("it is over %d bytes", MaxKeptAnswer)
	case herr == nil:
		rec.Type, rec.Answer = c.Response().Header().Get(echo.HeaderContentType), cw.buf.String()
	}
	ops, err := idemOps(rk, rec)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), 10*time.Second)
	defer cancel()
	if err == nil {
		_, err = s.cfg.Store.Write(ctx, ops...)
	}
	if err != nil {
		s.log.Warn().Err(err).Str("route", r.Path).Msg("the answer of a call with an Idempotency-Key was not kept: its retry will be told it was applied, not given the answer")
		return
	}
	if s.idem.kept.Add(1)%idemSweepEvery == 0 && s.idem.sweeping.CompareAndSwap(false, true) {
		go s.sweepIdem()
	}
}

// replay answers a call whose key is known.
func (s *Server) replay(c echo.Context, r *route, prev idemRecord, keyID, bodyMAC string) error {
	key := c.Request().Header.Get(IdempotencyHeader)
	switch {
	case prev.Method != r.Method || prev.Path != c.Request().URL.Path:
		return problem(http.StatusUnprocessableEntity, fmt.Sprintf("%s %q was given to %s %s: give each call a key of its own", IdempotencyHeader, key, prev.Method, prev.Path))
	case prev.Query != "" && prev.Query != querySum(c.Request()):
		return problem(http.StatusUnprocessableEntity, fmt.Sprintf("%s %q was given to a call with other query parameters: give each call a key of its own", IdempotencyHeader, key))
	case !prev.Answered:
		return problem(http.StatusConflict, fmt.Sprintf("the call with %s %q was applied, but its answer was lost: look at the state it changed before calling again (with a new key)", IdempotencyHeader, key))
	case prev.MACKey == keyID && prev.BodyMAC != bodyMAC:
		return problem(http.StatusUnprocessableEntity, fmt.Sprintf("%s %q was given to a call with another body: give each call a key of its own", IdempotencyHeader, key))
	case prev.NotKept != "":
		return problem(http.StatusConflict, fmt.Sprintf("the call with %s %q was made (HTTP %d); its answer is not kept (%s): look at the state it changed", IdempotencyHeader, key, prev.Status, prev.NotKept))
	}
	c.Response().Header().Set(ReplayedHeader, "true")
	c.Set(auditDetailKey, "replayed: the answer of an earlier call with the same "+IdempotencyHeader)
	switch {
	case prev.Status >= 400:
		return problem(prev.Status, prev.Detail)
	case prev.Answer == "" && prev.Type == "":
		return c.NoContent(prev.Status)
	}
	return c.Blob(prev.Status, prev.Type, []byte(prev.Answer))
}

// querySum is the SHA-256 of req's query parameters in a canonical order
// (sorted by name; an unparsable query as it is).
func querySum(req *http.Request) string {
	q := req.URL.RawQuery
	if v, err := url.ParseQuery(q); err == nil {
		q = v.Encode()
	}
	sum := sha256.Sum256([]byte(q))
	return hex.EncodeToString(sum[:])
}

// idemRecord reads a key's record; an expired one is not found.
func (s *Server) idemRecord(ctx context.Context, rk string) (idemRecord, bool, error) {
	var rec idemRecord
	v, err := s.cfg.Store.Get(ctx, collIdem, rk)
	if errors.Is(err, statestore.ErrNoRecord) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, err
	}
	if err := idemKind.Decode(rk, v, &rec); errors.Is(err, storedrec.ErrNewerVersion) {
		return rec, false, err
	} else if err != nil {
		return rec, false, fmt.Errorf("the idempotency record of %q is damaged: %w", rk, err)
	}
	return rec, time.Now().Before(rec.Expires), nil
}

// idemOps write a key's record and its expiry index entry.
func idemOps(rk string, rec idemRecord) ([]statestore.Op, error) {
	v, err := idemKind.Encode(rec)
	if err != nil {
		return nil, err
	}
	return []statestore.Op{statestore.Put(collIdem, rk, v), statestore.Put(collIdemExpiry, expiryKey(rec.Expires, rk), []byte{})}, nil
}

func expiryKey(t time.Time, rk string) string { return fmt.Sprintf("%020d/%s", t.Unix(), rk) }

// sweepIdem removes the expired keys' records, the oldest past
// Config.IdempotencyRecords, and each principal's oldest past
// Config.IdempotencyPrincipalRecords (idemExcess).
func (s *Server) sweepIdem() {
	defer s.idem.sweeping.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	idx, err := s.cfg.Store.List(ctx, collIdemExpiry, "")
	if err != nil {
		s.log.Warn().Err(err).Msg("idempotency records: sweep: the expiry index could not be read")
		return
	}
	gone := s.idemExcess(idx)
	var ops []statestore.Op
	for i, key := range gone {
		_, rk, _ := strings.Cut(key, "/")
		ops = append(ops, statestore.Delete(collIdem, rk), statestore.Delete(collIdemExpiry, key))
		if len(ops) >= 100 || i == len(gone)-1 {
			if _, err := s.cfg.Store.Write(ctx, ops...); err != nil {
				s.log.Warn().Err(err).Msg("idempotency records: sweep failed")
				return
			}
			ops = nil
		}
	}
	if len(ops) > 0 {
		if _, err := s.cfg.Store.Write(ctx, ops...); err != nil {
			s.log.Warn().Err(err).Msg("idempotency records: sweep failed")
		}
	}
}

// idemExcess are the keys of the expiry index idx (sorted by expiry, to
// the second) whose records go: expired, each principal's oldest past its
// own cap, then, of the rest, the oldest past the cap of all principals.
func (s *Server) idemExcess(idx []statestore.Record) []string {
	each := cmp.Or(s.cfg.IdempotencyPrincipalRecords, DefaultIdempotencyPrincipalRecords)
	per := map[string]int{}
	for _, x := range idx {
		per[idemPrincipal(x.Key)]++
	}
	now := time.Now().Unix()
	var gone, kept []string
	for _, x := range idx {
		at, _, _ := strings.Cut(x.Key, "/")
		p := idemPrincipal(x.Key)
		if exp, _ := strconv.ParseInt(at, 10, 64); exp > now && per[p] <= each {
			kept = append(kept, x.Key)
			continue
		}
		gone = append(gone, x.Key)
		per[p]--
	}
	excess := len(kept) - cmp.Or(s.cfg.IdempotencyRecords, DefaultIdempotencyRecords)
	return append(gone, kept[:max(0, excess)]...)
}

// idemPrincipal is whose key an expiry index entry
// (<expiry>/<principal>/<key>) is: a key holds no '/'.
func idemPrincipal(indexKey string) string {
	_, rk, _ := strings.Cut(indexKey, "/")
	if i := strings.LastIndexByte(rk, '/'); i >= 0 {
		return rk[:i]
	}
	return rk
}

// readCloser reads r and closes c (the request body read through a hash).
type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

// captureWriter keeps a copy of an answer's body, up to MaxKeptAnswer.
type captureWriter struct {
	http.ResponseWriter
	buf  strings.Builder
	over bool
}

func (w *captureWriter) Write(b []byte) (int, error) {
	if !w.over {
		if w.buf.Len()+len(b) > MaxKeptAnswer {
			w.over = true
			w.buf.Reset()
		} else {
			w.buf.Write(b)
		}
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes a flush on.
func (w *captureWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// idempotencyParameter documents the header (openapi.go).
func idempotencyParameter() *openapi3.Parameter {
	sc := openapi3.NewStringSchema().WithMinLength(1).WithMaxLength(MaxIdempotencyKey).WithPattern(`^[A-Za-z0-9._:-]+$`)
	p := openapi3.NewHeaderParameter(IdempotencyHeader).WithSchema(sc)
	p.Description = "A key of the client's, the same on each retry of one call: a retry is answered the first call's answer " +
		"(marked " + ReplayedHeader + ") without applying it again, for 24 hours by default (docs/api.md)."
	return p
}
