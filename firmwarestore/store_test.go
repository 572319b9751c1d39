package firmwarestore_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/firmwarestore"
)

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// origin serves body at /img and counts the downloads.
func origin(t *testing.T, body []byte) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		time.Sleep(20 * time.Millisecond) // concurrent callers overlap
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func newStore(t *testing.T, cfg firmwarestore.Config) *firmwarestore.Store {
	t.Helper()
	if cfg.CacheDir == "" {
		cfg.CacheDir = t.TempDir()
	}
	s, err := firmwarestore.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestURLFetchedOnceAndServed: many callers of one image at once cause
// one download; the image is served at /firmware/<sha256> byte for byte,
// with HEAD and Range.
func TestURLFetchedOnceAndServed(t *testing.T) {
	body := []byte(strings.Repeat("SLIPWAY-LAB-FIRMWARE component=bios version=2\n", 100))
	src, downloads := origin(t, body)
	s := newStore(t, firmwarestore.Config{BaseURL: "http://bmc-net.example:8702/"})
	img := design.FirmwareImage{URL: src.URL + "/img", SHA256: sum(body)}
	var wg sync.WaitGroup
	urls := make([]string, 8)
	for i := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, err := s.ImageURL(t.Context(), img, "gpu", "bios")
			if err != nil {
				t.Error(err)
			}
			urls[i] = u
		}()
	}
	wg.Wait()
	if n := downloads.Load(); n != 1 {
		t.Errorf("%d downloads of one image for 8 callers, want 1", n)
	}
	want := "http://bmc-net.example:8702/firmware/" + sum(body)
	for _, u := range urls {
		if u != want {
			t.Fatalf("image URL %q, want %q", u, want)
		}
	}
	h := httptest.NewServer(s.Handler())
	defer h.Close()
	get := func(method, path, rng string) (*http.Response, []byte) {
		req, _ := http.NewRequest(method, h.URL+path, nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	if resp, b := get("GET", "/firmware/"+sum(body), ""); resp.StatusCode != 200 || sum(b) != sum(body) {
		t.Errorf("GET: %s, %d bytes of sha256 %s", resp.Status, len(b), sum(b))
	}
	if resp, _ := get("HEAD", "/firmware/"+sum(body), ""); resp.StatusCode != 200 || resp.ContentLength != int64(len(body)) {
		t.Errorf("HEAD: %s, length %d", resp.Status, resp.ContentLength)
	}
	if resp, b := get("GET", "/firmware/"+sum(body), "bytes=0-6"); resp.StatusCode != http.StatusPartialContent || string(b) != "SLIPWAY" {
		t.Errorf("Range: %s %q", resp.Status, b)
	}
	if resp, _ := get("GET", "/firmware/"+strings.Repeat("0", 64), ""); resp.StatusCode != 404 {
		t.Errorf("an unknown hash: %s, want 404", resp.Status)
	}
	if resp, _ := get("GET", "/firmware/../../etc/passwd", ""); resp.StatusCode != 404 {
		t.Errorf("a path: %s, want 404", resp.Status)
	}
	if resp, _ := get("POST", "/firmware/"+sum(body), ""); resp.StatusCode != 405 {
		t.Errorf("POST: %s, want 405", resp.Status)
	}
}

// TestWrongChecksumRefused: an image whose bytes do not hash to the
// design's sha256 is refused, naming the profile, component, source and
// both hashes, and is never served.
func TestWrongChecksumRefused(t *testing.T) {
	body := []byte("SLIPWAY-LAB-FIRMWARE component=gpu version=96\nxxxx")
	src, _ := origin(t, body)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gpu.bin"), body, 0o600); err != nil {
		t.Fatal(err)
	}
	wrong := sum([]byte("something else"))
	s := newStore(t, firmwarestore.Config{Dir: dir})
	for _, img := range []design.FirmwareImage{
		{URL: "http://admin:hunter2@" + strings.TrimPrefix(src.URL, "http://") + "/img", SHA256: wrong},
		{File: "gpu.bin", SHA256: wrong},
	} {
		_, err := s.Get(t.Context(), img, firmwarestore.Label{Profile: "xe9680", Component: "gpu"})
		if !errors.Is(err, firmwarestore.ErrChecksum) {
			t.Fatalf("%+v: %v, want a checksum error", img, err)
		}
		for _, w := range []string{"xe9680", "gpu", wrong, sum(body), "refused before any BMC"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not name %q", err, w)
			}
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error %q carries the URL's password", err)
		}
	}
	h := httptest.NewServer(s.Handler())
	defer h.Close()
	for _, x := range []string{wrong, sum(body)} {
		resp, err := http.Get(h.URL + "/firmware/" + x)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("%s served (%s) after a checksum refusal", x, resp.Status)
		}
	}
}

