package client_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/auth"
)

// TestNotRunIsSentAgain: a 503 saying the call did not run (a standby
// while no replica leads) is sent again after its Retry-After, body and
// all, until it is answered; a 503 without that mark (the call may have
// run) is sent again too, with the same Idempotency-Key: the server
// applies it once (api/idempotency.go).
func TestNotRunIsSentAgain(t *testing.T) {
	var mu sync.Mutex
	var bodies, keys []string
	refusals := 2
	mark := true
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		bodies = append(bodies, string(b))
		keys = append(keys, r.Header.Get(client.IdempotencyHeader))
		if refusals > 0 {
			refusals--
			if mark {
				w.Header().Set(apitypes.NotRunHeader, "1")
			}
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"title":"Service Unavailable","status":503,"detail":"no replica leads now"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(apitypes.CreatedToken{Token: "tok-new-1a2b3c"})
	}))
	defer ts.Close()
	c, err := client.New(ts.URL, tokAdmin)
	if err != nil {
		t.Fatal(err)
	}
	begun := time.Now()
	got, err := c.CreateToken(t.Context(), auth.RoleViewer, "ci")
	if err != nil || got.Token != "tok-new-1a2b3c" {
		t.Fatalf("after two refusals that did not run: %+v %v", got, err)
	}
	if len(bodies) != 3 || bodies[0] == "" || bodies[0] != bodies[2] {
		t.Errorf("the server saw %d calls with bodies %q: want 3, the same body each time", len(bodies), bodies)
	}
	if took := time.Since(begun); took < 2*time.Second {
		t.Errorf("sent again after %s: Retry-After (1 s) not waited", took)
	}

	mu.Lock()
	bodies, keys, refusals, mark = nil, nil, 1, false
	mu.Unlock()
	_, err = c.CreateToken(t.Context(), auth.RoleViewer, "ci")
	if err != nil || len(bodies) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Errorf("a 503 that may have run: %v after %d calls with keys %q; want it sent again with the same Idempotency-Key", err, len(bodies), keys)
	}
}
