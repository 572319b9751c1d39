package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
)

// TestImageStoreFetchBounds: serve's config keys imageFetchIdleTimeout
// and imageFetchMinRate reach the image store: a URL that stops sending
// fails after the idle timeout configured, naming it and its key; a bad
// value is refused naming its key.
func TestImageStoreFetchBounds(t *testing.T) {
	stall := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		select {
		case <-stall:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stall) })
	c := Config{ImageCache: t.TempDir(), ImageFetchIdleTimeout: "300ms", ImageFetchMinRate: 1 << 20}
	st, err := c.imageStore()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = st.ImagePath(context.Background(), "gpu-golden", design.FirmwareImage{URL: srv.URL + "/img", SHA256: strings.Repeat("a", 64)}, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "300ms") || !strings.Contains(err.Error(), "imageFetchIdleTimeout") || time.Since(start) > 10*time.Second {
		t.Fatalf("a stalled download: %v after %v, want the 300ms idle timeout named", err, time.Since(start))
	}
	for _, bad := range []Config{{ImageFetchIdleTimeout: "soon"}, {ImageFetchIdleTimeout: "-1s"}, {ImageFetchMinRate: -1}} {
		bad.ImageCache = t.TempDir()
		if _, err := bad.imageStore(); err == nil || !strings.Contains(err.Error(), "imageFetch") {
			t.Errorf("%+v: %v, want an error naming the key", bad, err)
		}
	}
}
