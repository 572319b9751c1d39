package introspection

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/design"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/internal/gensite"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
	"github.com/slipway-dev/slipway/statestore/memory"
)

const benchNodes = 10000

// benchSite is a generated 10,000-node design (internal/gensite), built
// once for every benchmark of the run.
var benchSite = sync.OnceValues(func() (*design.Design, error) { return genSite(benchNodes) })

// genSite is a generated design of n nodes (internal/gensite).
func genSite(n int) (*design.Design, error) {
	dir, err := os.MkdirTemp("", "slipway-gen-site-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if _, err := gensite.Write(dir, gensite.Options{Nodes: n}); err != nil {
		return nil, err
	}
	res, err := yamlingest.Load(context.Background(), []string{dir})
	if err != nil {
		return nil, err
	}
	d, fs := design.Build(res.Sources)
	if fs.HasErrors() {
		return nil, fmt.Errorf("generated site is invalid: %v", fs[0])
	}
	return d, nil
}

type benchStore interface {
	Store
	Revisions
	PutRevision(ctx context.Context, rev statestore.Revision) (statestore.PutResult, error)
}

// putDesign stores d as a revision in st.
func putDesign(tb testing.TB, st benchStore, d *design.Design) {
	tb.Helper()
	raw, id, err := d.Canonical()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := st.PutRevision(tb.Context(), statestore.Revision{ID: id, Design: raw, Counts: d.Counts()}); err != nil {
		tb.Fatal(err)
	}
}

