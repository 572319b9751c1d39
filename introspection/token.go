package introspection

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/statestore"
)

const (
	// TokenPrefix starts every node token.
	TokenPrefix = "sni_"
	// TokenLen is the length of a node token: the prefix and 43
	// base64url characters (an HMAC-SHA256).
	TokenLen = len(TokenPrefix) + 43

	collTokens  = "node_tokens"
	collTokenOf = "node_token_of"
	collReports = "node_actions"
	logEvents   = "events"
)

// errUnauthorized is the one answer to a missing, malformed, unknown,
// rotated or revoked token.
var errUnauthorized = problem(401, "no valid node token: send the token of this node's deployment (Authorization: Bearer <token>); tokens are rotated on every deployment and revoked when the machine is released")

// tokenRecord is what the state keeps of an issued token (never the token).
type tokenRecord struct {
	Node       string    `json:"node"`
	Deployment string    `json:"deployment"`
	Revision   string    `json:"revision"`
	Issued     time.Time `json:"issued"`
	// Issue counts the reissues of the deployment's token (0: the first).
	Issue int `json:"issue,omitempty"`
}

// Token returns the node's token for a deployment, as first issued. It
// is deterministic (derived from the key) and is what UserData hands the
// node; it is exported for the virtual lab, tests and benchmarks, which
// need the tokens of many nodes without parsing user data. A token is
// only accepted after UserData issued it for that deployment, and until
// the deployment ends, the next one is issued or Reissue replaces it.
func (s *Server) Token(node, deployment string) string { return s.tokenFor(node, deployment, 0) }

// tokenFor derives the token of a deployment's issue-th reissue (names
// hold no NUL: every input gives its own token).
func (s *Server) tokenFor(node, deployment string, issue int) string {
	var enc [TokenLen]byte
	s.encodedToken(&enc, node, deployment, issue)
	return string(enc[:])
}

// encodedToken writes the token of (node, deployment, issue) into enc:
// TokenPrefix and the base64url HMAC-SHA256 under the key of the node's
// name, a NUL, the deployment, and for a reissue a NUL and its number. The
// HMAC states are pooled (keyed once; Reset returns to the keyed state),
// so deriving a token allocates nothing.
func (s *Server) encodedToken(enc *[TokenLen]byte, node, deployment string, issue int) {
	m := s.macs.Get().(*macState)
	m.h.Reset()
	m.buf = append(m.buf[:0], node...)
	m.buf = append(m.buf, 0)
	m.buf = append(m.buf, deployment...)
	if issue > 0 {
		m.buf = append(m.buf, 0)
		m.buf = strconv.AppendInt(m.buf, int64(issue), 10)
	}
	m.h.Write(m.buf)
	m.sum = m.h.Sum(m.sum[:0])
	copy(enc[:], TokenPrefix)
	base64.RawURLEncoding.Encode(enc[len(TokenPrefix):], m.sum)
	s.macs.Put(m)
}

// macState is a keyed HMAC-SHA256 and its buffers.
type macState struct {
	h        hash.Hash
	buf, sum []byte
}

func newMACs(key []byte) *sync.Pool {
	return &sync.Pool{New: func() any {
		return &macState{h: hmac.New(sha256.New, key), buf: make([]byte, 0, 256), sum: make([]byte, 0, sha256.Size)}
	}}
}

// tokenOf is the token a record was issued for.
func (s *Server) tokenOf(rec tokenRecord) string {
	return s.tokenFor(rec.Node, rec.Deployment, rec.Issue)
}

// tokenHash is the SHA-256 of a token: what the state keeps (in hex, as
// the key of its record) and what the cache is keyed by.
type tokenHash [sha256.Size]byte

func hashOf(tok string) tokenHash {
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(tok), len(tok))) // read only: no copy of the token
}

func (h tokenHash) String() string { return hex.EncodeToString(h[:]) }

func hashToken(tok string) string { return hashOf(tok).String() }

// wellFormed reports whether s has the form of a token (the form is
// public; checking it says nothing about any token's value): the prefix
// and 43 base64url characters, which always decode to 32 bytes.
func wellFormed(s string) bool {
	if len(s) != TokenLen || !strings.HasPrefix(s, TokenPrefix) {
		return false
	}
	var bad uint8 // no branch a character: a token's are random
	for i := len(TokenPrefix); i < len(s); i++ {
		bad |= notBase64URL[s[i]]
	}
	return bad == 0
}

