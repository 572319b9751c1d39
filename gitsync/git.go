package gitsync

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// maxGitOutput bounds what one git command may print that is kept.
const maxGitOutput = 1 << 20

// askpass answers git's username and password prompts from the child's
// environment: the token never appears in an argument or a file.
const askpass = `#!/bin/sh
case "$1" in
Username*) printf '%s\n' "$SLIPWAY_GIT_USER" ;;
*) printf '%s\n' "$SLIPWAY_GIT_TOKEN" ;;
esac
`

// repo runs git on the cache repository of one remote for one round,
// with the round's credentials in a private directory removed at its end.
type repo struct {
	cache   string   // bare repository
	url     string   // the remote (no credentials)
	branch  string   // refs/heads/<branch> on the remote
	env     []string // the child's whole environment
	private string   // 0700: askpass, ssh key, HOME
	secrets []string // values redacted from any text
	// maxBytes bounds the cache repository after each fetch (0: none).
	maxBytes int64
}

// localRef is where the fetched head is kept in the cache.
const localRef = "refs/slipway/head"

// creds are the values a round's git commands authenticate with.
type creds struct {
	token, user, sshKey string
}

// openRepo prepares a round: the cache repository (created the first
// time) and the private directory with the credentials' helpers.
func openRepo(ctx context.Context, c Config, cr creds) (*repo, error) {
	sum := sha256.Sum256([]byte(c.URL))
	r := &repo{cache: filepath.Join(c.Dir, "cache-"+hex.EncodeToString(sum[:6])+".git"), url: c.URL, branch: c.Branch}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("git source: create %s: %w", c.Dir, err)
	}
	priv, err := os.MkdirTemp(c.Dir, "round-")
	if err != nil {
		return nil, fmt.Errorf("git source: private directory in %s: %w", c.Dir, err)
	}
	r.private = priv
	if err := r.setEnv(c, cr); err != nil {
		r.close()
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(r.cache, "HEAD")); err != nil {
		if _, err := r.git(ctx, "init", "--quiet", "--bare", "--template=", r.cache); err != nil {
			r.close()
			return nil, err
		}
	}
	return r, nil
}

// setEnv builds the child's environment: nothing of serve's own but
// PATH, no system or user git configuration, no prompts.
func (r *repo) setEnv(c Config, cr creds) error {
	r.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.private, "LANG=C", "LC_ALL=C",
		"GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_SSH_COMMAND=ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o " + shellQuote(`UserKnownHostsFile="`+orDevNull(c.KnownHosts)+`"`)}
	if cr.token != "" {
		r.secrets = append(r.secrets, cr.token)
		p := filepath.Join(r.private, "askpass")
		if err := os.WriteFile(p, []byte(askpass), 0o700); err != nil {
			return fmt.Errorf("git source: write the askpass helper: %w", err)
		}
		r.env = append(r.env, "GIT_ASKPASS="+p, "SLIPWAY_GIT_TOKEN="+cr.token, "SLIPWAY_GIT_USER="+orDefault(cr.user, "x-access-token"))
	}
	if cr.sshKey != "" {
		r.secrets = append(r.secrets, cr.sshKey)
		p := filepath.Join(r.private, "id")
		key := strings.TrimRight(cr.sshKey, "\n") + "\n"
		if err := os.WriteFile(p, []byte(key), 0o600); err != nil {
			return fmt.Errorf("git source: write the ssh key: %w", err)
		}
		r.env[len(r.env)-1] += " -o IdentitiesOnly=yes -i " + shellQuote(p)
	}
	return nil
}

func orDevNull(p string) string { return orDefault(p, os.DevNull) }

// shellQuote quotes p for the shell git runs GIT_SSH_COMMAND with.
func shellQuote(p string) string { return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'" }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// close removes the round's private directory.
func (r *repo) close() { _ = os.RemoveAll(r.private) }

// git runs git with args (on the cache unless args start with init),
// its output bounded, its error text redacted and bounded.
func (r *repo) git(ctx context.Context, args ...string) ([]byte, error) {
	var out bytes.Buffer
	err := r.gitTo(ctx, &limitWriter{w: &out, n: maxGitOutput}, args...)
	return out.Bytes(), err
}

// gitTo is git with its output written to w.
func (r *repo) gitTo(ctx context.Context, w io.Writer, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	full := args
	if args[0] != "init" {
		full = append([]string{"--git-dir=" + r.cache}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = r.env
	cmd.Dir = r.private
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &limitWriter{w: &stderr, n: 64 << 10}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return &gitError{op: args[0], text: "took longer than " + FetchTimeout.String()}
		}
		return &gitError{op: args[0], text: drivers.PeerText(stderr.String(), r.secrets...), exit: cmd.ProcessState.ExitCode()}
	}
	return nil
}

// gitError is a failed git command: its first argument and what it said
// (redacted).
type gitError struct {
	op   string
	text string
	exit int
}

func (e *gitError) Error() string { return "git " + e.op + ": " + e.text }

// limitWriter keeps at most n bytes and drops the rest.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n <= 0 {
		return len(p), nil
	}
	k := min(len(p), l.n)
	l.n -= k
	if _, err := l.w.Write(p[:k]); err != nil {
		return 0, err
	}
	return len(p), nil
}

// errNoBranch: the remote has no such branch (deleted, or never pushed).
var errNoBranch = errors.New("the branch is not on the remote")

