package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The gate refuses a peer of another uid (or one it could not identify)
// before any route runs.
func TestLocalGateRefusesOtherUsers(t *testing.T) {
	reached := false
	h := localGate(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	for _, p := range []localPeer{{uid: 4242}, {uid: -1, err: context.Canceled}} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/tokens", nil)
		req = req.WithContext(context.WithValue(req.Context(), localPeerKey{}, p))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden || reached {
			t.Fatalf("peer %+v: status %d, reached %v; want 403 before the routes", p, rec.Code, reached)
		}
		var body struct{ Detail string }
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Detail == "" {
			t.Fatalf("peer %+v: no problem detail: %s", p, rec.Body)
		}
	}
	// An admitted peer goes through, as the local marker.
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Authorization", "Bearer something-else")
	req = req.WithContext(context.WithValue(req.Context(), localPeerKey{}, localPeer{uid: 0, allowed: true, name: "cli:root"}))
	var got string
	localGate(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r.Header.Get("Authorization") })).ServeHTTP(httptest.NewRecorder(), req)
	if !strings.HasSuffix(got, localMarker) {
		t.Fatalf("admitted peer: Authorization %q", got)
	}
}

// localFirst names an admitted peer and passes everyone else on.
func TestLocalFirst(t *testing.T) {
	next := func(context.Context, string) (Principal, error) { return Principal{ID: "tok"}, nil }
	auth := localFirst(next)
	ctx := context.WithValue(context.Background(), localPeerKey{}, localPeer{uid: 7, allowed: true, name: "cli:bob"})
	if p, _ := auth(ctx, "x"); p.ID != LocalPrincipalID || p.Name != "cli:bob" || p.Role != RoleAdmin {
		t.Fatalf("admitted peer: %+v", p)
	}
	refused := context.WithValue(context.Background(), localPeerKey{}, localPeer{uid: 7})
	for _, c := range []context.Context{context.Background(), refused} {
		if p, _ := auth(c, "x"); p.ID != "tok" {
			t.Fatalf("not admitted: %+v, want the token's principal", p)
		}
	}
}
