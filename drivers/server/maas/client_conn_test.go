package maas

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestClientKeepsConnections: the requests of a driver share kept
// connections (gomaasapi asks for each to be closed).
func TestClientKeepsConnections(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("[]"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := newClient(srv.URL+"/MAAS", "a:b:c", 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		var out []mMachine
		if err := c.call(t.Context(), http.MethodGet, "machines/", "", nil, &out); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n > 2 {
		t.Errorf("20 requests one after another opened %d connections, want 1", n)
	}
}