// notBase64URL is 1 at the bytes that are not base64url characters
// (A-Z, a-z, 0-9, '-' and '_').
var notBase64URL = func() (t [256]uint8) {
	for c := range t {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			t[c] = 1
		}
	}
	return t
}()

// checkName rejects a node or deployment name that could make two
// (node, deployment) pairs derive the same token, or break a record key.
func checkName(what, s string) error {
	if s == "" || len(s) > 253 || strings.ContainsAny(s, "\x00/") {
		return fmt.Errorf("introspection: %s %q: give 1..253 characters without NUL or '/'", what, s)
	}
	return nil
}

// issue records the node's token for a deployment issued from revision,
// with self, the node's /v1/self answer rendered from it (renderSelf, kept
// in the record: withSelf), replacing (revoking) the token of any other
// deployment of the node and dropping that deployment's reports. Issuing
// again for the same deployment and revision writes nothing, unless the
// record carries no answer of this render version (written by an older
// version): then the same record is written with it.
func (s *Server) issue(ctx context.Context, node, deployment, revision string, self []byte) (string, error) {
	if err := checkName("node", node); err != nil {
		return "", drivers.NewError(drivers.Permanent, err)
	}
	if err := checkName("deployment", deployment); err != nil {
		return "", drivers.NewError(drivers.Permanent, err)
	}
	unlock := s.locks.lock(node)
	defer unlock()
	old, cur, answered, err := s.currentRecord(ctx, node)
	if err != nil {
		return "", err
	}
	rec := tokenRecord{Node: node, Deployment: deployment, Revision: revision, Issued: statestore.StoreTime(time.Now())}
	if cur != nil && cur.Deployment == deployment { // the same deployment keeps its token
		if cur.Revision == revision && answered {
			return s.tokenOf(*cur), nil
		}
		rec.Issued, rec.Issue = cur.Issued, cur.Issue
	}
	tok := s.tokenOf(rec)
	h := hashToken(tok)
	raw, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	ops := []statestore.Op{statestore.Put(collTokens, h, withSelf(raw, self)), statestore.Put(collTokenOf, node, []byte(h))}
	if old != "" && old != h {
		ops = append(ops, statestore.Delete(collTokens, old))
		stale, err := s.reportKeys(ctx, node, func(dep string) bool { return dep != deployment })
		if err != nil {
			return "", err
		}
		for _, k := range stale {
			ops = append(ops, statestore.Delete(collReports, k))
		}
	}
	if _, err := s.store.Write(ctx, ops...); err != nil {
		return "", drivers.NewError(drivers.Transient, fmt.Errorf("store the token of node %s: %w", node, err))
	}
	s.tokens.forget(old, h)
	return tok, nil
}

// currentRecord returns the hash and the record of the node's token (nil
// when it has none), and whether the record carries its /v1/self answer
// of this render version; the caller holds the node's lock.
func (s *Server) currentRecord(ctx context.Context, node string) (string, *tokenRecord, bool, error) {
	h, err := s.getString(ctx, collTokenOf, node)
	if err != nil || h == "" {
		return h, nil, false, err
	}
	cur, self, found, err := s.getRecord(ctx, h)
	if err != nil || !found || cur.Node != node {
		return h, nil, false, err
	}
	return h, &cur, self != nil, nil
}

// getRecord reads the token record whose key is h, and the /v1/self
// answer it carries (nil: none of this render version); false when
// absent.
func (s *Server) getRecord(ctx context.Context, h string) (tokenRecord, []byte, bool, error) {
	rec, self, err := s.loadRecord(ctx, h)
	var bad badRecordError
	switch {
	case errors.Is(err, statestore.ErrNoRecord):
		return rec, nil, false, nil
	case errors.As(err, &bad):
		return rec, nil, false, bad.err
	case err != nil:
		return rec, nil, false, drivers.NewError(drivers.Transient, fmt.Errorf("read %s: %w", collTokens, err))
	}
	return rec, self, true, nil
}

