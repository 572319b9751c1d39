package api_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// benchServer serves the API over a stored 10,000-node design (bbolt on
// disk, no drivers: the benchmarks measure the API and the store).
func benchServer(b *testing.B) *httptest.Server { return benchServerWith(b, 10000, nil) }

// benchServerWith serves the API over a stored design of n generated
// nodes; fill, when set, writes into the store before the engine starts.
func benchServerWith(b *testing.B, n int, fill func(statestore.Store, *design.Design)) *httptest.Server {
	b.Helper()
	d, err := labrun.Generated(b.Context(), b.TempDir(), n)
	if err != nil {
		b.Fatal(err)
	}
	st, err := bolt.Open(b.TempDir()+"/state.db", bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	raw, id, err := d.Canonical()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.PutRevision(b.Context(), statestore.Revision{ID: id, Design: raw, Counts: d.Counts()}); err != nil {
		b.Fatal(err)
	}
	if fill != nil {
		fill(st, d)
	}
	e, err := orchestrator.New(orchestrator.Config{Store: st, SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	if err := e.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	srv, err := api.New(api.Config{Engine: e, Store: st, Authenticate: benchAuth, Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	b.Cleanup(ts.Close)
	request(b, "GET", ts.URL+"/api/v1/nodes?limit=1", nil) // decode the design once, outside the timings
	return ts
}

// benchToken is the benchmarks' one token; benchAuth lets it in as an
// operator.
const benchToken = "tok-operator"

func benchAuth(_ context.Context, tok string) (api.Principal, error) {
	if tok != benchToken {
		return api.Principal{}, errors.New("unknown token")
	}
	return api.Principal{ID: "o1", Name: "operator", Role: api.RoleOperator}, nil
}

func timed(b *testing.B, do func() int) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if code := do(); code >= 300 {
			b.Fatalf("status %d", code)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

func request(b *testing.B, method, url string, body []byte) int {
	req, _ := http.NewRequestWithContext(b.Context(), method, url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+benchToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// BenchmarkListNodes10k: GET /nodes (a page of 100, and a rack filter)
// over 10,000 nodes.
func BenchmarkListNodes10k(b *testing.B) {
	ts := benchServer(b)
	b.Run("page", func(b *testing.B) {
		timed(b, func() int { return request(b, "GET", ts.URL+"/api/v1/nodes?offset=5000&limit=100", nil) })
	})
	b.Run("rack-filter", func(b *testing.B) {
		timed(b, func() int { return request(b, "GET", ts.URL+"/api/v1/nodes?rack=r0007&stage=pending", nil) })
	})
}

// BenchmarkCreateTask: POST /tasks (verify_site: stored, audited and run;
// without drivers it ends at once, so the API and the store are measured).
func BenchmarkCreateTask(b *testing.B) {
	ts := benchServer(b)
	timed(b, func() int {
		return request(b, "POST", ts.URL+"/api/v1/tasks", []byte(`{"action":"verify_site"}`))
	})
}
