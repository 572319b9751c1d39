package introspection

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/statestore"
)

// restarted is a new Server on e's store and key (empty caches), with
// the request log at level (Info: the fast path; Debug: through echo).
func (e *env) restarted(level zerolog.Level) *env {
	e.t.Helper()
	srv, err := New(Config{Store: e.st, URL: testURL, Key: testKey, Secret: testSecret, Log: zerolog.New(e.logs).Level(level)})
	if err != nil {
		e.t.Fatal(err)
	}
	return &env{t: e.t, st: e.st, d: e.d, rev: e.rev, srv: srv, logs: e.logs}
}

// designsLoaded reports whether the server's design cache holds any
// design (loaded or passed in).
func (e *env) designsLoaded() bool {
	c := e.srv.designs
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byID) > 0 || c.last.Load() != nil
}

// decodedRevision is the design of revision rev as a restarted server
// loads it.
func decodedRevision(t *testing.T, st Revisions, rev string) *design.Design {
	t.Helper()
	r, err := st.Revision(context.Background(), rev)
	if err != nil {
		t.Fatal(err)
	}
	d := &design.Design{}
	if err := json.Unmarshal(r.Design, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestStoredSelf: UserData keeps each node's /v1/self answer in its
// token's record; after a restart the first request of a token answers
// it without loading the design, byte for byte what
// json.Marshal(selfOf(...)) gives for the stored revision, on the fast
// path and through echo; the routes that need the design still get it;
// json.Unmarshal (a version that only knows the record) reads the record
// as before.
func TestStoredSelf(t *testing.T) {
	e := newEnv(t)
	toks := map[string]string{}
	for _, n := range e.d.NodeNames() {
		toks[n] = e.issue(n, "1")
	}
	dec := decodedRevision(t, e.st, e.rev)
	for _, level := range []zerolog.Level{zerolog.InfoLevel, zerolog.DebugLevel} {
		r := e.restarted(level)
		for _, n := range e.d.NodeNames() {
			want, err := json.Marshal(selfOf(dec, dec.Nodes[n], "1"))
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, '\n')
			stored, err := e.st.Get(t.Context(), collTokens, hashToken(toks[n]))
			if err != nil {
				t.Fatal(err)
			}
			raw, self := splitSelf(slices.Clone(stored))
			if string(self) != string(want) {
				t.Fatalf("%s: stored answer %q, want %s", n, self, want)
			}
			var rec, old tokenRecord
			if !decodeRecordFast(raw, &rec) || rec.Node != n || rec.Deployment != "1" || rec.Revision != e.rev {
				t.Fatalf("%s: stored record %s", n, raw)
			}
			if err := json.Unmarshal(stored, &old); err != nil || !reflect.DeepEqual(old, rec) {
				t.Fatalf("%s: json.Unmarshal of the stored record: %+v %v, want %+v", n, old, err, rec)
			}
			for i := range 2 {
				got := r.do("GET", "/v1/self", toks[n], nil)
				if got.code != 200 || string(got.body) != string(want) || got.hdr.Get("Content-Length") != strconv.Itoa(len(want)) {
					t.Fatalf("%v log, %s, request %d: %d %v %s, want %s", level, n, i, got.code, got.hdr, got.body, want)
				}
			}
		}
		if r.designsLoaded() {
			t.Errorf("%v log: a design was loaded to answer stored answers", level)
		}
		// A route that needs the design gets it, and /v1/self still answers.
		tok := toks["r01-cmp01"]
		if got := r.do("GET", "/v1/self/packages", tok, nil); got.code != 200 {
			t.Errorf("packages after /v1/self: %d %s", got.code, got.body)
		}
		if ss, _ := r.cached(tok); ss == nil || ss.d == nil {
			t.Error("the session did not take its design")
		}
		if got := r.do("GET", "/v1/self", tok, nil); got.code != 200 || got.hdr.Get("Content-Length") == "" {
			t.Errorf("self after packages: %d", got.code)
		}
	}
	// bootdata reads the record too.
	if b, _, err := e.srv.BootData(t.Context(), "r01-cmp01", PartSelf); err != nil || !json.Valid(b) {
		t.Errorf("bootdata self: %v", err)
	}
}

// TestStoredSelfFallback: a record without an answer (written by an
// older version), with one of another render version, or with a trailer
// that does not hold is answered by rendering from the design, the same
// bytes; issuing the same deployment again writes the record with its
// answer.
func TestStoredSelfFallback(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	tok := e.issue("r01-cmp01", "1")
	h := hashToken(tok)
	stored, err := e.st.Get(ctx, collTokens, h)
	if err != nil {
		t.Fatal(err)
	}
	raw, self := splitSelf(slices.Clone(stored))
	if self == nil {
		t.Fatal("no answer stored")
	}
	want := string(e.restarted(zerolog.InfoLevel).do("GET", "/v1/self", tok, nil).body)
	if want != string(self) {
		t.Fatalf("served %s, stored %s", want, self)
	}
	bogus := []byte(`{"name":"bogus"}` + "\n")
	withVersion := func(v int) []byte {
		b := withSelf(raw, bogus)
		return fmt.Appendf(b[:len(b)-selfTrailerLen], selfTrailerFmt, v, len(b)-selfTrailerLen-len(bogus), len(bogus))
	}
	shifted := withSelf(raw, bogus)
	shifted[len(shifted)-3]++ // the length off by one
	for _, c := range []struct {
		name  string
		value []byte
	}{
		{"no answer (an older version)", raw},
		{"another render version", withVersion(selfRenderVersion + 1)},
		{"render version 0", withVersion(0)},
		{"a trailer that does not hold", shifted},
	} {
		if _, err := e.st.Write(ctx, statestore.Put(collTokens, h, c.value)); err != nil {
			t.Fatal(err)
		}
		for _, level := range []zerolog.Level{zerolog.InfoLevel, zerolog.DebugLevel} {
			r := e.restarted(level)
			if got := r.do("GET", "/v1/self", tok, nil); got.code != 200 || string(got.body) != want {
				t.Errorf("%s, %v log: %d %s, want %s", c.name, level, got.code, got.body, want)
			}
			if !r.designsLoaded() {
				t.Errorf("%s: not rendered from the design", c.name)
			}
		}
	}
	// Issuing again for the same deployment and revision writes the same
	// record with its answer.
	if _, err := e.st.Write(ctx, statestore.Put(collTokens, h, raw)); err != nil {
		t.Fatal(err)
	}
	if again := e.issue("r01-cmp01", "1"); again != tok {
		t.Fatal("another token")
	}
	b, _ := e.st.Get(ctx, collTokens, h)
	if raw2, self2 := splitSelf(b); string(raw2) != string(raw) || string(self2) != want {
		t.Errorf("issued again: %s + %s, want %s + %s", raw2, self2, raw, want)
	}
	r := e.restarted(zerolog.InfoLevel)
	if got := r.do("GET", "/v1/self", tok, nil); string(got.body) != want || r.designsLoaded() {
		t.Errorf("after issuing again: %s (design loaded: %v)", got.body, r.designsLoaded())
	}
}

// TestSplitSelf: withSelf and splitSelf round-trip; a change anywhere
// in the trailer or the key before the answer is not taken for an answer.
func TestSplitSelf(t *testing.T) {
	raw := []byte(`{"node":"n1","deployment":"1","revision":"abc","issued":"2026-11-23T16:33:00Z","issue":2}`)
	self := []byte(`{"name":"n1","x":"}\n"}` + "\n")
	b := withSelf(raw, self)
	if r, s := splitSelf(slices.Clone(b)); string(r) != string(raw) || string(s) != string(self) {
		t.Fatalf("%s: split as %s + %s", b, r, s)
	}
	if !json.Valid(b) {
		t.Errorf("%s is not JSON", b)
	}
	from := len(b) - selfTrailerLen - len(self) - len(selfKey)
	for i := from; i < len(b); i++ {
		if i >= len(b)-selfTrailerLen-len(self) && i < len(b)-selfTrailerLen && i != len(b)-selfTrailerLen-len(self) && i != len(b)-selfTrailerLen-1 {
			continue // inside the answer: not checked
		}
		c := slices.Clone(b)
		c[i] ^= 0x01
		if r, s := splitSelf(c); s != nil && (string(r) != string(raw) || string(s) != string(self)) {
			t.Errorf("byte %d changed (%q): split as %s + %s", i, c[i], r, s)
		}
	}
	for _, v := range [][]byte{nil, []byte("{}"), raw, b[:len(b)-1], b[1:]} {
		if _, s := splitSelf(slices.Clone(v)); s != nil {
			t.Errorf("%q: an answer", v)
		}
	}
}

// TestStoredSelfFollowsToken: the stored answer goes with its token's
// record: rotation, reissue, a new revision and revocation take effect at
// once, for the server that issues and one restarted.
func TestStoredSelfFollowsToken(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	const node = "r01-cmp01"
	t1 := e.issue(node, "1")
	e.self(t1)
	t2 := e.issue(node, "2")
	for _, srv := range []*env{e, e.restarted(zerolog.InfoLevel)} {
		if r := srv.do("GET", "/v1/self", t1, nil); r.code != 401 {
			t.Errorf("rotated: %d", r.code)
		}
	}
	e.self(t2)
	re, err := e.srv.Reissue(ctx, e.d, node, "2")
	if err != nil {
		t.Fatal(err)
	}
	t3 := tokenOfEnv(t, re.Env)
	r := e.restarted(zerolog.InfoLevel)
	for _, srv := range []*env{e, r} {
		if got := srv.do("GET", "/v1/self", t2, nil); got.code != 401 {
			t.Errorf("reissued: %d", got.code)
		}
	}
	if s := r.self(t3); s.Name != node || s.Deployment != "2" || r.designsLoaded() {
		t.Errorf("the reissued token: %s %s (design loaded: %v)", s.Name, s.Deployment, r.designsLoaded())
	}
	// A new revision for the same token: the new answer, stored.
	d2 := *e.d
	d2.Nodes = cloneNodes(e.d.Nodes)
	n := *e.d.Nodes[node]
	n.Spec.Rack = "r42"
	d2.Nodes[node] = &n
	e.store(&d2)
	if _, err := e.srv.Reissue(ctx, &d2, node, "2"); err != nil {
		t.Fatal(err)
	}
	t4 := e.srv.tokenFor(node, "2", 2)
	if s := e.self(t4); s.Rack != "r42" {
		t.Errorf("after a reissue from a new revision, rack %q", s.Rack)
	}
	r = e.restarted(zerolog.InfoLevel)
	if s := r.self(t4); s.Rack != "r42" || r.designsLoaded() {
		t.Errorf("restarted: rack %q (design loaded: %v)", s.Rack, r.designsLoaded())
	}
	// Revocation: refused at once, by the server that served it and after
	// a restart.
	e.self(t4)
	if err := e.srv.EndDeployment(ctx, node); err != nil {
		t.Fatal(err)
	}
	for _, srv := range []*env{e, e.restarted(zerolog.InfoLevel)} {
		if got := srv.do("GET", "/v1/self", t4, nil); got.code != 401 {
			t.Errorf("revoked: %d", got.code)
		}
	}
}

// selfRenderGolden is the SHA-256 of every example node's /v1/self
// answer (deployment "1", in name order) at selfRenderVersion.
const selfRenderGolden = "33e43d1444c007a59f0482c7fd5d2ddcc117dc60cf0c12e04d4099d936d90b5d"

// TestSelfRenderVersion fails when appendSelf's output changes, so that
// selfRenderVersion is bumped with it: answers stored by the previous
// version are then rendered again rather than served. (A change of the
// example design changes the hash too: then only update it.)
func TestSelfRenderVersion(t *testing.T) {
	d := designtest.Example(t)
	p := newSelfParts(d)
	h := sha256.New()
	for _, n := range d.NodeNames() {
		h.Write(appendSelf(nil, p, d.Nodes[n], "1"))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != selfRenderGolden {
		t.Errorf("the /v1/self answers of the example design changed (hash %s, was %s): if appendSelf writes other bytes, bump selfRenderVersion (answers stored by the previous version must not be served); either way, set selfRenderGolden to the new hash", got, selfRenderGolden)
	}
}

// FuzzSplitSelf: splitSelf never panics, and takes an answer only from
// exactly what withSelf writes.
func FuzzSplitSelf(f *testing.F) {
	f.Add([]byte(`{"node":"n1","issue":2}`), []byte(`{"name":"n1"}`+"\n"))
	f.Add([]byte(`{}`), []byte(`{}`+"\n"))
	f.Fuzz(func(t *testing.T, raw, self []byte) {
		if len(raw) < 2 || raw[len(raw)-1] != '}' {
			return
		}
		b := withSelf(raw, self)
		r, s := splitSelf(slices.Clone(b))
		if s != nil && (string(r) != string(raw) || string(s) != string(self)) {
			t.Fatalf("%q: split as %q + %q", b, r, s)
		}
		r, s = splitSelf(slices.Clone(raw))
		if s != nil && string(withSelf(r, s)) != string(raw) {
			t.Fatalf("%q: split as %q + %q", raw, r, s)
		}
	})
}

// TestTokenCacheReplace: a session given its design replaces the cached
// one only if that is still cached and nothing was forgotten in its
// shard since it was built.
func TestTokenCacheReplace(t *testing.T) {
	var c tokenCache
	h := hashOf("sni_y")
	light := &session{hash: h}
	c.put(h, light, c.generation(h))
	full := &session{hash: h, d: &design.Design{}}
	gen := c.generation(h)
	c.dropDesign(&design.Design{}) // another design left the design cache meanwhile
	c.replace(h, light, full, gen)
	if ss, _ := c.get(h); ss != light {
		t.Error("replaced after the shard's generation moved")
	}
	c.replace(h, light, full, c.generation(h))
	if ss, _ := c.get(h); ss != full {
		t.Error("not replaced")
	}
	c.forget(h.String())
	c.replace(h, full, &session{hash: h}, c.generation(h))
	if _, ok := c.get(h); ok {
		t.Error("a dropped session was brought back")
	}
}
