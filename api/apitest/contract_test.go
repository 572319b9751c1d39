package apitest_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api/apitest"
)

// serve runs h behind a Contract, sends method path with body, and
// returns what the contract found.
func serve(t *testing.T, h http.HandlerFunc, method, path, body string) []string {
	t.Helper()
	c, err := apitest.NewContract()
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(c.Wrap(h))
	defer ts.Close()
	req, err := http.NewRequestWithContext(t.Context(), method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return c.Failures()
}

// answer is a handler that reads the request's body and answers status,
// ctype and body.
func answer(status int, ctype, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if ctype != "" {
			w.Header().Set("Content-Type", ctype)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

// TestContractBites: the contract passes a handler that answers as the
// document says and fails one that drifts, each drift named.
func TestContractBites(t *testing.T) {
	const js = "application/json"
	for _, c := range []struct {
		name, method, path, body string
		h                        http.HandlerFunc
		want                     string // "" for no failure
	}{
		{"as documented", "GET", "/healthz", "", answer(200, js, `{"status":"ok"}`), ""},
		{"undeclared status", "GET", "/healthz", "", answer(201, js, `{"status":"ok"}`), "status is not supported"},
		{"undeclared field", "GET", "/healthz", "", answer(200, js, `{"status":"ok","extra":1}`), "extra"},
		{"missing required field", "GET", "/healthz", "", answer(200, js, `{}`), "status"},
		{"wrong media type", "GET", "/metrics", "", answer(200, js, `{}`), "application/json"},
		{"problem as documented", "GET", "/api/v1/nodes", "", answer(401, "application/problem+json",
			`{"type":"about:blank","title":"Unauthorized","status":401}`), ""},
		{"undeclared problem status", "GET", "/api/v1/nodes", "", answer(409, "application/problem+json",
			`{"type":"about:blank","title":"Conflict","status":409}`), "status is not supported"},
		{"unknown route", "GET", "/api/v1/nowhere", "", answer(404, "application/problem+json", `{}`), "no such route"},
		{"forbidden request accepted", "GET", "/api/v1/nodes?limit=0", "", answer(200, js, `{"items":[],"total":0,"offset":0,"limit":0}`), "not refused"},
		{"forbidden request refused", "GET", "/api/v1/nodes?limit=0", "", answer(400, "application/problem+json",
			`{"type":"about:blank","title":"Bad Request","status":400}`), ""},
		{"request with an unknown field accepted", "PUT", "/api/v1/secrets/x", `{"value":"v","other":1}`,
			answer(200, js, `{"name":"x","status":"stored"}`), "not refused"},
		{"event stream", "GET", "/api/v1/events/stream", "", answer(200, "text/event-stream", "id: 1\ndata: {}\n\n"), ""},
		{"event stream as JSON", "GET", "/api/v1/events/stream", "", answer(200, js, "[]"), "Content-Type"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := serve(t, c.h, c.method, c.path, c.body)
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("failures for a documented exchange: %q", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Errorf("failures %q, want one naming %q", got, c.want)
			}
		})
	}
}