// TestFileAndBounds: a file of the firmware directory is verified and
// served from a kept copy; a path outside it, an image over the size
// bound, and a missing file are refused.
func TestFileAndBounds(t *testing.T) {
	dir := t.TempDir()
	body := []byte("SLIPWAY-LAB-FIRMWARE component=bmc version=7\n")
	if err := os.WriteFile(filepath.Join(dir, "bmc.bin"), body, 0o600); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, firmwarestore.Config{Dir: dir, MaxBytes: 1000})
	im, err := s.Get(t.Context(), design.FirmwareImage{File: "bmc.bin", SHA256: sum(body)}, firmwarestore.Label{Profile: "p", Component: "bmc"})
	if err != nil || im.Size != int64(len(body)) {
		t.Fatalf("%+v %v", im, err)
	}
	// Replaced in the directory afterwards: what is served is still the
	// verified copy.
	if err := os.WriteFile(filepath.Join(dir, "bmc.bin"), []byte("tampered"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(s.Handler())
	defer h.Close()
	resp, err := http.Get(h.URL + "/firmware/" + sum(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if sum(b) != sum(body) {
		t.Errorf("served %q, want the verified image", b)
	}
	big := make([]byte, 2000)
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		img  design.FirmwareImage
		want string
	}{
		{design.FirmwareImage{File: "../bmc.bin", SHA256: sum(body)}, "not a path"},
		{design.FirmwareImage{File: "big.bin", SHA256: sum(big)}, "larger than the bound"},
		{design.FirmwareImage{File: "none.bin", SHA256: sum(body[:3])}, "no such file"},
		{design.FirmwareImage{URL: "ftp://x/y", SHA256: sum(body[:4])}, "not an http(s) URL"},
		{design.FirmwareImage{File: "bmc.bin", SHA256: "abc"}, "64 hex digits"},
	} {
		if _, err := s.Get(t.Context(), tc.img, firmwarestore.Label{Profile: "p", Component: "bmc"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.img, err, tc.want)
		}
	}
}

// TestFileInSubdirectory: a file named by a relative slash-separated
// path (dell/xe9680-bios.bin), as design validation accepts it, is read
// from that subdirectory of the firmware directory; a symbolic link in
// the directory leading out of it is refused.
func TestFileInSubdirectory(t *testing.T) {
	dir := t.TempDir()
	body := []byte("SLIPWAY-LAB-FIRMWARE component=bios version=2.19.1\n")
	if err := os.MkdirAll(filepath.Join(dir, "dell"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dell", "xe9680-bios.bin"), body, 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.bin")
	if err := os.WriteFile(outside, body[:10], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "dell", "link.bin")); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, firmwarestore.Config{Dir: dir})
	l := firmwarestore.Label{Profile: "p", Component: "bios"}
	im, err := s.Get(t.Context(), design.FirmwareImage{File: "dell/xe9680-bios.bin", SHA256: sum(body)}, l)
	if err != nil || im.Size != int64(len(body)) {
		t.Fatalf("dell/xe9680-bios.bin: %+v %v, want it read", im, err)
	}
	if _, err := s.Get(t.Context(), design.FirmwareImage{File: "dell/link.bin", SHA256: sum(body[:10])}, l); err == nil {
		t.Error("a link out of the firmware directory was read")
	}
	for _, f := range []string{"../x.bin", "/etc/passwd", "dell/../../x.bin", `dell\x.bin`} {
		if _, err := s.Get(t.Context(), design.FirmwareImage{File: f, SHA256: sum(body)}, l); err == nil || !strings.Contains(err.Error(), "not a path") {
			t.Errorf("%s: %v, want refused", f, err)
		}
	}
}

// TestPartialDownloadsRemoved: a serve killed mid-download (SIGKILL: no
// deferred removal runs) leaves a .partial-* file of up to MaxBytes in the
// cache; the next store on that cache removes it, and keeps the verified
// images.
func TestPartialDownloadsRemoved(t *testing.T) {
	cache := t.TempDir()
	partial := filepath.Join(cache, ".partial-123")
	kept := filepath.Join(cache, sum([]byte("x")))
	for _, p := range []string{partial, kept} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	newStore(t, firmwarestore.Config{CacheDir: cache})
	if _, err := os.Stat(partial); !os.IsNotExist(err) {
		t.Errorf("the partial download is still there: %v", err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("a verified image was removed: %v", err)
	}
}
