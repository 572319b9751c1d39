package api_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
	c, err := client.New("http://local", "", client.WithUnixSocket(path))
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

// TestLocalSocketOtherUser: as root, a process of another uid is kept off
// the socket by its mode (0600), and, let through the file's permissions,
// refused with a 403 by its peer credentials. The other process is this
// test binary (copied where that uid may run it) in localSocketClient.
func TestLocalSocketOtherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another uid")
	}
	s := apitest.Start(t)
	path := serveLocal(t, s)
	dir := filepath.Dir(path)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "client.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	const nobody = 65534
	ask := func() string {
		cmd := exec.Command(bin, "-test.run=^TestLocalSocketClient$", "-test.v")
		cmd.Env = append(os.Environ(), "SLIPWAY_LOCAL_SOCKET_CLIENT="+path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("client as uid %d: %v: %s", nobody, err, out)
		}
		return string(out)
	}
	if got := ask(); !strings.Contains(got, "answer: dial") {
		t.Errorf("uid %d through a 0600 socket: %q, want the connection refused", nobody, got)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if got := ask(); !strings.Contains(got, "answer: 403") {
		t.Errorf("uid %d on the socket: %q, want 403", nobody, got)
	}
}

// TestLocalSocketClient is TestLocalSocketOtherUser's client: it asks the
// socket SLIPWAY_LOCAL_SOCKET_CLIENT names for the token list and prints
// the answer's status (or the dial's error).
func TestLocalSocketClient(t *testing.T) {
	path := os.Getenv("SLIPWAY_LOCAL_SOCKET_CLIENT")
	if path == "" {
		t.Skip("run by TestLocalSocketOtherUser")
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		fmt.Println("answer: dial:", err)
		return
	}
	defer c.Close()
	fmt.Fprint(c, "GET /api/v1/tokens HTTP/1.0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		fmt.Println("answer: read:", err)
		return
	}
	fmt.Println("answer:", resp.StatusCode)
}
