package api_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/auth"
)

// shortDir is a private directory with a path short enough for a Unix
// socket (108 bytes at most).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "swl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// serveLocal serves s's API on a socket in a new directory and returns
// the socket's path.
func serveLocal(t *testing.T, s *apitest.Server) string {
	t.Helper()
	path := filepath.Join(shortDir(t), "api.sock")
	ln, err := api.ListenLocal(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.API.ServeLocal(ctx, ln, func(uid int) string { return "cli:tester" }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeLocal: %v", err)
		}
	})
	return path
}

func TestLocalSocketAdminWithoutToken(t *testing.T) {
	s := apitest.Start(t)
	path := serveLocal(t, s)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", fi.Mode().Perm())
	}
	c, err := client.New("http://local", "", client.WithHTTPClient(api.LocalClient(path)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// An admin route, with no token sent: the socket's peer is the test's
	// own uid.
	tok, err := c.CreateToken(ctx, auth.RoleViewer, "ci")
	if err != nil {
		t.Fatalf("create a token over the local socket: %v", err)
	}
	if tok.Token == "" {
		t.Fatal("no token in the answer")
	}
	page, err := c.Audit(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range page.Items {
		if r.Method == http.MethodPost && r.Who.ID == api.LocalPrincipalID {
			found = true
			if r.Who.Name != "cli:tester" || r.Who.Role != auth.RoleAdmin {
				t.Errorf("audit who = %+v, want the local admin cli:tester", r.Who)
			}
		}
	}
	if !found {
		t.Errorf("no audit record of the local POST: %+v", page.Items)
	}
}

// The marker the local gate sets is worth nothing over TCP.
func TestLocalMarkerRefusedOverTCP(t *testing.T) {
	s := apitest.Start(t)
	c, err := client.New(s.URL, "local-socket")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Tokens(t.Context()); !client.IsStatus(err, http.StatusUnauthorized) {
		t.Fatalf("TCP with the local marker as token: %v, want 401", err)
	}
}

func TestListenLocalStaleAndLive(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "s.sock")
	// A socket file nobody answers on (a server killed with SIGKILL).
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	live, err := api.ListenLocal(path)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	defer live.Close()
	go func() {
		for {
			c, err := live.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if _, err := api.ListenLocal(path); err == nil {
		t.Fatal("a second server took over a live socket")
	}
	plain := filepath.Join(dir, "file")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ListenLocal(plain); err == nil {
		t.Fatal("a regular file was replaced by a socket")
	}
}
