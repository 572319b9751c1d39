package maas

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/leakcheck"
)

// leakKey is a MAAS key whose secret part holds characters that every
// encoding changes (+ / & = % and a space), so that each form differs.
const (
	leakSecret = "Zx9+q/Lm&w=Rt%4Kp Yb7"
	leakKey    = "ckeyAbCdEf:tkeyGhIjKl:" + leakSecret
)

func leakDriver(t *testing.T, url string) *Driver {
	t.Helper()
	d, err := NewDriver(drivers.Config{Settings: map[string]string{SettingURL: url, SettingTimeout: "5s", SettingRetries: "0"},
		Secrets: map[string]drivers.Secret{SecretAPIKey: drivers.NewSecret(leakKey)}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestErrorsHideEchoedKey (S1): a MAAS (or a proxy in front of it) that
// echoes the request in its failed answer (raw, percent-encoded, JSON,
// HTML, base64) gets an error with no form of the key's secret, for every
// status the client tells apart, and with the answer's text bounded.
func TestErrorsHideEchoedKey(t *testing.T) {
	for _, status := range []int{200, 400, 401, 403, 404, 409, 418, 500, 503} {
		srv := httptest.NewServer(leakcheck.Echo(status))
		d := leakDriver(t, srv.URL+"/MAAS")
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := d.ProbeSite(ctx)
		cancel()
		srv.Close()
		if err == nil {
			t.Fatalf("%d: no error", status)
		}
		msg := err.Error()
		if leaks := leakcheck.Find(msg, leakSecret, leakKey); len(leaks) > 0 {
			t.Errorf("%d: the error shows the key: %v\n%.300s", status, leaks, msg)
		}
		if lmsg := listingError(t, status); lmsg != "" {
			if leaks := leakcheck.Find(lmsg, leakSecret, leakKey); len(leaks) > 0 {
				t.Errorf("%d: the listing's error shows the key: %v\n%.300s", status, leaks, lmsg)
			}
		}
		if !strings.Contains(msg, "maas GET version/") || !strings.Contains(msg, "request echoed") {
			t.Errorf("%d: the error does not say what failed and what MAAS answered: %s", status, msg)
		}
		if len(msg) > 1500 {
			t.Errorf("%d: the error quotes %d bytes of the answer: %.200s", status, len(msg), msg)
		}
	}
}

// listingError is the error of a status listing (decoded as read, on a
// GET of the driver's own) from a MAAS that echoes the request with
// status; it names the listing.
func listingError(t *testing.T, status int) string {
	t.Helper()
	srv := httptest.NewServer(leakcheck.Echo(status))
	defer srv.Close()
	d := leakDriver(t, srv.URL+"/MAAS")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := d.Status(ctx, []drivers.NodeRef{{Name: "n1", MachineID: "m1"}})
	if err == nil {
		t.Errorf("%d: the listing: no error", status)
		return ""
	}
	if !strings.Contains(err.Error(), "maas GET machines/") {
		t.Errorf("%d: the listing's error does not say what failed: %.300s", status, err)
	}
	return err.Error()
}

// TestNoRedirectWithKey (S6): MAAS never redirects an API call; a
// redirect to another port of the same host (which Go's client follows
// with the Authorization header) is not followed: the other port
// receives nothing, and the error names where it pointed.
func TestNoRedirectWithKey(t *testing.T) {
	var reached, withAuth atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("Authorization") != "" {
			withAuth.Add(1)
		}
		_, _ = w.Write([]byte(`{"version":"3.5.0"}`))
	}))
	defer other.Close()
	for _, code := range []int{301, 302, 307, 308} {
		first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.Path, code)
		}))
		d := leakDriver(t, first.URL+"/MAAS")
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err := d.ProbeSite(ctx)
		cancel()
		first.Close()
		if err == nil {
			t.Fatalf("%d: a redirected call succeeded", code)
		}
		msg := err.Error()
		if !strings.Contains(msg, "redirect") || !strings.Contains(msg, other.URL) {
			t.Errorf("%d: the error does not say MAAS redirected, and where: %s", code, msg)
		}
		if leaks := leakcheck.Find(msg, leakSecret, leakKey); len(leaks) > 0 {
			t.Errorf("%d: the error shows the key: %v", code, leaks)
		}
		var de *drivers.Error
		if !errors.As(err, &de) || de.Class != drivers.Permanent {
			t.Errorf("%d: a redirect is not Permanent: %v", code, err)
		}
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the redirect target was called %d times (%d with the OAuth header)", n, withAuth.Load())
	}
}
