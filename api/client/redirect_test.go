package client_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slipway-dev/slipway/api/client"
)

// TestNoRedirectWithToken (S6): a server (or a proxy) that redirects a
// call to another port of the same host, where Go's client would resend
// the bearer token, gets the call refused: the other port receives
// nothing, and the error names where the redirect pointed.
func TestNoRedirectWithToken(t *testing.T) {
	var reached, withToken atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("Authorization") != "" {
			withToken.Add(1)
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer other.Close()
	for _, code := range []int{301, 302, 307, 308} {
		first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.Path, code)
		}))
		c, err := client.New(first.URL, tokAdmin)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Cluster(t.Context())
		first.Close()
		if err == nil || !strings.Contains(err.Error(), "redirect") || !strings.Contains(err.Error(), other.URL) {
			t.Errorf("%d: the error does not say the server redirected, and where: %v", code, err)
		}
		if err != nil && strings.Contains(err.Error(), tokAdmin) {
			t.Errorf("%d: the error shows the token: %v", code, err)
		}
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the redirect target was called %d times (%d with the token)", n, withToken.Load())
	}
}

// A redirected mutating call is final: the server answered, so retrying
// it (with the same Idempotency-Key) only wastes the caller's time.
func TestRedirectedMutationNotRetried(t *testing.T) {
	var hits atomic.Int32
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "http://127.0.0.1:1"+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer first.Close()
	c, err := client.New(first.URL, tokAdmin)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateTask(t.Context(), client.TaskRequest{Action: "prepare_site"})
	if err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Fatalf("want the redirect refused, got %v", err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the redirected call was sent %d times, want 1", n)
	}
}
