package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
)

// upstream is what the probe's Ready asks: an HTTP server that counts
// the requests it gets (the independent count), takes 50 ms to answer
// and, when failing, answers 500 with a page that names its secret.
type upstream struct {
	*httptest.Server
	hits    atomic.Int64
	failing atomic.Bool
}

const upstreamSecret = "upstream-page-secret-41c2"

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		time.Sleep(50 * time.Millisecond)
		if u.failing.Load() {
			http.Error(w, "echo: "+upstreamSecret, http.StatusInternalServerError)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

// ready is a Ready func over the upstream: its answer's status and body.
func (u *upstream) ready(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.URL, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("upstream: %d %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return nil
}

// readyzBurst asks /readyz n times at once with token ("" none) and
// returns the distinct answers ("code body"), counted.
func readyzBurst(t *testing.T, f *fixture, n int, token string) map[string]int {
	t.Helper()
	var mu sync.Mutex
	out := map[string]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			code, b := f.do(t, "GET", "/readyz", token, "", nil)
			var p struct{ Detail, Status any }
			_ = json.Unmarshal(b, &p)
			key := fmt.Sprintf("%d %s", code, b)
			if code == http.StatusServiceUnavailable { // the request ID differs: keep the detail
				key = fmt.Sprintf("%d %v", code, p.Detail)
			}
			mu.Lock()
			out[key]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// TestReadyzSharesOneCheck (issue 33, S4): concurrent probes share one
// round of upstream checks and its result is reused for ReadyTTL, a
// failure as much as a success: the upstream's own counter sees one
// request per round, not one per probe. After ReadyTTL, one probe asks
// again.
func TestReadyzSharesOneCheck(t *testing.T) {
	up := newUpstream(t)
	const ttl = time.Second
	f := &fixture{apitest.Start(t, apitest.WithSeed(9), apitest.WithConfig(func(c *api.Config) {
		c.Ready, c.ReadyTTL = up.ready, ttl
	}))}
	for _, failing := range []bool{false, true} {
		time.Sleep(ttl + 100*time.Millisecond) // the last round is stale
		up.failing.Store(failing)
		before, start := up.hits.Load(), time.Now()
		answers := readyzBurst(t, f, 100, "")
		rounds := up.hits.Load() - before
		// A burst longer than ttl may need a round per ttl it lasts.
		if limit := 1 + int64(time.Since(start)/ttl); rounds < 1 || rounds > limit {
			t.Errorf("failing %v: 100 probes made %d upstream requests; want 1 to %d", failing, rounds, limit)
		}
		want := `200 {"status":"ready"}` + "\n"
		if failing {
			want = "503 not ready"
		}
		if answers[want] != 100 {
			t.Errorf("failing %v: anonymous answers %v; want 100 × %q", failing, answers, want)
		}
	}
	// Still failing. A round made just now (the burst's last may be
	// nearly ttl old by its end) is fresh: a probe with a token right
	// after it gets the reason from it, without asking the upstream again.
	time.Sleep(ttl + 100*time.Millisecond)
	f.do(t, "GET", "/readyz", "", "", nil)
	before := up.hits.Load()
	code, b := f.do(t, "GET", "/readyz", f.Token[api.RoleViewer], "", nil)
	if code != http.StatusServiceUnavailable || !strings.Contains(string(b), "drivers: upstream: 500") {
		t.Errorf("viewer /readyz, upstream failing: %d %s; want 503 with the reason", code, b)
	}
	if n := up.hits.Load() - before; n != 0 {
		t.Errorf("a probe within ReadyTTL of the last round asked the upstream %d times", n)
	}
	time.Sleep(ttl + 100*time.Millisecond)
	before = up.hits.Load()
	f.do(t, "GET", "/readyz", "", "", nil)
	if n := up.hits.Load() - before; n != 1 {
		t.Errorf("a probe after ReadyTTL asked the upstream %d times; want 1", n)
	}
}

// TestReadyzMinimalWithoutToken (issue 33, S4): without a valid token
// (none, or one that is not valid) /readyz says ready or not ready, no
// more: no cluster view (the state store's path or endpoints, the
// replicas' URLs) and no reason (the drivers' errors, which may carry a
// peer's page). A viewer's token gets both.
func TestReadyzMinimalWithoutToken(t *testing.T) {
	up := newUpstream(t)
	f := &fixture{apitest.Start(t, apitest.WithSeed(9), apitest.WithConfig(func(c *api.Config) {
		c.Ready, c.ReadyTTL = up.ready, 200*time.Millisecond
	}))}
	for _, tok := range []string{"", "slw_notavalidtoken"} {
		code, b := f.do(t, "GET", "/readyz", tok, "", nil)
		if code != 200 || string(b) != `{"status":"ready"}`+"\n" {
			t.Errorf("/readyz with token %q: %d %s; want only ready", tok, code, b)
		}
	}
	if code, b := f.do(t, "GET", "/readyz", f.Token[api.RoleViewer], "", nil); code != 200 || !strings.Contains(string(b), `"cluster"`) {
		t.Errorf("viewer /readyz: %d %s; want the cluster view", code, b)
	}
	up.failing.Store(true)
	time.Sleep(300 * time.Millisecond)
	for _, tok := range []string{"", "slw_notavalidtoken"} {
		code, b := f.do(t, "GET", "/readyz", tok, "", nil)
		var p struct{ Detail string }
		_ = json.Unmarshal(b, &p)
		if code != http.StatusServiceUnavailable || p.Detail != "not ready" || strings.Contains(string(b), upstreamSecret) {
			t.Errorf("/readyz with token %q, upstream failing: %d %s; want 503 not ready, no reason", tok, code, b)
		}
	}
	// The reason is logged for the operator, once a round, not once a probe.
	if logs := f.LogText(); !strings.Contains(logs, "readiness check failed") || strings.Contains(logs, "request failed") {
		t.Errorf("the log: want the failed round, no failed request: %s", logs)
	}
}
