package introspection

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/internal/etcdtest"
	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/statestore"
	etcdstore "github.com/slipway-dev/slipway/statestore/etcdstore"
)

// replicas are two servers (two `serve` replicas, each with a connection
// of its own) on one etcd state store under prefix, with the example
// site applied, logging at Info (so /v1/self takes the fast path).
func replicas(t *testing.T, c *etcdtest.Cluster, prefix string) (a, b *Server, stA, stB *etcdstore.Store, d *design.Design) {
	t.Helper()
	stA, stB = etcdstore.New(c.Client(t), prefix), etcdstore.New(c.Client(t), prefix)
	d = designtest.Example(t)
	raw, id, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stA.PutRevision(t.Context(), statestore.Revision{ID: id, Design: raw, Counts: d.Counts()}); err != nil {
		t.Fatal(err)
	}
	server := func(st *etcdstore.Store) *Server {
		srv, err := New(Config{Store: st, URL: testURL, Key: testKey, Secret: testSecret,
			Log: zerolog.New(&testtool.SyncBuffer{}).Level(zerolog.InfoLevel)})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	return server(stA), server(stB), stA, stB, d
}

// tapWatcher is a store's Watcher that also sends what its watches tell
// of ("coll key") to seen, when seen has room.
type tapWatcher struct {
	statestore.Watcher
	seen chan string
}

func (w tapWatcher) WatchRecords(ctx context.Context, coll string, fn func(key string)) error {
	return w.Watcher.WatchRecords(ctx, coll, func(key string) {
		fn(key)
		select {
		case w.seen <- coll + " " + key:
		default:
		}
	})
}

// following runs srv.Follow on st until the test ends, and returns once
// both its watches tell of what is written (a key "probe" in each
// collection, which names no token and no node, is written until they
// do).
func following(t *testing.T, srv *Server, st *etcdstore.Store) {
	t.Helper()
	tap := tapWatcher{Watcher: st, seen: make(chan string, 100)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Follow(ctx, tap) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Follow returned %v when its context ended, want nil", err)
			}
		case <-time.After(time.Minute):
			t.Error("Follow did not return within a minute of its context's end")
		}
	})
	want := map[string]bool{collTokens + " probe": true, collReports + " probe": true}
	for deadline := time.Now().Add(time.Minute); len(want) > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("Follow's watches told of no probe for a minute (missing %v)", want)
		}
		if _, err := st.Write(t.Context(), statestore.Put(collTokens, "probe", nil), statestore.Put(collReports, "probe", nil)); err != nil {
			t.Fatal(err)
		}
		for wait := time.After(200 * time.Millisecond); len(want) > 0; {
			select {
			case k := <-tap.seen:
				delete(want, k)
				continue
			case <-wait:
			}
			break
		}
	}
}

