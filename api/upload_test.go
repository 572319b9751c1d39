package api_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/internal/hostileyaml"
	"github.com/slipway-dev/slipway/internal/testtool"
)

// designTarGz is a tar.gz holding one file per name.
func designTarGz(t testing.TB, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	for name, b := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: int64(len(b)), Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// uploadFixture is the API with its own upload directory.
func uploadFixture(t *testing.T, set func(*api.Config)) (*fixture, string) {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{apitest.Start(t, apitest.WithSeed(9), apitest.WithConfig(func(c *api.Config) {
		c.UploadDir = dir
		if set != nil {
			set(c)
		}
	}))}
	return f, dir
}

// post sends body to path; chunked hides its length (no Content-Length).
func (f *fixture) post(t *testing.T, path, token, ctype string, body []byte, chunked bool) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader = bytes.NewReader(body)
	if chunked {
		r = io.MultiReader(r) // not a type whose length net/http can see
	}
	req, err := http.NewRequestWithContext(t.Context(), "POST", f.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func problemOf(t *testing.T, b []byte) api.Problem {
	t.Helper()
	var p api.Problem
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("not a problem: %s", b)
	}
	return p
}

func empty(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		left, _ := os.ReadDir(dir)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upload directory still holds %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHostileUploadServerStaysUp: a viewer's 32 KB upload of a 32 MiB
// flow list of zeros used to make the server build a yaml.v3 tree of 16
// million nodes (5 GB; out of memory on smaller machines). Now it is a
// 413 after 8 MiB of decompression, with no parse, and a 4 MiB one (under
// the file limit) is a finding at its file and line; the server answers
// /healthz after both, allocating tens of MiB.
func TestHostileUploadServerStaysUp(t *testing.T) {
	f, dir := uploadFixture(t, nil)
	huge, err := hostileyaml.Generate("flow-list", 32<<20)
	if err != nil {
		t.Fatal(err)
	}
	body := designTarGz(t, map[string][]byte{"00-site/a.yaml": huge})
	t.Logf("upload: %d bytes", len(body))
	var resp *http.Response
	var b []byte
	n := testtool.Allocated(func() {
		resp, b = f.post(t, "/api/v1/designs/validate", f.Token[api.RoleViewer], "application/gzip", body, false)
	})
	p := problemOf(t, b)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(p.Detail, "00-site/a.yaml") || !strings.Contains(p.Detail, "designMaxFileBytes") {
		t.Fatalf("32 MiB list: %d %+v", resp.StatusCode, p)
	}
	t.Logf("the 32 MiB list: %d, %d MiB allocated", resp.StatusCode, n>>20)
	if n > 96<<20 {
		t.Errorf("the 32 MiB list allocated %d MiB in the server", n>>20)
	}

	dense, _ := hostileyaml.Generate("flow-list", 4<<20)
	body = designTarGz(t, map[string][]byte{"00-site/a.yaml": dense})
	n = testtool.Allocated(func() {
		resp, b = f.post(t, "/api/v1/designs/validate", f.Token[api.RoleViewer], "application/gzip", body, false)
	})
	type finding struct {
		File string
		Line int
	}
	var res struct {
		Valid    bool
		Findings []finding
	}
	if err := json.Unmarshal(b, &res); err != nil || resp.StatusCode != 200 || res.Valid ||
		!slices.ContainsFunc(res.Findings, func(f finding) bool { return f.File == "00-site/a.yaml" && f.Line == 1 }) {
		t.Fatalf("4 MiB list: %d %.500s", resp.StatusCode, b)
	}
	t.Logf("the 4 MiB list: %d, %d MiB allocated", resp.StatusCode, n>>20)
	if n > 96<<20 {
		t.Errorf("the 4 MiB list allocated %d MiB in the server", n>>20)
	}
	resp, b = f.post(t, "/api/v1/designs", f.Token[api.RoleOperator], "application/gzip", body, false)
	if resp.StatusCode != http.StatusUnprocessableEntity || problemOf(t, b).Findings == nil {
		t.Errorf("apply of the 4 MiB list: %d %s", resp.StatusCode, b)
	}
	if code, _ := f.do(t, "GET", "/healthz", "", "", nil); code != 200 {
		t.Errorf("healthz after the uploads: %d", code)
	}
	empty(t, dir)
}

// TestDesignUploadChunkedTooLarge: a body over the limit without a
// Content-Length is a 413 like one with it (it was a 400, "the tar
// archive is damaged", as the limit showed up as a read error).
func TestDesignUploadChunkedTooLarge(t *testing.T) {
	t.Parallel()
	f, dir := uploadFixture(t, func(c *api.Config) { c.DesignBodyBytes = 1 << 20 })
	noise := make([]byte, 2<<20)
	rand.Read(noise)
	body := designTarGz(t, map[string][]byte{"00-site/a.yaml": noise})
	for _, path := range []string{"/api/v1/designs", "/api/v1/designs/validate"} {
		for _, chunked := range []bool{true, false} {
			resp, b := f.post(t, path, f.Token[api.RoleOperator], "application/gzip", body, chunked)
			if p := problemOf(t, b); resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(p.Detail, "1048576") {
				t.Errorf("%s chunked=%v: %d %+v", path, chunked, resp.StatusCode, p)
			}
		}
	}
	doc := []byte(`[{"apiVersion":"slipway/v1","kind":"Network","metadata":{"name":"n"},"spec":{"x":"` + strings.Repeat("y", 2<<20) + `"}}]`)
	resp, b := f.post(t, "/api/v1/designs/validate", f.Token[api.RoleViewer], "application/json", doc, true)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked JSON: %d %s", resp.StatusCode, b)
	}
	empty(t, dir)
}

// TestDesignUploadsBounded: with every parse slot held (here by an upload
// whose body has not arrived), the next upload waits DesignWait and gets
// a 503 with Retry-After; the held one then completes.
func TestDesignUploadsBounded(t *testing.T) {
	f, dir := uploadFixture(t, func(c *api.Config) { c.DesignParses, c.DesignWait = 1, 50*time.Millisecond })
	small := designTarGz(t, map[string][]byte{"a.yaml": []byte("apiVersion: slipway/v1\nkind: Network\nmetadata: {name: n}\nspec: {cidr: 10.0.0.0/24}\n")})
	pr, pw := io.Pipe()
	held := make(chan int)
	go func() {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", f.URL+"/api/v1/designs/validate", pr)
		req.Header.Set("Authorization", "Bearer "+f.Token[api.RoleViewer])
		req.Header.Set("Content-Type", "application/gzip")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			held <- 0
			return
		}
		resp.Body.Close()
		held <- resp.StatusCode
	}()
	if _, err := pw.Write(small[:10]); err != nil {
		t.Fatal(err)
	}
	var resp *http.Response
	var b []byte
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, b = f.post(t, "/api/v1/designs/validate", f.Token[api.RoleViewer], "application/gzip", small, false)
		if resp.StatusCode != 200 || time.Now().After(deadline) {
			break
		}
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" || !strings.Contains(problemOf(t, b).Detail, "try again") {
		t.Errorf("with the slot held: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if _, err := pw.Write(small[10:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if code := <-held; code != 200 {
		t.Errorf("the held upload: %d", code)
	}
	empty(t, dir)
}