// loadRecord reads and decodes the token record whose key is h, with a
// copy of the /v1/self answer it carries (nil: none of this render
// version). The store lends the record when it can
// (statestore.RecordViewer): only the answer and the record's fields are
// copied out of it. An error wraps statestore.ErrNoRecord when the record
// is absent, is a badRecordError when it does not decode, else is the
// store's.
func (s *Server) loadRecord(ctx context.Context, h string) (tokenRecord, []byte, error) {
	var rec tokenRecord
	var self []byte
	decode := func(b []byte, lent bool) error {
		cut, answer, ok := cutSelf(b)
		// The record's fields decoded from the stored bytes (their
		// strings copied once, together), else from a copy closed with
		// its brace.
		if !ok || !decodeRecordOpen(string(b[:cut]), &rec) {
			raw := b
			if ok {
				raw = append(b[:cut:cut], '}')
			}
			if err := decodeRecord(raw, &rec); err != nil {
				return badRecordError{fmt.Errorf("decode a record of %s: %w", collTokens, err)}
			}
		}
		if answer != nil && lent {
			answer = bytes.Clone(answer)
		}
		self = answer
		return nil
	}
	var err error
	if s.viewer != nil {
		err = s.viewer.ViewRecord(ctx, collTokens, h, func(v []byte) error { return decode(v, true) })
	} else {
		var b []byte
		if b, err = s.store.Get(ctx, collTokens, h); err == nil {
			err = decode(b, false)
		}
	}
	if err != nil {
		return tokenRecord{}, nil, err
	}
	return rec, self, nil
}

// badRecordError is a stored token record that does not decode.
type badRecordError struct{ err error }

func (e badRecordError) Error() string { return e.err.Error() }
func (e badRecordError) Unwrap() error { return e.err }

// revoke deletes the node's token and reports: later calls get 401.
func (s *Server) revoke(ctx context.Context, node string) error {
	unlock := s.locks.lock(node)
	defer unlock()
	old, err := s.getString(ctx, collTokenOf, node)
	if err != nil {
		return err
	}
	var ops []statestore.Op
	if old != "" {
		ops = append(ops, statestore.Delete(collTokens, old), statestore.Delete(collTokenOf, node))
	}
	keys, err := s.reportKeys(ctx, node, func(string) bool { return true })
	if err != nil {
		return err
	}
	for _, k := range keys {
		ops = append(ops, statestore.Delete(collReports, k))
	}
	if len(ops) == 0 {
		return nil
	}
	if _, err := s.store.Write(ctx, ops...); err != nil {
		return drivers.NewError(drivers.Transient, fmt.Errorf("revoke the token of node %s: %w", node, err))
	}
	s.tokens.forget(old)
	return nil
}

// reportKeys lists the keys of the node's reports whose deployment pick
// selects.
func (s *Server) reportKeys(ctx context.Context, node string, pick func(deployment string) bool) ([]string, error) {
	recs, err := s.store.List(ctx, collReports, node+"/")
	if err != nil {
		return nil, drivers.NewError(drivers.Transient, fmt.Errorf("list the reports of node %s: %w", node, err))
	}
	var out []string
	for _, r := range recs {
		dep, _, _ := strings.Cut(strings.TrimPrefix(r.Key, node+"/"), "/")
		if pick(dep) {
			out = append(out, r.Key)
		}
	}
	return out, nil
}

// verify returns the record of a presented token (see authenticateToken).
func (s *Server) verify(ctx context.Context, presented string) (tokenRecord, error) {
	if !wellFormed(presented) {
		return tokenRecord{}, errUnauthorized
	}
	h := hashOf(presented)
	if ss, ok := s.tokens.get(h); ok {
		return ss.rec, nil
	}
	return s.verifyStored(ctx, presented, h)
}

// verifyStored reads the record of a presented token by its hash, so the
// lookup compares hashes, never the secret; the record found is then
// checked against the token recomputed from the key, in constant time.
// Any failure is errUnauthorized, except a store that does not answer
// (503).
func (s *Server) verifyStored(ctx context.Context, presented string, h tokenHash) (tokenRecord, error) {
	rec, _, err := s.verifyStoredSelf(ctx, presented, h)
	return rec, err
}

// verifyStoredSelf is verifyStored, also returning the /v1/self answer
// the record carries (nil: none of this render version).
func (s *Server) verifyStoredSelf(ctx context.Context, presented string, h tokenHash) (tokenRecord, []byte, error) {
	var key [2 * sha256.Size]byte
	hex.Encode(key[:], h[:])
	rec, self, err := s.loadRecord(ctx, string(key[:]))
	var bad badRecordError
	switch {
	case errors.Is(err, statestore.ErrNoRecord):
		return tokenRecord{}, nil, errUnauthorized
	case errors.As(err, &bad):
		return tokenRecord{}, nil, internal(503, "the state store did not answer; try again", bad.err)
	case err != nil:
		return tokenRecord{}, nil, internal(503, "the state store did not answer; try again",
			drivers.NewError(drivers.Transient, fmt.Errorf("read %s: %w", collTokens, err)))
	}
	if !s.derives(rec, presented) {
		// A record the key did not derive: written by someone else, or
		// the key changed since it was issued.
		s.log.Warn().Str("node", rec.Node).Str("deployment", rec.Deployment).
			Msg("a stored node token does not match the key: refused (was the introspection key changed?)")
		return tokenRecord{}, nil, errUnauthorized
	}
	return rec, self, nil
}