// fetch fetches the branch's head at depth (or deepens by deepen),
// stopped as soon as the cache repository passes r.maxBytes.
func (r *repo) fetch(ctx context.Context, depth, deepen int) error {
	args := []string{"fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head"}
	if deepen > 0 {
		args = append(args, fmt.Sprintf("--deepen=%d", deepen))
	} else {
		args = append(args, fmt.Sprintf("--depth=%d", depth))
	}
	args = append(args, "--", r.url, "+refs/heads/"+r.branch+":"+localRef)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	over := r.watchCache(fctx, cancel)
	_, err := r.git(fctx, args...)
	cancel()
	if n := <-over; n > 0 {
		_ = os.RemoveAll(r.cache)
		return fmt.Errorf("%w: the fetch of %s passed %d bytes while it was written, over %d (16 x designMaxBytes): stopped and removed; keep the design in a smaller repository",
			errTooLarge, Redacted(r.url), n, r.maxBytes)
	}
	var ge *gitError
	if errors.As(err, &ge) && strings.Contains(ge.text, "couldn't find remote ref") {
		return fmt.Errorf("%w: branch %s of %s (deleted, or never pushed?)", errNoBranch, r.branch, Redacted(r.url))
	}
	if err == nil && r.maxBytes > 0 {
		err = r.checkCache(r.maxBytes)
	}
	return err
}

// remoteHead asks the remote for the branch's head (git ls-remote):
// nothing is fetched.
func (r *repo) remoteHead(ctx context.Context) (string, error) {
	out, err := r.git(ctx, "ls-remote", "--heads", "--", r.url, "refs/heads/"+r.branch)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(out), "\n") {
		if sha, ref, ok := strings.Cut(line, "\t"); ok && ref == "refs/heads/"+r.branch {
			return sha, nil
		}
	}
	return "", fmt.Errorf("%w: branch %s of %s (deleted, or never pushed?)", errNoBranch, r.branch, Redacted(r.url))
}

// cacheWatchEvery is how often a fetch's cache repository is measured
// while git writes it.
const cacheWatchEvery = 10 * time.Millisecond

// watchCache measures the cache repository until ctx ends, and cancels
// the fetch (cancel) once it passes r.maxBytes (0: no bound). The
// channel then gives the size it passed (0: it did not), once.
func (r *repo) watchCache(ctx context.Context, cancel context.CancelFunc) <-chan int64 {
	out := make(chan int64, 1)
	if r.maxBytes <= 0 {
		out <- 0
		return out
	}
	go func() {
		t := time.NewTicker(cacheWatchEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				out <- 0
				return
			case <-t.C:
				if n := dirBytes(r.cache); n > r.maxBytes {
					cancel()
					out <- n
					return
				}
			}
		}
	}()
	return out
}

// dirBytes is the size of the regular files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// checkCache refuses a cache repository over max bytes, and removes it
// (the next fetch starts again from nothing).
func (r *repo) checkCache(max int64) error {
	n := dirBytes(r.cache)
	if n <= max {
		return nil
	}
	_ = os.RemoveAll(r.cache)
	return fmt.Errorf("%w: the fetch of %s takes %d bytes, over %d (16 x designMaxBytes): keep the design in a smaller repository", errTooLarge, Redacted(r.url), n, max)
}

// has says whether the cache holds commit.
func (r *repo) has(ctx context.Context, commit string) bool {
	_, err := r.git(ctx, "cat-file", "-e", commit+"^{commit}")
	return err == nil
}

// isAncestor says whether a is an ancestor of b in what the cache holds.
func (r *repo) isAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := r.git(ctx, "merge-base", "--is-ancestor", a, b)
	var ge *gitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &ge) && ge.exit == 1:
		return false, nil
	}
	return false, err
}

// shallow says whether the cache's history is cut.
func (r *repo) shallow(ctx context.Context) (bool, error) {
	out, err := r.git(ctx, "rev-parse", "--is-shallow-repository")
	return strings.TrimSpace(string(out)) == "true", err
}

// descends says whether head descends from last, deepening the fetch
// (doubling, up to MaxDepth) until it knows: false is a history
// rewrite, or last further than MaxDepth commits back.
func (r *repo) descends(ctx context.Context, last, head string) (bool, error) {
	for depth := DefaultDepth; ; depth *= 2 {
		if r.has(ctx, last) {
			ok, err := r.isAncestor(ctx, last, head)
			if err != nil || ok {
				return ok, err
			}
		}
		sh, err := r.shallow(ctx)
		if err != nil || !sh || depth >= MaxDepth {
			return false, err
		}
		if err := r.fetch(ctx, 0, depth); err != nil {
			return false, err
		}
	}
}

// commitInfo is a commit's author and subject.
type commitInfo struct {
	Author, Message string
}

// info reads commit's author ("name <email>") and first line.
func (r *repo) info(ctx context.Context, commit string) (commitInfo, error) {
	out, err := r.git(ctx, "log", "-1", "--no-show-signature", "--format=%an <%ae>%x00%s", commit)
	if err != nil {
		return commitInfo{}, err
	}
	a, m, _ := strings.Cut(strings.TrimRight(string(out), "\n"), "\x00")
	return commitInfo{Author: clip(a, 200), Message: clip(m, 200)}, nil
}

// verify checks commit's signature against the allowed signers file.
func (r *repo) verify(ctx context.Context, commit, allowed string) error {
	_, err := r.git(ctx, "-c", "gpg.ssh.allowedSignersFile="+allowed, "verify-commit", commit)
	if err != nil {
		return fmt.Errorf("commit %s carries no signature by an allowed signer (%s): %w", short(commit), allowed, err)
	}
	return nil
}

// clip cuts s to n bytes at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

func short(c string) string { return clip(c, 12) }
