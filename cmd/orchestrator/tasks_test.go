package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/sim/lab"
)

// TestTaskCommands runs the engine in-process from the CLI against the
// lab's MAAS: the example design with a layer pointing its Site at the lab.
func TestTaskCommands(t *testing.T) {
	lb, err := lab.Start(t.Context(), lab.Config{Design: designtest.Example(t), TimeScale: 0.001, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	info := lb.Info()
	t.Setenv("SLIPWAY_TEST_MAAS_KEY", info.APIKey)
	layer := t.TempDir()
	body := "apiVersion: slipway/v1\nkind: Site\nmetadata: {name: lab}\nspec:\n  maas: {url: \"" + info.MAASURL + "\", apiKey: \"env:SLIPWAY_TEST_MAAS_KEY\"}\n"
	if err := os.WriteFile(filepath.Join(layer, "site.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state.db")
	if code, out, errs := cli(t, "apply", "--state", state, exampleSite, layer); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
	}
	// verify_site's preflight: the example's secrets are not set yet.
	t.Setenv("SLIPWAY_SECRET_KUBEADM_JOIN_TOKEN", "")
	os.Unsetenv("SLIPWAY_SECRET_KUBEADM_JOIN_TOKEN")
	code, out, errs := cli(t, "task", "verify_site", "--state", state, "--plugin-dir", t.TempDir())
	if code == 0 || !strings.Contains(out, `secret "kubeadm-join-token" is not set (needed by boot action kubernetes-join on nodes`) {
		t.Fatalf("verify_site without the secrets: exit %d\n%s%s", code, out, errs)
	}
	for name, value := range map[string]string{"bmc-admin": lab.DefaultBMCPassword, "kubeadm-join-token": "abcdef.0123456789abcdef"} {
		if code, out, errs := cliIn(t, strings.NewReader(value), "secret", "set", name, "--state", state); code != 0 {
			t.Fatalf("secret set %s: exit %d\n%s%s", name, code, out, errs)
		}
	}
	for _, action := range []string{"validate_design", "verify_site", "prepare_site"} {
		code, out, errs := cli(t, "task", action, "--state", state, "--plugin-dir", t.TempDir())
		if code != 0 || !strings.Contains(out, "succeeded") {
			t.Fatalf("task %s: exit %d\n%s%s", action, code, out, errs)
		}
	}
	code, out, errs = cli(t, "tasks", "--state", state, "-o", "json")
	if code != 0 {
		t.Fatalf("tasks: exit %d %s", code, errs)
	}
	var tasks []struct{ ID, Action, Status string }
	if err := json.Unmarshal([]byte(out), &tasks); err != nil || len(tasks) != 4 {
		t.Fatalf("tasks -o json: %v %s", err, out)
	}
	if code, out, _ := cli(t, "events", "--state", state, "--task", tasks[3].ID); code != 0 || !strings.Contains(out, "task succeeded") {
		t.Fatalf("events: exit %d\n%s", code, out)
	}
	// A filter that selects nothing is refused with the reason.
	code, _, errs = cli(t, "deploy", "--state", state, "--plugin-dir", t.TempDir(), "--node", "no-such-node")
	if code != exitUsage || !strings.Contains(errs, "not in design") || !strings.Contains(errs, "no-such-node") {
		t.Fatalf("deploy of an unknown node: exit %d: %s", code, errs)
	}
	// Without a design applied, the engine says what to do.
	code, _, errs = cli(t, "deploy", "--state", filepath.Join(t.TempDir(), "empty.db"))
	if code != exitUsage || !strings.Contains(errs, "apply a design first") {
		t.Fatalf("deploy on an empty state: exit %d: %s", code, errs)
	}
}
