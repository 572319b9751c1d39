package gitsync

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/gitsync/gittest"
)

// TestAllowedSigners: with allowed_signers, an unsigned commit and one
// signed by a key not listed are refused; one signed by a listed ssh key
// is applied.
func TestAllowedSigners(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Fatalf("ssh-keygen is needed to sign commits: %v", err)
	}
	keys := t.TempDir()
	for _, k := range []string{"good", "other"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", k, "-f", filepath.Join(keys, k)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v %s", err, out)
		}
	}
	pub, err := os.ReadFile(filepath.Join(keys, "good.pub"))
	if err != nil {
		t.Fatal(err)
	}
	allowed := filepath.Join(keys, "allowed_signers")
	if err := os.WriteFile(allowed, []byte("ada@example.org "+strings.TrimSpace(string(pub))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up := gittest.NewUpstream(t)
	unsigned := up.Commit("unsigned", map[string]string{"site/site.yaml": siteYAML})
	a := newApplier(t)
	f := follow(t, a, "file://"+up.Bare, func(c *Config) { c.AllowedSigners = allowed })
	f.Round(t.Context(), "test")
	if ev := lastEvent(t, f); ev.Outcome != OutcomeRefused || ev.Commit != unsigned || !strings.Contains(ev.Reason, "allowed signer") || a.current(t) != "" {
		t.Fatalf("unsigned commit: %+v, current %q", ev, a.current(t))
	}
	gittest.Git(t, up.Work, "config", "gpg.format", "ssh")
	gittest.Git(t, up.Work, "config", "commit.gpgsign", "true")
	gittest.Git(t, up.Work, "config", "user.signingkey", filepath.Join(keys, "other"))
	other := up.Commit("signed by another key", map[string]string{"site/site.yaml": siteYAML + "# other\n"})
	f.Round(t.Context(), "test")
	if ev := lastEvent(t, f); ev.Outcome != OutcomeRefused || ev.Commit != other || a.current(t) != "" {
		t.Fatalf("commit signed by a key not allowed: %+v, current %q", ev, a.current(t))
	}
	gittest.Git(t, up.Work, "config", "user.signingkey", filepath.Join(keys, "good"))
	good := up.Commit("signed", map[string]string{"site/site.yaml": siteYAML + "# signed\n"})
	f.Round(t.Context(), "test")
	if got := a.current(t); got != good {
		t.Fatalf("signed commit: current %q, want %s (%+v)", got, good, lastEvent(t, f))
	}
}
