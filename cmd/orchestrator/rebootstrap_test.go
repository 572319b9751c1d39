package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestRemoteRebootstrap: rebootstrap through the API writes the node's
// new bootstrap environment and user data, mode 0600, to --out and prints
// where and what to do, never the token; an operator is refused. Once
// the node runs its bootstrap with the written environment file, the
// task that waits for it succeeds.
func TestRemoteRebootstrap(t *testing.T) {
	t.Parallel()
	s := remoteServer(t)
	url, node := s.URL, s.Node
	op, admin := s.Token[api.RoleOperator], s.Token[api.RoleAdmin]
	for _, args := range [][]string{{"prepare-site"}, {"deploy", "--node", node}} {
		if code, out, errs := cli(t, append([]string{"--server", url, "--token", op}, args...)...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
	dir := t.TempDir()
	if code, _, errs := cli(t, "--server", url, "--token", op, "rebootstrap", node, "--out", dir); code != exitUsage || !strings.Contains(errs, "HTTP 403") {
		t.Fatalf("rebootstrap as an operator: exit %d: %s", code, errs)
	}
	var printed strings.Builder
	code, out, errs := cli(t, "--server", url, "--token", admin, "rebootstrap", node, "--out", dir)
	printed.WriteString(out + errs)
	envFile := filepath.Join(dir, node+".bootstrap.env")
	if code != 0 || !strings.Contains(out, "wrote "+envFile) || !strings.Contains(out, "install -m 0600 "+node+".bootstrap.env /etc/slipway/bootstrap.env") {
		t.Fatalf("rebootstrap: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = cli(t, "--server", url, "--token", admin, "rebootstrap", node, "--out", dir, "-o", "json")
	printed.WriteString(out + errs)
	var res rebootstrapOutput
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Task == "" || res.EnvFile != envFile || res.Deployment != 1 {
		t.Fatalf("rebootstrap -o json: exit %d\n%s%s", code, out, errs)
	}
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	_, tok, _ := strings.Cut(string(env), "SLIPWAY_TOKEN='")
	tok, _, _ = strings.Cut(tok, "'")
	for _, f := range []string{envFile, res.UserDataFile} {
		st, err := os.Stat(f)
		b, _ := os.ReadFile(f)
		if err != nil || st.Mode().Perm() != 0o600 || !strings.HasPrefix(tok, "sni_") || !strings.Contains(string(b), tok) {
			t.Errorf("%s: %v, mode %v, holds the token: %v", f, err, st.Mode(), strings.Contains(string(b), tok))
		}
	}
	if strings.Contains(printed.String(), tok) || strings.Contains(printed.String(), admin) {
		t.Error("a token is in the output")
	}
	if err := s.Env.Lab.Machine(node).RunBootstrap(env); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if got, err := s.Engine.Wait(ctx, res.Task); err != nil || got.Status != record.TaskSucceeded {
		t.Fatalf("task %s after the node ran its bootstrap: %s %v", res.Task, got.Status, err)
	}
}

// TestRebootstrapLocal: in-process, the engine needs the introspection
// API to reissue a token (introspectionListen in the configuration).
func TestRebootstrapLocal(t *testing.T) {
	t.Setenv("SLIPWAY_TEST_MAAS_KEY", "k:e:y")
	layer := writeSite(t, map[string]string{"site.yaml": "apiVersion: slipway/v1\nkind: Site\nmetadata: {name: lab}\nspec:\n" +
		"  maas: {url: \"http://127.0.0.1:9/MAAS\", apiKey: \"env:SLIPWAY_TEST_MAAS_KEY\"}\n"})
	state := filepath.Join(t.TempDir(), "state.db")
	if code, out, errs := cli(t, "apply", "--state", state, exampleSite, layer); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs := cli(t, "rebootstrap", "r01-cmp01", "--state", state, "--plugin-dir", t.TempDir(), "--out", t.TempDir())
	if code != exitUsage || !strings.Contains(errs, "no introspection API is configured") {
		t.Fatalf("rebootstrap without the introspection API: exit %d: %s", code, errs)
	}
}