// refusedWithin polls GET /v1/self with tok on srv until it is refused
// (401), failing when it is still answered after a minute (the cache has
// no expiry: only the watch can drop the token).
func refusedWithin(t *testing.T, srv *Server, tok, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := getSelf(srv, tok)
		if code == 401 {
			return
		}
		if code != 200 {
			t.Fatalf("the %s token on the other replica: %d %s, want 401", what, code, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s token is still answered by the other replica a minute after the change (from its cache)", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFollowTokens: a token answered (and so cached) by replica B and
// then rotated, reissued or revoked by replica A is refused by B soon
// after, B following the store; B answers the new token.
func TestFollowTokens(t *testing.T) {
	c := etcdtest.Start(t, 1)
	for _, change := range []string{"rotated", "reissued", "revoked"} {
		t.Run(change, func(t *testing.T) {
			a, b, _, stB, d := replicas(t, c, "/test/follow/"+change+"/")
			ctx := t.Context()
			const node = "r01-cmp01"
			if _, err := a.UserData(ctx, d, node, "1"); err != nil {
				t.Fatal(err)
			}
			tok := a.Token(node, "1")
			following(t, b, stB)
			for i := range 2 {
				if code, body := getSelf(b, tok); code != 200 {
					t.Fatalf("B, request %d: %d %s", i+1, code, body)
				}
			}
			if _, ok := b.tokens.get(hashOf(tok)); !ok {
				t.Fatal("B did not cache the token's session: the test tests nothing")
			}
			next, dep := "", "1"
			switch change {
			case "rotated":
				if _, err := a.UserData(ctx, d, node, "2"); err != nil {
					t.Fatal(err)
				}
				next, dep = a.Token(node, "2"), "2"
			case "reissued":
				if _, err := a.Reissue(ctx, d, node, "1"); err != nil {
					t.Fatal(err)
				}
				next = a.tokenFor(node, "1", 1)
			case "revoked":
				if err := a.EndDeployment(ctx, node); err != nil {
					t.Fatal(err)
				}
			}
			if code, _ := getSelf(a, tok); code != 401 {
				t.Errorf("A, which made the change, answers the %s token: %d", change, code)
			}
			refusedWithin(t, b, tok, change)
			if next != "" {
				want := wantSelf(t, d, node, dep)
				if code, body := getSelf(b, next); code != 200 || !bytes.Equal(body, want) {
					t.Errorf("the new token on B: %d %s", code, body)
				}
			}
		})
	}
}

// TestFollowReports: a report posted through replica B wakes the engine
// on replica A (its NotifyReports func gets the node), A following the
// store.
func TestFollowReports(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a, b, stA, _, d := replicas(t, c, "/test/follow/reports/")
	const node = "r01-gpu01"
	if _, err := a.UserData(t.Context(), d, node, "1"); err != nil {
		t.Fatal(err)
	}
	acts := signalling(d, node)
	if len(acts) == 0 {
		t.Fatalf("the example gives %s no signalling action", node)
	}
	woken := make(chan string, 10)
	a.NotifyReports(func(n string) { woken <- n })
	following(t, a, stA)
	body, _ := json.Marshal(ReportRequest{Status: StatusSuccess})
	req := httptest.NewRequest("POST", "/v1/self/actions/"+acts[0], bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+a.Token(node, "1"))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	b.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("the report through B: %d %s", rec.Code, rec.Body)
	}
	select {
	case n := <-woken:
		if n != node {
			t.Errorf("A's NotifyReports func got %q, want %q", n, node)
		}
	case <-time.After(time.Minute):
		t.Fatal("A's NotifyReports func was not called within a minute of a report stored through B")
	}
}

// TestFollowMissed: when the tokens' watch may have missed changes (""),
// every cached session goes and a session read before is not cached; a
// report's "" wakes nothing.
func TestFollowMissed(t *testing.T) {
	e := newEnv(t)
	tok := e.issue("r01-cmp01", "1")
	for range 2 {
		e.self(tok)
	}
	if ss, _ := e.cached(tok); ss == nil {
		t.Fatal("the session is not cached: the test tests nothing")
	}
	h := hashOf(tok)
	gen := e.srv.tokens.generation(h)
	e.srv.tokenChanged("")
	if ss, _ := e.cached(tok); ss != nil {
		t.Error("a session is still cached after the watch missed changes")
	}
	e.srv.tokens.put(h, &session{hash: h}, gen)
	if ss, _ := e.cached(tok); ss != nil {
		t.Error("a session read before the watch missed changes was cached")
	}
	e.srv.NotifyReports(func(n string) { t.Errorf("a missed report change woke node %q", n) })
	e.srv.reportChanged("")
	e.srv.reportChanged("probe")
}

// TestFollowEnds: Follow returns nil when its context ends, and the
// store's error when a watch ends otherwise (the store closed).
func TestFollowEnds(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a, _, stA, _, _ := replicas(t, c, "/test/follow/ends/")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := a.Follow(ctx, stA); err != nil {
		t.Errorf("Follow with a done context: %v, want nil", err)
	}
	stA.Close()
	if err := a.Follow(t.Context(), stA); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("Follow on a closed store: %v, want the store's error", err)
	}
}
