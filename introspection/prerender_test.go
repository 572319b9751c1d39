package introspection

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/testsite"
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

// TestStoredSelf: UserData stores each node's /v1/self answer with its
// token; after a restart the first request of a token answers it without
// loading the design, byte for byte what json.Marshal(selfOf(...)) gives
// for the stored revision, on the fast path and through echo; the routes
// that need the design still get it.
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
			stored, err := e.st.Get(t.Context(), collSelf, hashToken(toks[n]))
			if err != nil {
				t.Fatalf("%s: no stored answer: %v", n, err)
			}
			if body, ok := decodeStoredSelf(stored, e.rev); !ok || string(body) != string(want) {
				t.Fatalf("%s: stored %q, want %s", n, stored, want)
			}
			for i := range 2 {
				got := r.do("GET", "/v1/self", toks[n], nil)
				if got.code != 200 || string(got.body) != string(want) {
					t.Fatalf("%v log, %s, request %d: %d %s, want %s", level, n, i, got.code, got.body, want)
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
}

// TestStoredSelfFallback: a stored answer that is missing, of another
// render version or of another revision than the record is not served:
// the answer is rendered from the design, and is the same bytes.
func TestStoredSelfFallback(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	tok := e.issue("r01-cmp01", "1")
	h := hashToken(tok)
	want := string(e.restarted(zerolog.InfoLevel).do("GET", "/v1/self", tok, nil).body)
	bogus := []byte(`{"name":"bogus"}` + "\n")
	for _, c := range []struct {
		name string
		op   statestore.Op
	}{
		{"missing", statestore.Delete(collSelf, h)},
		{"another version", statestore.Put(collSelf, h, append([]byte("v0 "+e.rev+"\n"), bogus...))},
		{"a later version", statestore.Put(collSelf, h, append([]byte("v99 "+e.rev+"\n"), bogus...))},
		{"another revision", statestore.Put(collSelf, h, encodeStoredSelf("0123abcd", bogus))},
		{"truncated", statestore.Put(collSelf, h, []byte(storedSelfHead+e.rev))},
		{"empty body", statestore.Put(collSelf, h, []byte(storedSelfHead+e.rev+"\n"))},
		{"garbage", statestore.Put(collSelf, h, []byte("\x00\xff"))},
	} {
		if _, err := e.st.Write(ctx, c.op); err != nil {
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
	// Issuing again for the same deployment and revision writes the
	// answer (and only it) when it is not current.
	rec1, _ := e.st.Get(ctx, collTokens, h)
	if again := e.issue("r01-cmp01", "1"); again != tok {
		t.Fatal("another token")
	}
	rec2, _ := e.st.Get(ctx, collTokens, h)
	if string(rec1) != string(rec2) {
		t.Error("the record was rewritten")
	}
	r := e.restarted(zerolog.InfoLevel)
	if got := r.do("GET", "/v1/self", tok, nil); string(got.body) != want || r.designsLoaded() {
		t.Errorf("after issuing again: %s (design loaded: %v)", got.body, r.designsLoaded())
	}
}

// TestStoredSelfFollowsToken: the stored answer is written, replaced and
// deleted with its token's record: rotation, reissue, a new revision and
// revocation, each taking effect at once.
func TestStoredSelfFollowsToken(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	const node = "r01-cmp01"
	count := func() int {
		t.Helper()
		recs, err := e.st.List(ctx, collSelf, "")
		if err != nil {
			t.Fatal(err)
		}
		toks, _ := e.st.List(ctx, collTokens, "")
		if len(recs) != len(toks) {
			t.Errorf("%d stored answers for %d token records", len(recs), len(toks))
		}
		for i := range recs {
			if i < len(toks) && recs[i].Key != toks[i].Key {
				t.Errorf("stored answer %s has no token record", recs[i].Key)
			}
		}
		return len(recs)
	}
	t1 := e.issue(node, "1")
	e.issue("r01-cmp02", "1")
	if n := count(); n != 2 {
		t.Fatalf("%d stored answers, want 2", n)
	}
	t2 := e.issue(node, "2")
	if n := count(); n != 2 {
		t.Errorf("after a rotation: %d stored answers, want 2", n)
	}
	if r := e.restarted(zerolog.InfoLevel).do("GET", "/v1/self", t1, nil); r.code != 401 {
		t.Errorf("rotated: %d", r.code)
	}
	re, err := e.srv.Reissue(ctx, e.d, node, "2")
	if err != nil {
		t.Fatal(err)
	}
	t3 := tokenOfEnv(t, re.Env)
	if n := count(); n != 2 {
		t.Errorf("after a reissue: %d stored answers, want 2", n)
	}
	r := e.restarted(zerolog.InfoLevel)
	if got := r.do("GET", "/v1/self", t2, nil); got.code != 401 {
		t.Errorf("reissued: %d", got.code)
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
	if s := r.self(t4); s.Rack != "r42" {
		t.Errorf("after a reissue from a new revision, rack %q", s.Rack)
	}
	r = e.restarted(zerolog.InfoLevel)
	if s := r.self(t4); s.Rack != "r42" || r.designsLoaded() {
		t.Errorf("restarted: rack %q (design loaded: %v)", s.Rack, r.designsLoaded())
	}
	// Revocation: gone, and refused at once by a server that cached it.
	if err := e.srv.EndDeployment(ctx, node); err != nil {
		t.Fatal(err)
	}
	if got := e.do("GET", "/v1/self", t4, nil); got.code != 401 {
		t.Errorf("revoked: %d", got.code)
	}
	if n := count(); n != 1 {
		t.Errorf("after revocation: %d stored answers, want 1", n)
	}
}

// selfRenderGolden is the SHA-256 of every example node's /v1/self
// answer (deployment "1", in name order) at selfRenderVersion.
const selfRenderGolden = "54ca204df66fd53bdaf6506503bfb464efae0008ceebd1fd69f66cf4df1d4699"

// TestSelfRenderVersion fails when appendSelf's output changes, so that
// selfRenderVersion is bumped with it: answers stored by the previous
// version are then rendered again rather than served. (A change of the
// example design changes the hash too: then only update it.)
func TestSelfRenderVersion(t *testing.T) {
	d := testsite.Example(t)
	p := newSelfParts(d)
	h := sha256.New()
	for _, n := range d.NodeNames() {
		h.Write(appendSelf(nil, p, d.Nodes[n], "1"))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != selfRenderGolden {
		t.Errorf("the /v1/self answers of the example design changed (hash %s, was %s): if appendSelf writes other bytes, bump selfRenderVersion (answers stored by the previous version must not be served); either way, set selfRenderGolden to the new hash", got, selfRenderGolden)
	}
}
