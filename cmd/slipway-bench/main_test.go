package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// bench runs one command line of slipway-bench in the test's process.
func bench(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := run(ctx, args, &out, &errs)
	return code, out.String(), errs.String()
}

// TestGenHostile: the file is written at about the size asked, is YAML a
// decoder accepts, and a bad shape, size or missing --out is a usage error.
func TestGenHostile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "f.yaml")
	code, stdout, errs := bench(t, "gen-hostile", "--shape", "flow-list", "--size", "64KiB", "--out", out)
	if code != 0 {
		t.Fatalf("gen-hostile: exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 60<<10 || len(b) > 68<<10 {
		t.Errorf("wrote %d bytes, asked for 64 KiB", len(b))
	}
	if !strings.Contains(stdout, fmt.Sprintf("wrote %d bytes of flow-list", len(b))) {
		t.Errorf("stdout %q does not say what it wrote", stdout)
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Errorf("the flow list is not YAML: %v", err)
	}
	for _, args := range [][]string{
		{"gen-hostile", "--shape", "no-such", "--out", out},
		{"gen-hostile", "--size", "lots", "--out", out},
		{"gen-hostile"},
		{"no-such-command"},
	} {
		if code, _, errs := bench(t, args...); code != exitUsage || !strings.Contains(errs, "error:") {
			t.Errorf("%v: exit %d, stderr %q; want %d and an error", args, code, errs, exitUsage)
		}
	}
}

// countingServer answers every GET with 200 (404 for /missing/) and
// counts the requests by path and by bearer token: the independent count.
type countingServer struct {
	mu     sync.Mutex
	paths  map[string]int
	tokens map[string]int
}

func newCountingServer(t *testing.T) (*countingServer, string) {
	c := &countingServer{paths: map[string]int{}, tokens: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.paths[r.URL.Path]++
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			c.tokens[tok]++
		}
		c.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/missing/") {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	return c, srv.URL
}

// TestBenchOnceSendsEachOnce: every request of the list reaches the
// server exactly once (the server's own count), and the printed totals
// match it.
func TestBenchOnceSendsEachOnce(t *testing.T) {
	c, url := newCountingServer(t)
	code, out, errs := bench(t, "bench-once", url, "--path", "/self/%d.json", "--count", "50", "--conns", "4")
	if code != 0 {
		t.Fatalf("bench-once: exit %d: %s", code, errs)
	}
	if len(c.paths) != 50 {
		t.Errorf("the server saw %d paths, want 50", len(c.paths))
	}
	for i := range 50 {
		if n := c.paths[fmt.Sprintf("/self/%d.json", i)]; n != 1 {
			t.Errorf("/self/%d.json sent %d times, want once", i, n)
		}
	}
	if !strings.HasPrefix(out, "requests 50, non-200 0, ") {
		t.Errorf("output %q", out)
	}

	tokens := filepath.Join(t.TempDir(), "tokens.txt")
	if err := os.WriteFile(tokens, []byte("a1\nb2\nc3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := bench(t, "bench-once", url, "--tokens", tokens, "--conns", "2"); code != 0 {
		t.Fatalf("bench-once --tokens: exit %d: %s", code, errs)
	}
	if c.paths["/v1/self"] != 3 || c.tokens["a1"] != 1 || c.tokens["b2"] != 1 || c.tokens["c3"] != 1 {
		t.Errorf("GET /v1/self %d times with tokens %v, want each of 3 once", c.paths["/v1/self"], c.tokens)
	}

	if code, out, _ := bench(t, "bench-once", url, "--path", "/missing/%d", "--count", "3", "--conns", "1"); code != 0 || !strings.HasPrefix(out, "requests 3, non-200 3, ") {
		t.Errorf("404s: exit %d, output %q; want them counted as non-200", code, out)
	}
	for _, args := range [][]string{
		{"bench-once", "ftp://x", "--path", "/%d", "--count", "1"},
		{"bench-once", url},
		{"bench-once", url, "--path", "/%d", "--count", "1", "--conns", "0"},
	} {
		if code, _, _ := bench(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// syncBuffer is a bytes.Buffer written by the command and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestBenchIntrospection: the served site answers /v1/self with every
// token written to tokens.txt, and each static file is that node's answer.
func TestBenchIntrospection(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"bench-introspection", "--nodes", "3", "--out", dir, "--listen", "127.0.0.1:0"}, &stdout, &stderr)
	}()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("bench-introspection: exit %d: %s", code, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("bench-introspection did not stop within 30 s of its context's end")
		}
	}()
	addr := regexp.MustCompile(`on (127\.0\.0\.1:\d+)`)
	var m []string
	for deadline := time.Now().Add(60 * time.Second); m == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		m = addr.FindStringSubmatch(stdout.String())
	}
	if m == nil {
		t.Fatalf("no address printed; stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	f, err := os.Open(filepath.Join(dir, "tokens.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var i int
	for sc := bufio.NewScanner(f); sc.Scan(); i++ {
		req, _ := http.NewRequest("GET", "http://"+m[1]+"/v1/self", nil)
		req.Header.Set("Authorization", "Bearer "+sc.Text())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		static, err := os.ReadFile(filepath.Join(dir, "static", "self", fmt.Sprintf("%d.json", i)))
		if resp.StatusCode != 200 || err != nil || !bytes.Equal(body, static) {
			t.Errorf("token %d: %s, static file %v, same answer %v", i, resp.Status, err, bytes.Equal(body, static))
		}
	}
	if i != 3 {
		t.Errorf("tokens.txt holds %d tokens, want 3", i)
	}
}