// TestUploadDirectories: every upload's directory is removed whatever
// happens (success, findings, each refusal, a client gone mid-body, a
// panic while reading), and what a crashed process left is removed at
// start.
func TestUploadDirectories(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "slipway-design-12345")
	if err := os.MkdirAll(filepath.Join(stale, "00-site"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "00-site", "a.yaml"), []byte("x: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &fixture{apitest.Start(t, apitest.WithSeed(9), apitest.WithConfig(func(c *api.Config) { c.UploadDir = dir }))}
	empty(t, dir)

	good := designTarGz(t, map[string][]byte{"a.yaml": []byte("apiVersion: slipway/v1\nkind: Network\nmetadata: {name: n}\nspec: {cidr: 10.0.0.0/24}\n")})
	bad := designTarGz(t, map[string][]byte{"a.yaml": []byte("a: [\n")})
	for _, tc := range []struct {
		name, ctype string
		body        []byte
		code        int
	}{
		{"findings", "application/gzip", good, 200},
		{"malformed YAML", "application/gzip", bad, 200},
		{"not gzip", "application/gzip", []byte("plain"), 400},
		{"unsupported type", "text/plain", []byte("x"), 415},
		{"empty JSON", "application/json", []byte("[]"), 400},
	} {
		resp, b := f.post(t, "/api/v1/designs/validate", f.Token[api.RoleViewer], tc.ctype, tc.body, false)
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, b)
		}
		empty(t, dir)
	}

	// A client that goes away mid-body.
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(ctx, "POST", f.URL+"/api/v1/designs/validate", pr)
	req.Header.Set("Authorization", "Bearer "+f.Token[api.RoleViewer])
	req.Header.Set("Content-Type", "application/gzip")
	go func() {
		_, _ = pw.Write(good[:20]) // the server may stop reading first: what follows is the test
		time.Sleep(200 * time.Millisecond)
		cancel()
		pw.CloseWithError(context.Canceled) // else the client's transport waits on the body
	}()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	empty(t, dir)

	// A panic while the body is read: the panic goes on (no recovery in
	// the API), the directory is gone and the slot free.
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not come through")
			}
		}()
		r := httptest.NewRequest("POST", "/api/v1/designs/validate", &panicky{good[:20]})
		r.Header.Set("Authorization", "Bearer "+f.Token[api.RoleViewer])
		r.Header.Set("Content-Type", "application/gzip")
		f.API.Handler().ServeHTTP(httptest.NewRecorder(), r)
	}()
	empty(t, dir)
	for range api.DefaultDesignParses + 1 {
		if resp, b := f.post(t, "/api/v1/designs/validate", f.Token[api.RoleViewer], "application/gzip", good, false); resp.StatusCode != 200 {
			t.Fatalf("after the panic: %d %s (a slot leaked?)", resp.StatusCode, b)
		}
	}
}

// panicky reads its bytes, then panics.
type panicky struct{ b []byte }

func (p *panicky) Read(b []byte) (int, error) {
	if len(p.b) == 0 {
		panic("reader failed")
	}
	n := copy(b, p.b)
	p.b = p.b[n:]
	return n, nil
}
