package api_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/slipway-dev/slipway/api"
)

// TestIdempotencyKeyBindsQuery: a key names one call, its query
// parameters included: the same key and body with other parameters
// (another provenance root, another approval) is refused 422, not
// answered the first call's answer; with the same parameters it is a
// retry (replayed).
func TestIdempotencyKeyBindsQuery(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	archive := exampleTar(t, func(s string) string { return s })
	call := func(query string) (int, http.Header, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), "POST", f.URL+"/api/v1/designs"+query, bytes.NewReader(archive))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+f.Token[api.RoleOperator])
		req.Header.Set("Content-Type", "application/gzip")
		req.Header.Set(api.IdempotencyHeader, "apply-q-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	first, _, b := call("?root=site-a&root=global")
	if first != http.StatusOK && first != http.StatusCreated {
		t.Fatalf("the first call: %d %s", first, b)
	}
	for _, q := range []string{"?root=site-b&root=global", "?root=site-a&root=global&approve=" + string(bytes.Repeat([]byte("0"), 64))} {
		if code, h, b := call(q); code != http.StatusUnprocessableEntity || h.Get(api.ReplayedHeader) != "" {
			t.Errorf("the key again with %s: %d %s (replayed %q), want 422", q, code, b, h.Get(api.ReplayedHeader))
		}
	}
	if code, h, b := call("?root=site-a&root=global"); code != first || h.Get(api.ReplayedHeader) != "true" {
		t.Errorf("a retry: %d %s (replayed %q), want %d replayed", code, b, h.Get(api.ReplayedHeader), first)
	}
}
