package introspection

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/testtool"
)

// needTools skips when sh, curl or tar is missing, except in CI (env CI
// set), where they are required.
func needTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"sh", "curl", "tar", "gzip", "sed", "grep", "mktemp"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is needed to run the bootstrap script (CI is set): %v", tool, err)
			}
			t.Skipf("%s not found: the bootstrap script is not run", tool)
		}
	}
}

// The bootstrap script passes shellcheck as a POSIX sh script.
func TestBootstrapScriptShellcheck(t *testing.T) {
	sc := testtool.Need(t, "shellcheck", "shellcheck")
	script := filepath.Join(t.TempDir(), "slipway-bootstrap")
	if err := os.WriteFile(script, []byte(BootstrapScript()), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), sc, "--shell=sh", "--severity=style", script).CombinedOutput()
	if err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

// serveEnv is an env whose server listens on 127.0.0.1, its URL the
// one in the user data.
func serveEnv(t *testing.T) *env {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) {
		c.URL = "http://" + ln.Addr().String()
		// The second factor works through a proxy chain too: here the
		// node is 127.0.0.1, which is none of its addresses, so it is off.
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return e
}

// nodeFiles writes what the user data puts on a node that the script
// needs: the env file, taken from the cloud-config.
func nodeFiles(t *testing.T, e *env, node, deployment string) (envFile string) {
	t.Helper()
	ud, err := e.srv.UserData(t.Context(), e.d, node, deployment)
	if err != nil {
		t.Fatal(err)
	}
	var cc struct {
		WriteFiles []struct{ Path, Content string } `yaml:"write_files"`
	}
	if err := yaml.Unmarshal(ud, &cc); err != nil {
		t.Fatal(err)
	}
	envFile = filepath.Join(t.TempDir(), "bootstrap.env")
	for _, f := range cc.WriteFiles {
		if f.Path == EnvFile {
			if err := os.WriteFile(envFile, []byte(f.Content), 0o600); err != nil {
				t.Fatal(err)
			}
			return envFile
		}
	}
	t.Fatal("the user data writes no env file")
	return ""
}

