// Package gitsync follows a git remote: each new commit of a branch is
// fetched (shallow), its design directory extracted within the design
// size limits, and handed to the apply (validate, plan, hold or store).
// What happened is kept in the state store (status.go) so that it
// survives a restart and every replica reads it.
//
// It runs the git binary rather than a Go library: shallow fetches and
// deepening, the https, ssh and file transports with the system's ssh,
// `git verify-commit` for signatures, and the same tool the tests serve
// repositories with (git daemon, git http-backend).
package gitsync

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/ingest/archive"
)

// Interval bounds and defaults.
const (
	DefaultInterval = time.Minute
	MinInterval     = time.Second
	MaxInterval     = 24 * time.Hour
	// DefaultDepth is the first fetch's depth; MaxDepth how deep a fetch
	// goes to find the last applied commit before calling the head a
	// history rewrite.
	DefaultDepth = 20
	MaxDepth     = 1000
	// FetchTimeout bounds one git command.
	FetchTimeout = 2 * time.Minute
)

// Config is serve's `git:` block.
type Config struct {
	URL      string `yaml:"url"`      // https://, http://, ssh://, git://, file:// (no credentials in it)
	Branch   string `yaml:"branch"`   // default main
	Path     string `yaml:"path"`     // the design's directory within the repository (default: its root)
	Interval string `yaml:"interval"` // how often to fetch (default 1m, 1s..24h)
	// TokenSecret names the secret store's entry holding an https token
	// (given to git through GIT_ASKPASS, never in an argument); Username
	// goes with it (default x-access-token).
	TokenSecret string `yaml:"token_secret"`
	Username    string `yaml:"username"`
	// SSHKeySecret names the entry holding an ssh private key; KnownHosts
	// is the known_hosts file the remote's key must be in.
	SSHKeySecret string `yaml:"ssh_key_secret"`
	KnownHosts   string `yaml:"known_hosts"`
	// WebhookSecret names the entry holding the webhook's shared secret
	// (GitHub's secret, GitLab's token); "": no webhook.
	WebhookSecret string `yaml:"webhook_secret"`
	// AllowRewrite applies a head the last applied commit is not an
	// ancestor of (a force-push); default: refused.
	AllowRewrite bool `yaml:"allow_rewrite"`
	// TrustBindings: a commit may change credential bindings (where the
	// provisioner and the BMCs are, which secrets go there) without an
	// approval. Default false: such a commit is held like a destructive
	// one, since whoever can push could otherwise send the stored secrets
	// to an address of theirs.
	TrustBindings bool `yaml:"trust_bindings"`
	// AllowedSigners is an ssh allowed_signers file: when set, only
	// commits whose signature `git verify-commit` accepts are applied.
	AllowedSigners string `yaml:"allowed_signers"`

	// Limits bound the extracted design (serve's design limits).
	Limits archive.Limits `yaml:"-"`
	// Dir is where the cache repository and private files live (serve:
	// gitsync/ in the data directory).
	Dir string `yaml:"-"`
}

var branchRE = regexp.MustCompile(`^[A-Za-z0-9._/-]{1,200}$`)

// Check validates the block; errors name the key (config git.KEY).
func (c *Config) Check() error {
	if c.Branch == "" {
		c.Branch = "main"
	}
	if _, err := c.interval(); err != nil {
		return err
	}
	if err := checkURL(c.URL); err != nil {
		return err
	}
	if !branchRE.MatchString(c.Branch) || strings.Contains(c.Branch, "..") || strings.HasPrefix(c.Branch, "-") {
		return fmt.Errorf("config git.branch %.60q: want a branch name (letters, digits, . _ / -)", c.Branch)
	}
	if p := strings.Trim(c.Path, "/"); len(p) > 512 || strings.ContainsAny(p, "\x00:\\") || p != "" && (path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../")) {
		return fmt.Errorf("config git.path %.60q: want a relative directory within the repository, without .. or ':'", c.Path)
	}
	if c.TokenSecret != "" && c.SSHKeySecret != "" {
		return fmt.Errorf("config git.token_secret, git.ssh_key_secret: give one of them")
	}
	if strings.ContainsAny(c.KnownHosts, "\"'\\\n") {
		return fmt.Errorf("config git.known_hosts %.80q: a path without quotes, backslashes or newlines", c.KnownHosts)
	}
	if c.SSHKeySecret != "" && c.KnownHosts == "" {
		return fmt.Errorf("config git.known_hosts: an ssh key needs the known_hosts file the remote's host key is in (host keys are always checked)")
	}
	return nil
}

// interval is the fetch interval.
func (c Config) interval() (time.Duration, error) {
	if c.Interval == "" {
		return DefaultInterval, nil
	}
	d, err := time.ParseDuration(c.Interval)
	if err != nil || d < MinInterval || d > MaxInterval {
		return 0, fmt.Errorf("config git.interval %.40q: want a duration in %s..%s", c.Interval, MinInterval, MaxInterval)
	}
	return d, nil
}

// checkURL accepts the transports the follower speaks, with no
// credentials in the URL.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || s == "" || len(s) > 1024 {
		return fmt.Errorf("config git.url: want a https://, ssh://, git:// or file:// URL")
	}
	switch u.Scheme {
	case "https", "http", "ssh", "git", "file":
	default:
		return fmt.Errorf("config git.url %s: scheme %q: want https, http, ssh, git or file", Redacted(s), u.Scheme)
	}
	if _, hasPass := u.User.Password(); hasPass {
		return fmt.Errorf("config git.url: the URL carries a password: put the token in the secret store and name it in git.token_secret")
	}
	if strings.HasPrefix(s, "-") {
		return fmt.Errorf("config git.url: must not start with '-'")
	}
	return nil
}

// Redacted is the URL without user information.
func Redacted(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.User != nil && u.Scheme != "ssh" {
		u.User = nil
	}
	return u.String()
}

// Root is the provenance root recorded with the revision:
// git:<url>#<branch>:<path>, the URL without any user information (an
// ssh remote's login user too: a root holds none, api.checkRoots).
func (c Config) Root() string {
	u := Redacted(c.URL)
	if p, err := url.Parse(u); err == nil && p.User != nil {
		p.User = nil
		u = p.String()
	}
	return "git:" + u + "#" + c.Branch + ":" + strings.Trim(c.Path, "/")
}
