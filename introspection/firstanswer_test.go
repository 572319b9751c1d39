package introspection

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// boltServer is a server on a bbolt state store (the store `serve`
// uses, whose reads share a read transaction) with the example site
// applied, logging at Info (so /v1/self takes the fast path); tune
// changes its configuration first.
func boltServer(t *testing.T, tune ...func(*Config)) (*Server, *design.Design) {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := designtest.Example(t)
	raw, id, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutRevision(t.Context(), statestore.Revision{ID: id, Design: raw, Counts: d.Counts()}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Store: st, URL: testURL, Key: testKey, Log: zerolog.New(&testtool.SyncBuffer{}).Level(zerolog.InfoLevel)}
	for _, f := range tune {
		f(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv, d
}

// getSelf sends GET /v1/self through the whole handler.
func getSelf(srv *Server, tok string) (int, []byte) {
	req := httptest.NewRequest("GET", "/v1/self", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

func wantSelf(t *testing.T, d *design.Design, node, deployment string) []byte {
	t.Helper()
	b, err := json.Marshal(selfOf(d, d.Nodes[node], deployment))
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestFirstAnswerCached: on a bbolt store, a token's first request is
// answered straight from its record (lent by the store, the answer copied
// into the response, nothing cached: most tokens of a fleet are asked
// once or twice); its second caches its session and answer, which later
// ones are served from.
func TestFirstAnswerCached(t *testing.T) {
	srv, d := boltServer(t)
	if _, err := srv.UserData(t.Context(), d, "r01-cmp01", "1"); err != nil {
		t.Fatal(err)
	}
	tok := srv.Token("r01-cmp01", "1")
	want := wantSelf(t, d, "r01-cmp01", "1")
	for i, wantCached := range []bool{false, true, true} {
		code, body := getSelf(srv, tok)
		if code != 200 || !bytes.Equal(body, want) {
			t.Fatalf("request %d: %d %s, want %s", i+1, code, body, want)
		}
		ss, ok := srv.tokens.get(hashOf(tok))
		if ok != wantCached {
			t.Fatalf("after request %d: cached %v, want %v", i+1, ok, wantCached)
		}
		if ok && ss.self.Load() == nil {
			t.Fatalf("after request %d: the session is cached without its answer", i+1)
		}
	}
}

// TestFirstAnswerRefusedAtOnce: on a bbolt store (whose reads share a
// read transaction), a rotated, reissued or revoked token is refused at
// once, whether its next request would be its first (nothing cached) or
// a later one (cached).
func TestFirstAnswerRefusedAtOnce(t *testing.T) {
	for _, change := range []string{"rotated", "reissued", "revoked"} {
		for before := range 3 {
			t.Run(fmt.Sprintf("%s after %d requests", change, before), func(t *testing.T) {
				srv, d := boltServer(t)
				ctx := t.Context()
				node := "r01-cmp01"
				if _, err := srv.UserData(ctx, d, node, "1"); err != nil {
					t.Fatal(err)
				}
				tok := srv.Token(node, "1")
				for range before {
					if code, body := getSelf(srv, tok); code != 200 {
						t.Fatalf("before the change: %d %s", code, body)
					}
				}
				next, dep := "", "1"
				switch change {
				case "rotated":
					if _, err := srv.UserData(ctx, d, node, "2"); err != nil {
						t.Fatal(err)
					}
					next, dep = srv.Token(node, "2"), "2"
				case "reissued":
					if _, err := srv.Reissue(ctx, d, node, "1"); err != nil {
						t.Fatal(err)
					}
					next = srv.tokenFor(node, "1", 1)
				case "revoked":
					if err := srv.EndDeployment(ctx, node); err != nil {
						t.Fatal(err)
					}
				}
				for i := range 3 {
					if code, body := getSelf(srv, tok); code != 401 {
						t.Fatalf("the %s token, request %d after the change: %d %s, want 401", change, i+1, code, body)
					}
				}
				if next != "" {
					want := wantSelf(t, d, node, dep)
					for i := range 3 {
						if code, body := getSelf(srv, next); code != 200 || !bytes.Equal(body, want) {
							t.Fatalf("the new token, request %d: %d %s", i+1, code, body)
						}
					}
				}
			})
		}
	}
}

// TestFirstAnswersConcurrent: first (and later) requests of many tokens
// at once, on a bbolt store, each get their own node's answer: what the
// store lends is copied before it is kept.
func TestFirstAnswersConcurrent(t *testing.T) {
	srv, d := boltServer(t)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range d.Nodes {
			if !yield(n) {
				return
			}
		}
	})
	toks := make([]string, len(names))
	wants := make([][]byte, len(names))
	for i, n := range names {
		if _, err := srv.UserData(t.Context(), d, n, "1"); err != nil {
			t.Fatal(err)
		}
		toks[i], wants[i] = srv.Token(n, "1"), wantSelf(t, d, n, "1")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 3 * len(toks) {
				i := (r + g) % len(toks)
				if code, body := getSelf(srv, toks[i]); code != 200 || !bytes.Equal(body, wants[i]) {
					select {
					case errs <- fmt.Errorf("%s: %d %.80s…, want %.80s…", names[i], code, body, wants[i]):
					default:
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
