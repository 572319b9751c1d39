package gitsync

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/gitsync/gittest"
	secretstore "github.com/slipway-dev/slipway/secrets/store"
)

// TestSSHKeyPlumbing: with ssh_key_secret the key from the secret store
// reaches ssh as a file in the round's private directory (a known_hosts
// path with a space survives the shell git runs ssh with and ssh's own
// parsing; one with a quote is refused by the configuration's check);
// the remote not answering is a failure naming ssh's reason, with
// neither the key in the status nor its file left after the round.
func TestSSHKeyPlumbing(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Fatalf("ssh is needed: %v", err)
	}
	keys := t.TempDir()
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(keys, "id")).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	key, _ := os.ReadFile(filepath.Join(keys, "id"))
	known := filepath.Join(keys, "known hosts")
	if err := os.WriteFile(known, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a := newApplier(t)
	sec, _ := secretstore.New(a.st, make([]byte, secretstore.KeySize))
	if err := sec.Put(t.Context(), "deploy-key", string(key)); err != nil {
		t.Fatal(err)
	}
	bad := Config{URL: "ssh://git@127.0.0.1/x.git", SSHKeySecret: "deploy-key", KnownHosts: filepath.Join(keys, "known host's")}
	if err := bad.Check(); err == nil || !strings.Contains(err.Error(), "git.known_hosts") {
		t.Errorf("known_hosts with a quote: %v, want refused", err)
	}
	url := fmt.Sprintf("ssh://git@127.0.0.1:%d/site.git", gittest.FreePort(t))
	f := follow(t, a, url, func(c *Config) { c.SSHKeySecret, c.KnownHosts = "deploy-key", known }, func(o *Options) { o.Secrets = sec })
	f.Round(t.Context(), "test")
	ev := lastEvent(t, f)
	if ev.Outcome != OutcomeFailed || !strings.Contains(ev.Reason, "Connection refused") {
		t.Fatalf("ssh to a closed port: %+v, want a failure saying Connection refused", ev)
	}
	st, _ := f.Status(t.Context())
	if b := fmt.Sprintf("%+v", st); strings.Contains(b, "PRIVATE KEY") {
		t.Errorf("the key is in the status: %s", b)
	}
	if left, _ := filepath.Glob(filepath.Join(f.cfg.Dir, "round-*")); len(left) != 0 {
		t.Errorf("the round left %v", left)
	}
}
