package maas

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/lab"
)

// lateProxy is a proxy in front of the lab's MAAS whose upload PUT number
// nth (from 1) reaches MAAS only after delay, whatever the client does
// meanwhile; drop: the client's connection is closed at once without an
// answer (MAAS takes the chunk later). Other requests pass at once. puts
// counts the upload PUTs sent to it.
func lateProxy(t *testing.T, target string, nth int32, delay time.Duration, drop bool) (base string, puts *atomic.Int32) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	puts = new(atomic.Int32)
	forward := func(r *http.Request, body []byte) (*http.Response, error) {
		out, err := http.NewRequestWithContext(context.Background(), r.Method, u.Scheme+"://"+u.Host+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		out.Header = r.Header.Clone()
		out.ContentLength = int64(len(body))
		return http.DefaultClient.Do(out)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 2*drivers.ImageChunkSize))
		late := r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/upload/") && puts.Add(1) == nth
		if late && drop {
			go func() { // MAAS takes it later
				time.Sleep(delay)
				if resp, err := forward(r, body); err == nil {
					resp.Body.Close()
				}
			}()
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				_ = conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
			return
		}
		if late {
			time.Sleep(delay)
		}
		resp, err := forward(r, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + u.Path, puts
}

// uploadCounted uploads the content through d and checks from the lab
// that every chunk reached MAAS once and the content is complete.
func uploadCounted(t *testing.T, l *lab.Lab, d *Driver, content []byte, ref drivers.ImageRef) {
	t.Helper()
	up, err := d.StartImageUpload(testCtx(t), ref)
	if err != nil {
		t.Fatal(err)
	}
	if up, err = sendAll(t, d, up, content); err != nil || !up.Complete {
		t.Fatalf("upload: %+v %v", up, err)
	}
	st := l.MAAS.ImageStats()
	if want := (ref.Size + drivers.ImageChunkSize - 1) / drivers.ImageChunkSize; int64(st.Chunks) != want || st.BytesReceived != ref.Size || st.ChecksumRefused != 0 {
		t.Errorf("the lab counted %d chunks, %d bytes, %d refused; want %d chunks, %d bytes once, none refused", st.Chunks, st.BytesReceived, st.ChecksumRefused, want, ref.Size)
	}
	if s := labImageState(t, l, ref.Name, ref.Architecture); !s.Complete || s.SHA256 != ref.SHA256 {
		t.Errorf("the lab has %+v, want complete with %s", s, ref.SHA256)
	}
}

// TestLastChunkSlowHashNotResent (R1 #6): MAAS answers the last chunk
// later than the per-request timeout (it re-reads the whole file to check
// its SHA-256); the last chunk's bound grows with the file's size, so it
// is not given up and sent again.
func TestLastChunkSlowHashNotResent(t *testing.T) {
	l := startLab(t, lab.Config{})
	base, puts := lateProxy(t, l.Info().MAASURL, 3, 1500*time.Millisecond, false)
	d := newTestDriver(t, l, map[string]string{SettingURL: base, SettingTimeout: "1s"})
	content, ref := testImage(2*drivers.ImageChunkSize + 99)
	uploadCounted(t, l, d, content, ref)
	if n := puts.Load(); n != 3 {
		t.Errorf("%d upload PUTs were sent, want 3 (the last chunk once)", n)
	}
}

// TestLateChunkNotResent (R1 #6): a middle chunk's connection is closed
// without an answer and MAAS takes the chunk 100 ms later (before the driver's first backoff ends); the driver
// reads what MAAS holds until two reads agree and finds it landed,
// instead of sending it again on the first read (MAAS would append it
// twice).
func TestLateChunkNotResent(t *testing.T) {
	l := startLab(t, lab.Config{})
	base, _ := lateProxy(t, l.Info().MAASURL, 1, 100*time.Millisecond, true)
	d := newTestDriver(t, l, map[string]string{SettingURL: base})
	content, ref := testImage(2*drivers.ImageChunkSize + 101)
	uploadCounted(t, l, d, content, ref)
}