// derives reports, in constant time, whether presented is the token the
// key derives for rec.
func (s *Server) derives(rec tokenRecord, presented string) bool {
	var want [TokenLen]byte
	s.encodedToken(&want, rec.Node, rec.Deployment, rec.Issue)
	return subtle.ConstantTimeCompare(want[:], unsafe.Slice(unsafe.StringData(presented), len(presented))) == 1
}

// answerFromStore hands sink the /v1/self answer of a presented token
// straight from its stored record, lent (not kept), inside the store's
// read, once the record checks against the key. Nothing is cached: a
// token's first answer keeps no copy in memory, its next request caches
// one (authenticateToken). false when the
// store lends no records, the record is absent, carries no answer of this
// render version, or does not check (the caller's other path then
// answers, and logs, those).
func (s *Server) answerFromStore(ctx context.Context, presented string, h tokenHash, sink answerSink) bool {
	if s.viewer == nil {
		return false
	}
	v := storeViews.Get().(*storeView)
	v.s, v.presented, v.sink, v.served = s, presented, sink, false
	hex.Encode(v.key[:], h[:])
	_ = s.viewer.ViewRecord(ctx, collTokens, unsafe.String(&v.key[0], len(v.key)), v.fn)
	served := v.served
	*v = storeView{key: v.key, fn: v.fn}
	storeViews.Put(v)
	return served
}

// storeView is answerFromStore's read of one record: its fields and the
// function the store calls, bound once, so that a read allocates no
// closure. Pooled; its fields are cleared before it goes back.
type storeView struct {
	s         *Server
	presented string
	sink      answerSink
	served    bool
	key       [2 * sha256.Size]byte // the record's key (hex), the store only reads it
	fn        func(v []byte) error
}

var storeViews = sync.Pool{New: func() any {
	v := new(storeView)
	v.fn = v.view
	return v
}}

// view hands the sink the answer of a stored record (v, lent by the
// store) that checks against the presented token.
func (v *storeView) view(b []byte) error {
	var rec tokenRecord
	cut, answer, ok := cutSelf(b)
	// The record's strings are views of the stored bytes, not copies:
	// rec is only read here, inside the store's read.
	if ok && answer != nil && decodeRecordOpen(unsafe.String(unsafe.SliceData(b), cut), &rec) && v.s.derives(rec, v.presented) {
		v.sink.put(answer, false)
		v.served = true
	}
	return nil
}

// authenticateToken returns the session of a presented token: from the
// cache when its hash is there (an entry is only cached once its record
// was read from the store and checked against the key, and issue, reissue
// and revoke drop it before they return), else read and checked
// (verifyStored) and cached. A session read from the store holds the
// /v1/self answer its record carries (rendered when the token was
// issued), and no design: nothing else is looked up. One whose record
// carries none of this render version (issued by an older version), or
// asked for withDesign, holds its design revision and node (loaded, or
// taken from the design cache), from which its answer is rendered when
// needed.
func (s *Server) authenticateToken(ctx context.Context, presented string, withDesign bool) (*session, error) {
	if !wellFormed(presented) {
		return nil, errUnauthorized
	}
	return s.authenticateHashed(ctx, presented, hashOf(presented), withDesign)
}

// authenticateHashed is authenticateToken of a well-formed token whose
// hash h is known.
func (s *Server) authenticateHashed(ctx context.Context, presented string, h tokenHash, withDesign bool) (*session, error) {
	if ss, ok := s.tokens.get(h); ok && subtle.ConstantTimeCompare(ss.hash[:], h[:]) == 1 {
		if withDesign && ss.d == nil {
			return s.addDesign(ctx, ss)
		}
		return ss, nil
	}
	gen := s.tokens.generation(h)
	rec, self, err := s.verifyStoredSelf(ctx, presented, h)
	if err != nil {
		return nil, err
	}
	if self != nil && !withDesign {
		ss := newAnsweredSession(h, rec, self)
		s.tokens.put(h, ss, gen)
		return ss, nil
	}
	ss, err := s.sessionWithDesign(ctx, h, rec)
	if err != nil {
		return nil, err
	}
	if self != nil {
		ss.self.Store(newSelfAnswer(self))
	}
	s.tokens.put(h, ss, gen)
	return ss, nil
}

