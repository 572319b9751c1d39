package introspection

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// tokenOfEnv reads SLIPWAY_TOKEN from a bootstrap environment file.
func tokenOfEnv(t *testing.T, env []byte) string {
	t.Helper()
	for line := range strings.Lines(string(env)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "SLIPWAY_TOKEN="); ok {
			return strings.Trim(v, "'")
		}
	}
	t.Fatalf("no SLIPWAY_TOKEN in %q", env)
	return ""
}

// TestReissue: a reissue gives the node a new token for the same
// deployment: the previous one is refused, the new one is accepted on
// every route (the NoCloud seed serves user data carrying it), the
// deployment's reports are dropped so the bootstrap waits again, and the
// issue time moves. Asking for the deployment's user data again (a deploy
// step repeated) keeps the reissued token; the next deployment starts
// from its first token again.
func TestReissue(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	const node = "r01-cmp01"
	first := e.issue(node, "2")
	for _, a := range signalling(e.d, node) {
		e.report(first, a, "success", "")
	}
	if p, _ := e.srv.BootstrapStatus(ctx, e.d, node, "2"); p.Status != drivers.StatusDone || p.LastReport.IsZero() {
		t.Fatalf("before the reissue: %+v", p)
	}
	before, _ := e.srv.BootstrapStatus(ctx, e.d, node, "2")
	time.Sleep(2 * time.Millisecond)

	re, err := e.srv.Reissue(ctx, e.d, node, "2")
	if err != nil {
		t.Fatal(err)
	}
	tok := tokenOfEnv(t, re.Env)
	if tok == first || !wellFormed(tok) || !bytes.Contains(re.UserData, []byte(tok)) || bytes.Contains(re.UserData, []byte(first)) {
		t.Fatalf("reissued token: new %v, well formed %v, in the user data %v", tok != first, wellFormed(tok), bytes.Contains(re.UserData, []byte(tok)))
	}
	if !strings.Contains(string(re.Env), "SLIPWAY_URL='"+testURL+"'") {
		t.Errorf("env %q lacks the URL", re.Env)
	}
	if r := e.do("GET", "/v1/self", first, nil); r.code != 401 {
		t.Errorf("the previous token: %d, want 401", r.code)
	}
	if s := e.self(tok); s.Name != node || s.Deployment != "2" {
		t.Errorf("self with the new token: %s, deployment %s", s.Name, s.Deployment)
	}
	if r := e.do("GET", "/v1/nocloud/"+tok+"/user-data", "", nil); r.code != 200 || !bytes.Contains(r.body, []byte(tok)) {
		t.Errorf("NoCloud user-data with the new token: %d, carries it: %v", r.code, bytes.Contains(r.body, []byte(tok)))
	}
	p, err := e.srv.BootstrapStatus(ctx, e.d, node, "2")
	if err != nil || p.Status != drivers.StatusInProgress || !p.LastReport.IsZero() || !p.Issued.After(before.Issued) {
		t.Errorf("after the reissue: %+v %v (issued before %s)", p, err, before.Issued)
	}
	ud, err := e.srv.UserData(ctx, e.d, node, "2")
	if err != nil || !bytes.Contains(ud, []byte(tok)) {
		t.Errorf("the deployment's user data asked again does not carry the reissued token (%v)", err)
	}
	if r := e.do("GET", "/v1/self", tok, nil); r.code != 200 {
		t.Errorf("the reissued token after UserData again: %d", r.code)
	}
	again, err := e.srv.Reissue(ctx, e.d, node, "2")
	if err != nil || tokenOfEnv(t, again.Env) == tok {
		t.Fatalf("second reissue: %v", err)
	}
	if r := e.do("GET", "/v1/self", tok, nil); r.code != 401 {
		t.Errorf("the first reissue's token after the second: %d", r.code)
	}
	// The next deployment's token is its first, as ever.
	if next := e.issue(node, "3"); next != e.srv.Token(node, "3") {
		t.Error("deployment 3 did not get its first token")
	}
	if r := e.do("GET", "/v1/self", tokenOfEnv(t, again.Env), nil); r.code != 401 {
		t.Errorf("the reissued token of deployment 2 after deployment 3: %d", r.code)
	}
}

// TestBootstrapScriptAfterReissue: the operator's procedure after a
// rebootstrap works: with only bootstrap.env replaced by the reissued
// one, the script reports with the new token (the bootstrap is done
// again) and rewrites /etc/slipway/auth.header, which the boot actions'
// units use, with it (mode 0600).
func TestBootstrapScriptAfterReissue(t *testing.T) {
	needTools(t)
	e := serveEnv(t)
	const node = "r01-cmp01"
	first := e.issue(node, "1")
	root := t.TempDir()
	hdr := filepath.Join(root, "etc/slipway/auth.header")
	if err := os.MkdirAll(filepath.Dir(hdr), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hdr, []byte("Authorization: Bearer "+first+"\n"), 0o600); err != nil { // as cloud-init wrote it
		t.Fatal(err)
	}
	re, err := e.srv.Reissue(t.Context(), e.d, node, "1")
	if err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(t.TempDir(), "bootstrap.env")
	if err := os.WriteFile(envFile, re.Env, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runScript(t, envFile, root); err != nil {
		t.Fatalf("the script with the reissued env failed: %v\n%s", err, out)
	}
	if p, err := e.srv.BootstrapStatus(t.Context(), e.d, node, "1"); err != nil || p.Status != drivers.StatusDone {
		t.Errorf("after the script ran with the reissued token: %+v %v", p, err)
	}
	b, err := os.ReadFile(hdr)
	st, _ := os.Stat(hdr)
	if err != nil || string(b) != "Authorization: Bearer "+tokenOfEnv(t, re.Env)+"\n" || st.Mode().Perm() != 0o600 {
		t.Errorf("auth.header after the run: %v, carries the reissued token: %v, mode %v", err, strings.Contains(string(b), tokenOfEnv(t, re.Env)), st.Mode())
	}
}
