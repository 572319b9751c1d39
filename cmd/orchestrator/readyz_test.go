package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/sim/lab"
)

// readyzMarker is what the failing proxy's answer carries: it must never
// reach an anonymous caller.
const readyzMarker = "proxy-echo-7f3a9c"

// failingProxy stands in front of the lab's MAAS: it forwards every
// request until told to fail, then answers 500 with a body that echoes
// the request (as a misconfigured proxy's error page does). It counts the
// requests it gets.
type failingProxy struct {
	*httptest.Server
	failing atomic.Bool
	hits    atomic.Int64
}

func newFailingProxy(t *testing.T, maasURL string) *failingProxy {
	t.Helper()
	u, err := url.Parse(maasURL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	p := &failingProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		if p.failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "%s: upstream failed for %s %s (Authorization: %s)", readyzMarker, r.Method, r.URL.Path, r.Header.Get("Authorization"))
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// anonReadyz asks /readyz with no token: its status and body.
func anonReadyz(ctx context.Context, base string) (int, string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), err
}

// readyzBurst sends n anonymous /readyz at once and returns each answer.
func readyzBurst(t *testing.T, base string, n int) (codes []int, bodies []string) {
	t.Helper()
	codes, bodies = make([]int, n), make([]string, n)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			code, body, err := anonReadyz(ctx, base)
			if err != nil {
				body = err.Error()
			}
			codes[i], bodies[i] = code, body
		})
	}
	wg.Wait()
	return codes, bodies
}

// checkAnonBody fails unless body is exactly {"status": want} (a 200) or
// a problem saying only "not ready" (a 503), and holds none of leaks.
func checkAnonBody(t *testing.T, code int, body string, leaks ...string) bool {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("anonymous /readyz: %d %q: %v", code, body, err)
	}
	failed := t.Failed()
	switch code {
	case http.StatusOK:
		if len(m) != 1 || m["status"] != "ready" {
			t.Errorf("anonymous /readyz 200 says more than ready: %s", body)
		}
	case http.StatusServiceUnavailable:
		if m["detail"] != "not ready" {
			t.Errorf("anonymous /readyz 503 says more than not ready: %s", body)
		}
	default:
		t.Errorf("anonymous /readyz: %d %s", code, body)
	}
	for _, l := range leaks {
		if l != "" && strings.Contains(body, l) {
			t.Errorf("anonymous /readyz shows %q: %s", l, body)
		}
	}
	return t.Failed() == failed
}

// TestReadyzCachedAndMinimal (issue 33, S4): 200 anonymous /readyz at once
// cost the lab's MAAS one probe, and one more per readiness TTL the burst
// lasted (counted by the lab MAAS itself), and the same burst while a
// proxy in front of MAAS fails costs that proxy as much; the anonymous answer is only ready / not ready:
// no state path, no cluster view, nothing of the proxy's error page. A
// token's holder still gets the cluster view, and the reason when not ready.
func TestReadyzCachedAndMinimal(t *testing.T) {
	t.Parallel()
	lb, err := lab.Start(t.Context(), lab.Config{Design: designtest.Example(t), TimeScale: 0.001, Seed: 33})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	info := lb.Info()
	proxy := newFailingProxy(t, info.MAASURL)
	info.MAASURL = proxy.URL + "/MAAS"
	dir, state, cfg := serveLabState(t, info)
	// The burst is 200 connections from one address: the per-source cap
	// (connsPerSource, TestAPIConnsPerSource) would answer past its 64th
	// with 429 before the probe runs; this test measures the probe alone.
	appendConfig(t, cfg, "readyCheckTTL: 2s\nconnsPerSource: -1\n")
	p := startServe(t, cfg, state, dir)
	defer p.stop()

	if code, b := p.call(t, "GET", "/readyz", ""); code != 200 || !strings.Contains(b, `"cluster"`) {
		t.Fatalf("/readyz with the admin token: %d %s", code, b)
	}
	time.Sleep(2100 * time.Millisecond) // the last round is stale: the burst needs one
	before, start := lb.MAAS.Stats().Snapshot().Total, time.Now()
	codes, bodies := readyzBurst(t, p.base, 200)
	spent := lb.MAAS.Stats().Snapshot().Total - before
	// One probe is 8 GETs, and a round lasts the TTL (2 s): a burst may
	// need one more per TTL it lasts.
	limit := 8 * (2 + int64(time.Since(start)/(2*time.Second)))
	for i := range codes {
		if !checkAnonBody(t, codes[i], bodies[i], state, filepath.Dir(state), "cluster", "replicas") {
			break
		}
		if codes[i] != 200 {
			t.Fatalf("anonymous /readyz %d: %d %s", i, codes[i], bodies[i])
		}
	}
	if int64(spent) > limit {
		t.Errorf("200 anonymous /readyz made %d requests to the lab's MAAS; want at most %d (a probe per TTL the burst lasted, and one)", spent, limit)
	}
	t.Logf("200 anonymous /readyz: %d MAAS requests", spent)

	proxy.failing.Store(true)
	notReady := waitNotReady(t, p.base)
	checkAnonBody(t, http.StatusServiceUnavailable, notReady, readyzMarker, "upstream failed", state, "drivers")
	time.Sleep(2100 * time.Millisecond) // stale again: the failing burst needs a round
	hits, start := proxy.hits.Load(), time.Now()
	codes, bodies = readyzBurst(t, p.base, 200)
	spentProxy := proxy.hits.Load() - hits
	// As above: a probe per TTL the burst lasted, and one.
	if limit = 8 * (2 + int64(time.Since(start)/(2*time.Second))); int64(spentProxy) > limit {
		t.Errorf("200 anonymous /readyz against a failing MAAS made %d requests to it; want at most %d", spentProxy, limit)
	}
	t.Logf("200 anonymous /readyz, MAAS failing: %d requests to it", spentProxy)
	for i := range codes {
		if codes[i] != http.StatusServiceUnavailable || !checkAnonBody(t, codes[i], bodies[i], readyzMarker, "upstream failed", state, "drivers") {
			t.Fatalf("anonymous /readyz %d, MAAS failing: %d %s", i, codes[i], bodies[i])
		}
	}
	if code, b := p.call(t, "GET", "/readyz", ""); code != 503 || !strings.Contains(b, "drivers") {
		t.Errorf("/readyz with the admin token, MAAS failing: %d %s; want 503 saying why", code, b)
	}
}

// waitNotReady polls the anonymous /readyz (at most 10 s) until it answers
// 503, and returns that answer.
func waitNotReady(t *testing.T, base string) string {
	t.Helper()
	for range 100 {
		code, body, err := anonReadyz(t.Context(), base)
		if err == nil && code == http.StatusServiceUnavailable {
			return body
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("/readyz did not answer 503 within 10 s of MAAS failing")
	return ""
}

func appendConfig(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		t.Fatal(err)
	}
}