// runScript runs BootstrapScript with sh, installing under root.
func runScript(t *testing.T, envFile, root string) (string, error) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "slipway-bootstrap")
	if err := os.WriteFile(script, []byte(BootstrapScript()), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", script)
	cmd.Env = []string{"PATH=" + headerTools(t), "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir(),
		"SLIPWAY_ROOT=" + root, "SLIPWAY_ENV=" + envFile, "no_proxy=*", "NO_PROXY=*", "LC_ALL=C"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// headerTools makes a directory holding only the tools the script's
// header says it needs ("# Needs only sh, curl, ... and mktemp."), linked
// to the real ones, for the script's PATH: a tool the script uses but its
// header does not list is "not found" in every script test.
func headerTools(t *testing.T) string {
	t.Helper()
	_, rest, ok := strings.Cut(BootstrapScript(), "# Needs only ")
	list, _, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 {
		t.Fatal(`the script's header has no "# Needs only ... ." line`)
	}
	dir := t.TempDir()
	for _, f := range strings.FieldsFunc(strings.ReplaceAll(list, " and", ","), func(r rune) bool { return r == ',' || r == '\n' || r == '#' }) {
		tool := strings.TrimSpace(f)
		if tool == "" || strings.Contains(tool, " ") {
			continue // words of the sentence, like "when installing live:"
		}
		real, err := exec.LookPath(tool)
		if err != nil {
			continue // apt-get, systemctl: run only on a live node
		}
		if err := os.Symlink(real, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func reportsOf(t *testing.T, e *env, node, deployment string) map[string]Report {
	t.Helper()
	recs, err := e.st.List(t.Context(), collReports, node+"/"+deployment+"/")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Report{}
	for _, r := range recs {
		var rep Report
		if err := json.Unmarshal(r.Value, &rep); err != nil {
			t.Fatal(err)
		}
		out[rep.Action] = rep
	}
	return out
}

func TestBootstrapScriptInstalls(t *testing.T) {
	needTools(t)
	e := serveEnv(t)
	node := "r01-gpu01"
	envFile := nodeFiles(t, e, node, "1")
	root := t.TempDir()
	out, err := runScript(t, envFile, root)
	if err != nil {
		t.Fatalf("the script failed: %v\n%s", err, out)
	}
	n := e.d.Nodes[node]
	files := 0
	for _, name := range e.d.BootActionsFor(n) {
		for _, as := range e.d.BootActions[name].Spec.Assets {
			p := filepath.Join(root, as.Path)
			st, err := os.Stat(p)
			if as.Type == "pkgList" {
				if err == nil {
					t.Errorf("the package list %s was installed as a file", as.Path)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s (%s): %v", as.Path, name, err)
				continue
			}
			files++
			want := os.FileMode(0o644)
			if as.Permissions != "" {
				m, _ := strconv.ParseUint(as.Permissions, 8, 32)
				want = os.FileMode(m)
			}
			if st.Mode().Perm() != want.Perm() || !st.Mode().IsRegular() {
				t.Errorf("%s: mode %v, want %v", as.Path, st.Mode(), want)
			}
			b, _ := os.ReadFile(p)
			if as.Data != "" && string(b) != as.Data {
				t.Errorf("%s: content differs", as.Path)
			}
			if as.Template != "" && !strings.Contains(string(b), node) {
				t.Errorf("%s: not rendered for %s", as.Path, node)
			}
		}
	}
	if files == 0 {
		t.Fatal("the example delivers no file to " + node)
	}
	for _, f := range []string{"etc/slipway/self.json", "etc/slipway/manifest.json"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, ".slipway")); err == nil {
		t.Error("the archive's .slipway directory was installed under the root")
	}
	var self Self
	if b, err := os.ReadFile(filepath.Join(root, "etc/slipway/self.json")); err != nil || json.Unmarshal(b, &self) != nil || self.Name != node {
		t.Errorf("self.json: %v %+v", err, self.Name)
	}
	reps := reportsOf(t, e, node, "1")
	for _, name := range e.d.BootActionsFor(n) {
		if reps[name].Status != StatusSuccess {
			t.Errorf("boot action %s: report %+v", name, reps[name])
		}
	}
	res, err := e.srv.BootstrapStatus(t.Context(), e.d, node, "1")
	if err != nil || res.Status != drivers.StatusDone {
		t.Errorf("BootstrapStatus %+v %v\n%s", res, err, out)
	}
	// Each action reported running first, then success.
	evs := events(t, e)
	seen := map[string][]string{}
	for _, ev := range evs {
		if ev.Kind == "action" && ev.Node == node {
			f := strings.SplitN(ev.Message, ": ", 3)
			seen[strings.TrimPrefix(f[0], "boot action ")] = append(seen[strings.TrimPrefix(f[0], "boot action ")], f[1])
		}
	}
	for _, name := range e.d.BootActionsFor(n) {
		if strings.Join(seen[name], ",") != "running,success" {
			t.Errorf("boot action %s reported %v", name, seen[name])
		}
	}
	// Running it again (a reboot) installs the same and succeeds.
	if out, err := runScript(t, envFile, root); err != nil {
		t.Errorf("second run: %v\n%s", err, out)
	}
}

func TestBootstrapScriptFailures(t *testing.T) {
	needTools(t)
	e := serveEnv(t)
	node := "r01-cmp02"
	envFile := nodeFiles(t, e, node, "1")
	root := t.TempDir()
	// A directory where a file goes: the extraction fails.
	if err := os.MkdirAll(filepath.Join(root, "etc", "motd", "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := runScript(t, envFile, root)
	if err == nil {
		t.Fatalf("the script succeeded:\n%s", out)
	}
	reps := reportsOf(t, e, node, "1")
	for _, name := range e.d.BootActionsFor(e.d.Nodes[node]) {
		if r := reps[name]; r.Status != StatusFailure || !strings.HasPrefix(r.Message, "extract the assets: ") {
			t.Errorf("boot action %s: %+v", name, r)
		}
	}
	res, err := e.srv.BootstrapStatus(t.Context(), e.d, node, "1")
	if err != nil || res.Status != drivers.StatusFailed || !strings.Contains(res.Message, "extract the assets") {
		t.Errorf("BootstrapStatus %+v %v", res, err)
	}
	// A revoked token: the script stops at once, without reports.
	if err := e.srv.EndDeployment(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	out, err = runScript(t, envFile, t.TempDir())
	if err == nil || !strings.Contains(out, "could not fetch /v1/self") {
		t.Errorf("with a revoked token: %v\n%s", err, out)
	}
	// The token never reached the script's output.
	tok := e.srv.Token(node, "1")
	if strings.Contains(out, tok[len(TokenPrefix):]) {
		t.Error("the script printed the token")
	}
	// No env file.
	if out, err := runScript(t, filepath.Join(t.TempDir(), "missing.env"), t.TempDir()); err == nil || !strings.Contains(out, "cannot read") {
		t.Errorf("without an env file: %v\n%s", err, out)
	}
}
