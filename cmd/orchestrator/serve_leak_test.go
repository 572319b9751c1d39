package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slipway-dev/slipway/internal/leakcheck"
	"github.com/slipway-dev/slipway/sim/lab"
)

// echoKeySecret is the secret part of the key the echoing MAAS gets: it
// holds characters every encoding changes.
const (
	echoKeySecret = "Zx9+q/Lm&w=Rt%4Kp Yb7Q"
	echoKey       = "echoConsumer1:echoToken22:" + echoKeySecret
)

// TestServeHidesEchoedKey (S1): with a Site whose MAAS (or a proxy in
// front of it) echoes each request, its OAuth header included, in a 500
// answer (400 past the first call), no form of the key's secret (raw, %26secret, base64, ...)
// reaches anyone: /readyz without a token and with the admin's, the
// admin's probe of a site record, a viewer's /events and /tasks after a
// prepare_site that failed on it, and serve's log. The echo itself is
// checked to have carried the secret, so the test sees what it guards.
func TestServeHidesEchoedKey(t *testing.T) {
	t.Parallel()
	var echoed atomic.Int32
	// 500 where the probes start (version/), 400 elsewhere: the engine
	// retries a 500, and prepare_site is to fail promptly.
	echo500, echo400 := leakcheck.Echo(http.StatusInternalServerError), leakcheck.Echo(http.StatusBadRequest)
	maas := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Authorization"), "oauth_signature") {
			echoed.Add(1)
		}
		if strings.HasSuffix(r.URL.Path, "/version/") {
			echo500(w, r)
			return
		}
		echo400(w, r)
	}))
	defer maas.Close()
	dir, state, cfg := serveLabState(t, lab.Info{MAASURL: maas.URL + "/MAAS", APIKey: echoKey})
	s := startServe(t, cfg, state, dir)
	var seen []string
	look := func(what string, code int, body string) {
		t.Helper()
		seen = append(seen, what)
		if leaks := leakcheck.Find(body, echoKeySecret, echoKey); len(leaks) > 0 {
			t.Errorf("%s (%d) shows the MAAS key: %v", what, code, leaks)
		}
	}
	code, body := anonGet(t, s.base+"/readyz")
	look("GET /readyz without a token", code, body)
	code, body = s.call(t, "GET", "/readyz", "")
	look("GET /readyz as admin", code, body)
	if code == http.StatusOK {
		t.Errorf("/readyz answers ready with a MAAS that fails every call: %s", body)
	}

	code, body = s.call(t, "POST", "/api/v1/admin/maas-sites", `{"name":"echo-site","url":"`+maas.URL+`/MAAS","api_key":"`+echoKey+`"}`)
	look("POST /admin/maas-sites", code, body)
	var rec struct{ ID string }
	if code == http.StatusCreated && json.Unmarshal([]byte(body), &rec) == nil {
		code, body = s.call(t, "POST", "/api/v1/admin/maas-sites/"+rec.ID+"/probe", "")
		look("POST /admin/maas-sites/{id}/probe", code, body)
		if !strings.Contains(body, "request echoed") {
			t.Errorf("the probe does not say what MAAS answered: %d %.300s", code, body)
		}
	} else {
		t.Errorf("create the site record: %d %.300s", code, body)
	}

	st, msg := s.task(t, "prepare_site")
	look("the prepare_site task's message", 0, msg)
	if st != "failed" {
		t.Errorf("prepare_site on a MAAS that fails every call: %s %.300s", st, msg)
	}
	code, body = s.call(t, "POST", "/api/v1/tokens", `{"role":"viewer","name":"leak-viewer"}`)
	var tok struct{ Token string }
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &tok) != nil || tok.Token == "" {
		t.Fatalf("create a viewer token: %d %.300s", code, body)
	}
	viewer := &serveProc{base: s.base, tok: tok.Token}
	for _, path := range []string{"/api/v1/events", "/api/v1/tasks"} {
		code, body = viewer.call(t, "GET", path, "")
		look("a viewer's GET "+path, code, body)
		if code != http.StatusOK {
			t.Errorf("a viewer's GET %s: %d %.300s", path, code, body)
		}
	}
	if code := s.stop(); code != 0 {
		t.Errorf("serve exit %d", code)
	}
	look("serve's log", 0, s.stderr.String())
	if !strings.Contains(s.stderr.String(), "request echoed") && !strings.Contains(body, "request echoed") {
		t.Errorf("neither serve's log nor the tasks quote MAAS's answer: the test did not see the echo")
	}
	if echoed.Load() == 0 {
		t.Fatal("the echoing MAAS never received the key: nothing was tested")
	}
	t.Logf("checked %d places; the echoing MAAS answered %d signed requests", len(seen), echoed.Load())
}

// anonGet is a GET without a token.
func anonGet(t *testing.T, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}