// newAnsweredSession is the session of a verified record and its stored
// answer (kept, not copied), without a design: the session and the
// answer in one allocation.
func newAnsweredSession(h tokenHash, rec tokenRecord, self []byte) *session {
	x := &struct {
		ss session
		a  selfAnswer
	}{ss: session{hash: h, rec: rec}}
	x.a.init(self)
	x.ss.self.Store(&x.a)
	return &x.ss
}

// sessionWithDesign is the session of a verified record, with its design
// revision and node.
func (s *Server) sessionWithDesign(ctx context.Context, h tokenHash, rec tokenRecord) (*session, error) {
	d, parts, err := s.designs.getWithParts(ctx, rec.Revision)
	if err != nil {
		if errors.Is(err, statestore.ErrNotFound) {
			return nil, internal(http.StatusInternalServerError, "the design revision of this deployment is not stored any more", err)
		}
		return nil, internal(http.StatusServiceUnavailable, "the design of this deployment could not be loaded; try again", err)
	}
	n := d.Nodes[rec.Node]
	if n == nil {
		return nil, internal(http.StatusInternalServerError, "this node is not in the design revision of its deployment",
			fmt.Errorf("node %s not in revision %s", rec.Node, rec.Revision))
	}
	return &session{hash: h, rec: rec, d: d, n: n, parts: parts}, nil
}

// addDesign is a cached session without a design (read with its stored
// answer) with its design revision and node, for the routes that need
// them; it replaces the cached one unless that was dropped meanwhile (by
// issue, reissue or revoke: the request is answered, nothing is cached).
func (s *Server) addDesign(ctx context.Context, ss *session) (*session, error) {
	gen := s.tokens.generation(ss.hash)
	full, err := s.sessionWithDesign(ctx, ss.hash, ss.rec)
	if err != nil {
		return nil, err
	}
	if a := ss.self.Load(); a != nil {
		full.self.Store(a)
	}
	s.tokens.replace(ss.hash, ss, full, gen)
	return full, nil
}

// getString returns a record as a string, "" when absent.
func (s *Server) getString(ctx context.Context, coll, key string) (string, error) {
	b, err := s.store.Get(ctx, coll, key)
	switch {
	case errors.Is(err, statestore.ErrNoRecord):
		return "", nil
	case err != nil:
		return "", drivers.NewError(drivers.Transient, fmt.Errorf("read %s: %w", coll, err))
	}
	return string(b), nil
}

// getJSON decodes a record of kind k into v; false when absent.
func (s *Server) getJSON(ctx context.Context, k *storedrec.Kind, coll, key string, v any) (bool, error) {
	b, err := s.store.Get(ctx, coll, key)
	switch {
	case errors.Is(err, statestore.ErrNoRecord):
		return false, nil
	case err != nil:
		return false, drivers.NewError(drivers.Transient, fmt.Errorf("read %s: %w", coll, err))
	}
	if err := k.Decode(key, b, v); err != nil {
		return false, fmt.Errorf("decode a record of %s: %w", coll, err)
	}
	return true, nil
}

// stripedLock serialises the token changes of one node.
type stripedLock [64]sync.Mutex

func (l *stripedLock) lock(key string) func() {
	h := fnv.New32a()
	h.Write([]byte(key))
	m := &l[h.Sum32()%uint32(len(l))]
	m.Lock()
	return m.Unlock
}

// tokenCache keeps the sessions of verified tokens, by the token's hash:
// the record and the node's /v1/self answer (stored with the record, or
// rendered), and once a route needed them its design revision and node
// (all immutable for a record: a new design revision or deployment writes
// a new record, and drops the cached one). Issue,
// reissue and revoke forget what they change after writing; a record read
// before such a change is not cached (the generation of its shard moved),
// so a revoked or replaced token is never served from the cache. Follow
// forgets what other processes sharing the store change, as soon as the
// store's watch tells of it. Sharded
// by the hash's first byte, so that concurrent first requests of many
// tokens seldom wait for one another.
type tokenCache struct {
	shards [tokenShards]tokenShard
	once   onceSet
}

const (
	tokenShards   = 32
	tokenCacheMax = 200000 // sessions, over all shards
)

