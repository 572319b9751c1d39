// Package gittest serves git repositories to tests: a bare repository
// with a work tree to commit in, `git daemon` (git://) and `git
// http-backend` behind net/http/cgi with basic auth (http://), all on
// 127.0.0.1 and stopped when the test ends.
package gittest

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/testtool"
)

// Git runs git in dir (a test's own repositories) and fails the test
// on an error.
func Git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "HOME="+dir,
		"GIT_AUTHOR_NAME=Ada Tester", "GIT_AUTHOR_EMAIL=ada@example.org", "GIT_COMMITTER_NAME=Ada Tester", "GIT_COMMITTER_EMAIL=ada@example.org")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Upstream is a bare repository (what the servers serve) and a work tree
// the test commits in and pushes from.
type Upstream struct {
	t    *testing.T
	Root string // the servers' base path
	Bare string // Root/site.git
	Work string // a clone whose origin is Bare
}

// NewUpstream makes an empty repository with branch main.
func NewUpstream(t *testing.T) *Upstream {
	root := t.TempDir()
	u := &Upstream{t: t, Root: root, Bare: filepath.Join(root, "site.git"), Work: filepath.Join(t.TempDir(), "work")}
	Git(t, root, "init", "--quiet", "--bare", "--initial-branch=main", u.Bare)
	Git(t, root, "init", "--quiet", "--initial-branch=main", u.Work)
	Git(t, u.Work, "remote", "add", "origin", u.Bare)
	return u
}

// Commit writes files (path -> content; "" deletes) under the work tree,
// commits them with msg and pushes main; it returns the commit.
func (u *Upstream) Commit(msg string, files map[string]string) string {
	u.t.Helper()
	for p, content := range files {
		full := filepath.Join(u.Work, p)
		if content == "" {
			_ = os.Remove(full)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			u.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			u.t.Fatal(err)
		}
	}
	Git(u.t, u.Work, "add", "-A")
	Git(u.t, u.Work, "commit", "--quiet", "--allow-empty", "-m", msg)
	Git(u.t, u.Work, "push", "--quiet", "--force", "origin", "HEAD:main")
	return Git(u.t, u.Work, "rev-parse", "HEAD")
}

// Daemon serves root with `git daemon` on 127.0.0.1 until the test ends;
// Fetches counts the upload-pack requests it logged.
type Daemon struct {
	URL     string
	mu      sync.Mutex
	fetches int
}

// Fetches is how many fetches the daemon served.
func (d *Daemon) Fetches() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fetches
}

// StartDaemon starts git daemon on root.
func StartDaemon(t *testing.T, root string) *Daemon {
	port := FreePort(t)
	cmd := exec.Command("git", "daemon", "--verbose", "--reuseaddr", "--export-all", "--base-path="+root,
		"--listen=127.0.0.1", fmt.Sprintf("--port=%d", port), root)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &Daemon{URL: fmt.Sprintf("git://127.0.0.1:%d/site.git", port)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Request upload-pack") {
				d.mu.Lock()
				d.fetches++
				d.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGKILL); _ = cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("git daemon did not listen on %d: %v", port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// FreePort is a TCP port free on 127.0.0.1 a moment ago (testtool's pick,
// below the ephemeral range).
func FreePort(t *testing.T) int { return testtool.FreePorts(t, 1)[0] }

// HTTP serves root with git http-backend behind net/http/cgi, asking
// for basic auth (user, token); Requests counts the git requests it let
// through, Refused those it answered 401.
type HTTP struct {
	URL               string
	Requests, Refused atomic.Int64
}

// StartHTTP starts git http-backend on root.
func StartHTTP(t *testing.T, root, user, token string) *HTTP {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}}
	h := &HTTP{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != token {
			h.Refused.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "auth", http.StatusUnauthorized)
			return
		}
		h.Requests.Add(1)
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h.URL = srv.URL + "/site.git"
	return h
}
