package firmwarestore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/firmwarestore"
)

// TestImageURLTokenRedacted: a token in an image URL's query (a signed
// URL's X-Amz-Signature, ?token=) or in the URL a redirect leads to is
// never in an error: the error names scheme, host and path only.
func TestImageURLTokenRedacted(t *testing.T) {
	s := newStore(t, firmwarestore.Config{})
	// Nothing answers on port 1: the client's error names the URL.
	src := design.FirmwareImage{URL: "http://user:PASSWORD9@127.0.0.1:1/img.ddraw?token=SECRET123", SHA256: strings.Repeat("a", 64)}
	_, err := s.ImagePath(context.Background(), "gpu-golden", src, 1024)
	if err == nil || strings.Contains(err.Error(), "SECRET123") || strings.Contains(err.Error(), "PASSWORD9") || !strings.Contains(err.Error(), "127.0.0.1:1/img.ddraw") {
		t.Fatalf("the error must name the URL's host and path, never its query or password: %v", err)
	}
	// A redirect to a signed URL that does not answer.
	redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:1/blob?X-Amz-Signature=SIGNED456", http.StatusFound)
	}))
	t.Cleanup(redir.Close)
	src = design.FirmwareImage{URL: redir.URL + "/img?token=SECRET123", SHA256: strings.Repeat("a", 64)}
	_, err = s.ImagePath(context.Background(), "gpu-golden", src, 1024)
	if err == nil || strings.Contains(err.Error(), "SECRET123") || strings.Contains(err.Error(), "SIGNED456") || !strings.Contains(err.Error(), "127.0.0.1:1/blob") {
		t.Fatalf("the error must name the redirect's host and path, never its query: %v", err)
	}
	// A URL the store refuses (not http) is named without its query too.
	err = s.CheckImage("gpu-golden", design.FirmwareImage{URL: "ftp://h/x?token=SECRET123", SHA256: strings.Repeat("a", 64)})
	if err == nil || strings.Contains(err.Error(), "SECRET123") {
		t.Fatalf("CheckImage's error carries the query: %v", err)
	}
}

// TestImageDirVerifiedInPlace: an OS image from the image directory is
// verified where it is, never copied into the cache (each version of a
// 64 GiB image would double the disk); a file replaced after it was
// verified is verified again.
func TestImageDirVerifiedInPlace(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	s := newStore(t, firmwarestore.Config{Dir: dir, CacheDir: cache})
	// version i: 1 MiB + i bytes of one letter, put in place as an
	// operator's copy does (written beside, renamed over).
	version := func(i int) []byte { return []byte(strings.Repeat(string(rune('a'+i)), 1<<20+i)) }
	put := func(b []byte) {
		tmp := filepath.Join(dir, ".img.tmp")
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "img.ddraw")); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(b []byte) (string, error) {
		return s.ImagePath(context.Background(), "gpu-golden", design.FirmwareImage{File: "img.ddraw", SHA256: sum(b)}, int64(len(b)))
	}
	for i := range 3 {
		put(version(i))
		p, err := ask(version(i))
		if err != nil {
			t.Fatal(err)
		}
		if p != filepath.Join(dir, "img.ddraw") {
			t.Fatalf("version %d: path %s, want the file in the image directory", i, p)
		}
	}
	left, _ := os.ReadDir(cache)
	for _, e := range left {
		if !strings.HasPrefix(e.Name(), ".image-") {
			t.Fatalf("the image cache holds %s for an image of the image directory, want no copy", e.Name())
		}
	}
	// Asking for a version no longer in the directory re-reads the file
	// and refuses it; so does a file replaced after its verification.
	if _, err := ask(version(0)); err == nil {
		t.Fatalf("a version no longer in the image directory was answered from memory: %v", err)
	}
	put(version(3))
	if _, err := ask(version(2)); err == nil {
		t.Fatal("a file replaced after its verification was not verified again")
	}
}

// TestImageCacheEvictsOldVersions: a URL image's new version replaces its
// old one in the cache (one file per image, not one per version ever
// synced), also across a restart of the store.
func TestImageCacheEvictsOldVersions(t *testing.T) {
	cache := t.TempDir()
	body := []byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) }))
	t.Cleanup(srv.Close)
	var other []byte
	for i := range 3 {
		s := newStore(t, firmwarestore.Config{CacheDir: cache}) // a restart each time
		if i == 0 {
			other = []byte(strings.Repeat("o", 4096))
			body = other
			if _, err := s.ImagePath(context.Background(), "other", design.FirmwareImage{URL: srv.URL + "/o", SHA256: sum(other)}, int64(len(other))); err != nil {
				t.Fatal(err)
			}
		}
		body = []byte(strings.Repeat(string(rune('a'+i)), 1<<20))
		if _, err := s.ImagePath(context.Background(), "gpu-golden", design.FirmwareImage{URL: srv.URL + "/img", SHA256: sum(body)}, int64(len(body))); err != nil {
			t.Fatal(err)
		}
	}
	left, _ := os.ReadDir(cache)
	var names []string
	for _, e := range left {
		if !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	if len(names) != 2 || !contains(names, sum(body)) || !contains(names, sum(other)) {
		t.Fatalf("cache holds %v, want the newest version of gpu-golden %s and other's %s", names, sum(body), sum(other))
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestImageFetchTimeouts: a download that stops sending fails after the
// idle timeout, naming it; one that keeps sending is bounded by a time
// scaled to its size (FetchTimeout + size at MinFetchRate), not by
// FetchTimeout alone.
func TestImageFetchTimeouts(t *testing.T) {
	body := []byte(strings.Repeat("z", 64<<10))
	stall := make(chan struct{})
	t.Cleanup(func() { close(stall) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fl := w.(http.Flusher)
		if r.URL.Path == "/stall" {
			_, _ = w.Write(body[:1024])
			fl.Flush()
			select {
			case <-stall:
			case <-r.Context().Done():
			}
			return
		}
		// 16 pieces, 50 ms apart: 0.8 s in all, never idle 200 ms.
		for i := range 16 {
			_, _ = w.Write(body[i*4096 : (i+1)*4096])
			fl.Flush()
			time.Sleep(50 * time.Millisecond)
		}
	}))
	t.Cleanup(srv.Close)
	cfg := firmwarestore.Config{FetchTimeout: 300 * time.Millisecond, IdleTimeout: 200 * time.Millisecond, MinFetchRate: 16 << 10}
	s := newStore(t, cfg)
	start := time.Now()
	_, err := s.ImagePath(context.Background(), "gpu-golden", design.FirmwareImage{URL: srv.URL + "/stall", SHA256: sum(body)}, int64(len(body)))
	if err == nil || !strings.Contains(err.Error(), "idle") || time.Since(start) > 5*time.Second {
		t.Fatalf("a stalled download: %v after %v, want an idle-timeout error within 5 s", err, time.Since(start))
	}
	// 64 KiB at 16 KiB/s: 4 s beyond the 300 ms FetchTimeout.
	if _, err := s.ImagePath(context.Background(), "gpu-golden", design.FirmwareImage{URL: srv.URL + "/slow", SHA256: sum(body)}, int64(len(body))); err != nil {
		t.Fatalf("a steady 0.8 s download of 64 KiB failed: %v", err)
	}
}
