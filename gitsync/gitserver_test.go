package gitsync

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// gitCmd runs git in dir (a test's own repositories) and fails the test
// on an error.
func gitCmd(t *testing.T, dir string, args ...string) string {
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

// upstream is a bare repository (what the servers serve) and a work tree
// the test commits in and pushes from.
type upstream struct {
	t    *testing.T
	root string // the servers' base path
	bare string // root/site.git
	work string
}

func newUpstream(t *testing.T) *upstream {
	root := t.TempDir()
	u := &upstream{t: t, root: root, bare: filepath.Join(root, "site.git"), work: filepath.Join(t.TempDir(), "work")}
	gitCmd(t, root, "init", "--quiet", "--bare", "--initial-branch=main", u.bare)
	gitCmd(t, root, "init", "--quiet", "--initial-branch=main", u.work)
	gitCmd(t, u.work, "remote", "add", "origin", u.bare)
	return u
}

// commit writes files (path -> content; "" deletes) under the work tree,
// commits them with msg and pushes main; it returns the commit.
func (u *upstream) commit(msg string, files map[string]string) string {
	u.t.Helper()
	for p, content := range files {
		full := filepath.Join(u.work, p)
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
	gitCmd(u.t, u.work, "add", "-A")
	gitCmd(u.t, u.work, "commit", "--quiet", "--allow-empty", "-m", msg)
	gitCmd(u.t, u.work, "push", "--quiet", "--force", "origin", "HEAD:main")
	return gitCmd(u.t, u.work, "rev-parse", "HEAD")
}

// daemon serves root with `git daemon` on 127.0.0.1 until the test ends;
// fetches counts the upload-pack requests it logged.
type daemon struct {
	url     string
	mu      sync.Mutex
	fetches int
}

func (d *daemon) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fetches
}

func startDaemon(t *testing.T, root string) *daemon {
	port := freePort(t)
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
	d := &daemon{url: fmt.Sprintf("git://127.0.0.1:%d/site.git", port)}
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

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// httpGit serves root with git http-backend behind net/http/cgi, asking
// for basic auth (user, token); requests counts the git requests it let
// through, refused those it answered 401.
type httpGit struct {
	url               string
	requests, refused atomic.Int64
}

func startHTTPGit(t *testing.T, root, user, token string) *httpGit {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}}
	h := &httpGit{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != token {
			h.refused.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "auth", http.StatusUnauthorized)
			return
		}
		h.requests.Add(1)
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/site.git"
	return h
}

// storeApplier is the test's apply: it reads the directory with the
// design loader (malformed YAML: findings with file:line), holds a
// design whose files hold "destroy: true" unless approved, and stores
// the rest as a revision of a real state store, its ID the content's
// address.
type storeApplier struct {
	st    statestore.Store
	mu    sync.Mutex
	calls []ApplyRequest
}

func (a *storeApplier) ApplyDir(ctx context.Context, req ApplyRequest) (ApplyResult, error) {
	a.mu.Lock()
	a.calls = append(a.calls, req)
	a.mu.Unlock()
	res, err := yamlingest.Load(ctx, []string{req.Dir})
	if err != nil {
		return ApplyResult{}, err
	}
	if design.Findings(res.Findings).HasErrors() {
		var out []string
		for _, f := range res.Findings {
			out = append(out, fmt.Sprintf("%s:%d: %s", strings.TrimPrefix(f.File, req.Dir+"/"), f.Line, f.Message))
		}
		return ApplyResult{Result: ResultInvalid, Findings: out}, nil
	}
	h := sha256.New()
	destroy := false
	sort.Strings(res.Files)
	for _, f := range res.Files {
		b, _ := os.ReadFile(f)
		destroy = destroy || strings.Contains(string(b), "destroy: true")
		_, _ = io.WriteString(h, strings.TrimPrefix(f, req.Dir)+"\x00"+string(b)+"\x00")
	}
	id := hex.EncodeToString(h.Sum(nil))
	if destroy && req.Approve != id {
		return ApplyResult{Revision: id, Result: ResultHeld, Destructive: []string{"release node n1"}}, nil
	}
	r, err := a.st.PutRevision(ctx, statestore.Revision{ID: id, Roots: req.Roots, GitCommit: req.Commit, Design: []byte("{}")})
	if err != nil {
		return ApplyResult{}, err
	}
	return ApplyResult{Revision: id, Result: r.String()}, nil
}

// current is the store's current revision's commit ("" none).
func (a *storeApplier) current(t *testing.T) string {
	t.Helper()
	r, err := a.st.Current(t.Context())
	if err != nil {
		return ""
	}
	return r.GitCommit
}

func newApplier(t *testing.T) *storeApplier {
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	return &storeApplier{st: st}
}