type tokenShard struct {
	mu  sync.RWMutex
	gen uint64
	m   map[tokenHash]*session
	_   [64]byte // one shard a cache line (or more): no false sharing
}

// onceSet marks the tokens answered once straight from the store and not
// cached, their next request caching (seenOnce): a bit a token, chosen
// by its hash, set with one atomic operation and no lock, where a map
// under the shard's lock took a lock, a miss and, as it grew, copies on
// every first request. Two tokens may share a bit: the second's first
// answer is then cached (as every answer was before the marks), nothing
// else. Every bit is cleared once onceMax tokens were marked, counted in
// stripes of their own cache lines (a stripe at its share clears all).
type onceSet struct {
	bits    [onceBits / 64]atomic.Uint64
	stripes [tokenShards]struct {
		n atomic.Int64
		_ [56]byte
	}
}

const (
	onceBits = 1 << 20      // 128 KiB
	onceMax  = onceBits / 8 // marks before all are cleared: at most one bit in 8 set
)

// seen reports whether h's bit was set, and sets it.
func (o *onceSet) seen(h tokenHash) bool {
	i := binary.LittleEndian.Uint64(h[8:16]) % onceBits
	w, m := &o.bits[i/64], uint64(1)<<(i%64)
	if w.Load()&m != 0 || w.Or(m)&m != 0 {
		return true
	}
	if o.stripes[h[0]%tokenShards].n.Add(1) >= onceMax/tokenShards {
		o.clear()
	}
	return false
}

// clear unsets every bit and restarts the counts (a mark made meanwhile
// may go too: its token's next answer comes from the store again).
func (o *onceSet) clear() {
	for i := range o.stripes {
		o.stripes[i].n.Store(0)
	}
	for i := range o.bits {
		o.bits[i].Store(0)
	}
}

func (c *tokenCache) shard(h tokenHash) *tokenShard { return &c.shards[h[0]%tokenShards] }

func (c *tokenCache) get(h tokenHash) (*session, bool) {
	sh := c.shard(h)
	sh.mu.RLock()
	ss, ok := sh.m[h]
	sh.mu.RUnlock()
	return ss, ok
}

// seenOnce reports whether h was answered once already without being
// cached, and marks it so (onceSet).
func (c *tokenCache) seenOnce(h tokenHash) bool { return c.once.seen(h) }

// generation is h's shard's generation, to give put.
func (c *tokenCache) generation(h tokenHash) uint64 {
	sh := c.shard(h)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.gen
}

// put caches a session read when h's shard was at generation gen, unless
// a change was forgotten in it since.
func (c *tokenCache) put(h tokenHash, ss *session, gen uint64) {
	sh := c.shard(h)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if gen != sh.gen {
		return
	}
	if sh.m == nil || len(sh.m) >= tokenCacheMax/tokenShards {
		sh.m = make(map[tokenHash]*session)
	}
	sh.m[h] = ss
}

// replace caches session repl, built when h's shard was at generation
// gen, in place of old, unless old was dropped or anything was forgotten
// in the shard since (a token changed, or repl's design left the design
// cache).
func (c *tokenCache) replace(h tokenHash, old, repl *session, gen uint64) {
	sh := c.shard(h)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if gen == sh.gen && sh.m[h] == old {
		sh.m[h] = repl
	}
}

// forget drops the sessions of the tokens whose hashes (hex, as stored)
// are given and moves their shards' generations; "" is ignored.
func (c *tokenCache) forget(hashes ...string) {
	for _, x := range hashes {
		var h tokenHash
		if n, err := hex.Decode(h[:], []byte(x)); err != nil || n != len(h) {
			continue
		}
		sh := c.shard(h)
		sh.mu.Lock()
		sh.gen++
		delete(sh.m, h)
		sh.mu.Unlock()
	}
}

// forgetAll drops every session and moves every shard's generation: for
// changes to tokens that are not known (Follow missed them).
func (c *tokenCache) forgetAll() {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		sh.gen++
		sh.m = nil
		sh.mu.Unlock()
	}
}

// dropDesign drops the sessions that hold design d (leaving the design
// cache) and moves every shard's generation, so that a session being
// built on d is not cached either.
func (c *tokenCache) dropDesign(d *design.Design) {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		sh.gen++
		for h, ss := range sh.m {
			if ss.d == d {
				delete(sh.m, h)
			}
		}
		sh.mu.Unlock()
	}
}
