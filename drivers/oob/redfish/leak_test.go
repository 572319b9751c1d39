package redfish_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/oob/redfish"
	"github.com/slipway-dev/slipway/internal/leakcheck"
	"github.com/slipway-dev/slipway/internal/redfishmock"
)

// leakPassword and leakToken hold characters every encoding changes.
const (
	leakPassword = `Pw+/&="<x>'%4 é\q`
	leakToken    = "tok3n+/Xy=Secret&session"
)

// echoBMC is a BMC (HTTPS) that serves the mockup's service root and
// echoes every other request in a failed answer of status: the login
// itself (login true: the password, JSON-encoded in the body), or the
// calls after a login that succeeds (the session token in X-Auth-Token).
func echoBMC(t *testing.T, status int, login bool) drivers.BMC {
	t.Helper()
	echo := leakcheck.Echo(status)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && strings.TrimSuffix(r.URL.Path, "/") == redfishmock.Root:
			doc, _ := redfishmock.Get(redfishmock.Root)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(doc)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/Sessions") && !login:
			w.Header().Set("X-Auth-Token", leakToken)
			w.Header().Set("Location", "/redfish/v1/SessionService/Sessions/1")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"Id":"1"}`))
		default:
			echo(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	host, port := hostPort(t, srv.URL)
	return drivers.BMC{Node: "n1", Address: host, Port: port, Username: "admin", Password: drivers.NewSecret(leakPassword), Insecure: true}
}

func hostPort(t *testing.T, u string) (string, int) {
	t.Helper()
	a := strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://")
	i := strings.LastIndexByte(a, ':')
	n := 0
	for _, c := range a[i+1:] {
		n = n*10 + int(c-'0')
	}
	return a[:i], n
}

func leakDriver(t *testing.T) *redfish.Driver {
	t.Helper()
	d, err := redfish.NewDriver(drivers.Config{Settings: map[string]string{redfish.SettingTimeout: "5s", redfish.SettingRetries: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// TestErrorsHideEchoedCredentials (S1): a BMC that echoes the request in
// a failed answer (raw, percent-encoded, JSON, HTML, base64) gets an
// error with no form of the password (sent JSON-encoded in the login),
// of "user:password" (HTTP Basic's form) or of the session token, and
// with the answer bounded; the error still says what the BMC answered.
func TestErrorsHideEchoedCredentials(t *testing.T) {
	for _, status := range []int{400, 404, 409, 500} {
		for _, login := range []bool{true, false} {
			b := echoBMC(t, status, login)
			_, err := leakDriver(t).PowerStatus(t.Context(), b)
			if err == nil {
				t.Fatalf("%d (login %v): no error", status, login)
			}
			msg := err.Error()
			if leaks := leakcheck.Find(msg, leakPassword, "admin:"+leakPassword, leakToken); len(leaks) > 0 {
				t.Errorf("%d (login %v): the error shows a credential: %v\n%.300s", status, login, leaks, msg)
			}
			if !strings.Contains(msg, "request echoed") || !strings.Contains(msg, "redfish BMC https://") {
				t.Errorf("%d (login %v): the error does not say what the BMC answered: %.300s", status, login, msg)
			}
			if len(msg) > 2*drivers.MaxQuoted {
				t.Errorf("%d (login %v): the error quotes %d bytes: %.300s", status, login, len(msg), msg)
			}
		}
	}
}

// TestNoRedirectWithCredentials (S6): a BMC that redirects to another
// port of the same host (which Go's client follows with the Authorization
// header), or names a task monitor there, sends nothing to it: the
// driver's error names the other origin.
func TestNoRedirectWithCredentials(t *testing.T) {
	var reached, withCreds atomic.Int32
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Auth-Token") != "" || r.ContentLength > 0 {
			withCreds.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer other.Close()
	for _, code := range []int{302, 307, 308} {
		first := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.TrimSuffix(r.URL.Path, "/") == redfishmock.Root {
				doc, _ := redfishmock.Get(redfishmock.Root)
				_, _ = w.Write(doc)
				return
			}
			http.Redirect(w, r, other.URL+r.URL.Path, code)
		}))
		host, port := hostPort(t, first.URL)
		b := drivers.BMC{Node: "n1", Address: host, Port: port, Username: "admin", Password: drivers.NewSecret(leakPassword), Insecure: true}
		_, err := leakDriver(t).PowerStatus(t.Context(), b)
		first.Close()
		if err == nil || !strings.Contains(err.Error(), "redirect") || !strings.Contains(err.Error(), other.URL) {
			t.Errorf("%d: the error does not say the BMC redirected, and where: %v", code, err)
		}
		if err != nil && len(leakcheck.Find(err.Error(), leakPassword)) > 0 {
			t.Errorf("%d: the error shows the password: %v", code, err)
		}
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the redirect target was called %d times (%d with credentials)", n, withCreds.Load())
	}
}

// TestNoTaskMonitorElsewhere (S6): a BMC that accepts an operation as a
// task whose monitor is on another port of the same host gets no request
// there (the monitor would be read with the session token): the error
// names the other origin.
func TestNoTaskMonitorElsewhere(t *testing.T) {
	var reached, withCreds atomic.Int32
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Auth-Token") != "" {
			withCreds.Add(1)
		}
		_, _ = w.Write([]byte(`{"TaskState":"Completed"}`))
	}))
	defer other.Close()
	bmc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet:
			doc, ok := redfishmock.Get(r.URL.Path)
			if !ok {
				http.NotFound(w, r)
				return
			}
			_, _ = w.Write(doc)
		case strings.HasSuffix(r.URL.Path, "/Sessions"):
			w.Header().Set("X-Auth-Token", leakToken)
			w.Header().Set("Location", "/redfish/v1/SessionService/Sessions/1")
			w.WriteHeader(http.StatusCreated)
		default:
			w.Header().Set("Location", other.URL+"/redfish/v1/TaskService/Tasks/1")
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer bmc.Close()
	host, port := hostPort(t, bmc.URL)
	b := drivers.BMC{Node: "n1", Address: host, Port: port, Username: "admin", Password: drivers.NewSecret(leakPassword), Insecure: true}
	_, err := leakDriver(t).PowerCycle(t.Context(), b)
	if err == nil || !strings.Contains(err.Error(), other.URL) {
		t.Errorf("the error does not name the task monitor's origin: %v", err)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the task monitor on another origin was read %d times (%d with credentials)", n, withCreds.Load())
	}
}