// benchServer stores the design in st and issues a token for every node
// (UserData, 64 at a time).
func benchServer(b *testing.B, st benchStore) (*Server, []string) {
	b.Helper()
	d, err := benchSite()
	if err != nil {
		b.Fatal(err)
	}
	putDesign(b, st, d)
	srv, err := New(Config{Store: st, URL: "http://10.96.0.1:8701", Key: testKey, Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	names := d.NodeNames()
	toks := make([]string, len(names))
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	errs := make(chan error, 1)
	for i, n := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := srv.UserData(b.Context(), d, n, "1"); err != nil {
				select {
				case errs <- err:
				default:
				}
			}
			toks[i] = srv.Token(n, "1")
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	b.Logf("issued %d tokens in %v", len(toks), time.Since(start))
	return srv, toks
}

func benchSelf(b *testing.B, srv *Server, toks []string) {
	h := srv.Handler()
	get := func(tok string) int {
		req := httptest.NewRequest(http.MethodGet, "/v1/self", nil)
		req.RemoteAddr = "10.64.0.20:40000"
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		_, _ = io.Copy(io.Discard, rec.Body)
		return rec.Code
	}
	if get(toks[0]) != 200 { // load the design outside the timings
		b.Fatal("GET /v1/self failed")
	}
	lat := make([]time.Duration, 0, 1<<16)
	i := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if code := get(toks[i%len(toks)]); code != 200 {
			b.Fatalf("status %d", code)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkSelf: GET /v1/self with 10,000 distinct node tokens, in turn,
// over a 10,000-node design (the handler called directly: token check,
// design lookup, the node's view, JSON).
func BenchmarkSelf(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		srv, toks := benchServer(b, memory.New())
		benchSelf(b, srv, toks)
	})
	b.Run("bolt", func(b *testing.B) {
		st, err := bolt.Open(b.TempDir()+"/state.db", bolt.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		srv, toks := benchServer(b, st)
		benchSelf(b, srv, toks)
	})
}

// BenchmarkUserData: issuing (or re-issuing) a node's token and user data
// over the 10,000-node design.
func BenchmarkUserData(b *testing.B) {
	d, err := benchSite()
	if err != nil {
		b.Fatal(err)
	}
	srv, _ := benchServer(b, memory.New())
	names := d.NodeNames()
	i := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		// A new deployment every time: a token written, the last one revoked.
		if _, err := srv.UserData(b.Context(), d, names[i%len(names)], "2."+strconv.Itoa(i/len(names))); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkSelfCold: the first GET /v1/self of each of the 10,000 tokens
// after a restart: every 10,000 requests a new Server on the same store
// and key (empty token and answer caches), its design cache primed by
// one request outside the timings.
func BenchmarkSelfCold(b *testing.B) {
	st, err := bolt.Open(b.TempDir()+"/state.db", bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	srv, toks := benchServer(b, st)
	primer, toks := toks[len(toks)-1], toks[:len(toks)-1]
	get := func(h http.Handler, tok string) int {
		req := httptest.NewRequest(http.MethodGet, "/v1/self", nil)
		req.RemoteAddr = "10.64.0.20:40000"
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	var h http.Handler
	restart := func() {
		s, err := New(srv.cfg)
		if err != nil {
			b.Fatal(err)
		}
		h = s.Handler()
		if get(h, primer) != 200 {
			b.Fatal("GET /v1/self failed")
		}
	}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		if i%len(toks) == 0 {
			b.StopTimer()
			restart()
			b.StartTimer()
		}
		if code := get(h, toks[i%len(toks)]); code != 200 {
			b.Fatalf("status %d", code)
		}
		i++
	}
}

// BenchmarkServeConn: GET /v1/self through Serve's fasthttp server on
// one kept-alive connection whose reads hand it one request at a time and
// whose writes go nowhere: the server's own CPU per request (parsing,
// authenticating, the answer, writing), without the system calls of a
// socket. warm: the 10,000 tokens in turn, each answered twice before (its
// first answer is read from the store, its second caches it); cold:
// each once after a restart (a new Server on the same store and key,
// primed with one request), as scripts/bench-introspection.sh measures.
func BenchmarkServeConn(b *testing.B) {
	st, err := bolt.Open(b.TempDir()+"/state.db", bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	srv, toks := benchServer(b, st)
	primer, toks := toks[len(toks)-1], toks[:len(toks)-1]
	reqs := make([][]byte, len(toks))
	for i, tok := range toks {
		reqs[i] = []byte("GET /v1/self HTTP/1.1\r\nHost: 127.0.0.1:8701\r\nUser-Agent: bench\r\nAuthorization: Bearer " + tok + "\r\n\r\n")
	}
	restart := func(b *testing.B) *Server {
		s, err := New(srv.cfg)
		if err != nil {
			b.Fatal(err)
		}
		c := &loopConn{reqs: [][]byte{[]byte("GET /v1/self HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + primer + "\r\n\r\n")}, n: 1}
		if err := s.fastServer().ServeConn(c); err != nil || c.ok != 1 {
			b.Fatalf("prime: %v, %d answered 200", err, c.ok)
		}
		return s
	}
	b.Run("warm", func(b *testing.B) {
		s := restart(b)
		fs := s.fastServer()
		// Every token answered twice: from the store, then cached.
		_ = fs.ServeConn(&loopConn{reqs: reqs, n: 2 * len(reqs)})
		c := &loopConn{reqs: reqs, n: b.N}
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := processCPU()
		if err := fs.ServeConn(c); err != nil || c.ok != b.N {
			b.Fatalf("%v, %d of %d answered 200", err, c.ok, b.N)
		}
		b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	})
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		var cpu time.Duration
		for done := 0; done < b.N; done += len(reqs) {
			b.StopTimer()
			fs := restart(b).fastServer()
			c := &loopConn{reqs: reqs, n: min(len(reqs), b.N-done)}
			b.StartTimer()
			cpu0 := processCPU()
			if err := fs.ServeConn(c); err != nil || c.ok != c.n {
				b.Fatalf("%v, %d of %d answered 200", err, c.ok, c.n)
			}
			cpu += processCPU() - cpu0
		}
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	})
}

// processCPU is the CPU time (user and system) the process used so far:
// on a machine running other work it moves much less than the wall time
// ns/op reports.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loopConn is a connection that reads n requests, reqs in turn, one a
// Read, then EOF, and counts the 200 answers written to it (each answer
// is one write: it fits the server's write buffer, flushed once the
// request was answered).
type loopConn struct {
	reqs [][]byte
	n, i int
	ok   int
}

var ok200 = []byte("HTTP/1.1 200 OK\r\n")

func (c *loopConn) Read(p []byte) (int, error) {
	if c.i >= c.n {
		return 0, io.EOF
	}
	r := c.reqs[c.i%len(c.reqs)]
	c.i++
	return copy(p, r), nil
}

func (c *loopConn) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, ok200) {
		c.ok++
	}
	return len(p), nil
}

func (c *loopConn) Close() error        { return nil }
func (c *loopConn) LocalAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8701} }
func (c *loopConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *loopConn) SetDeadline(time.Time) error      { return nil }
func (c *loopConn) SetReadDeadline(time.Time) error  { return nil }
func (c *loopConn) SetWriteDeadline(time.Time) error { return nil }
