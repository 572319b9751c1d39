package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/sim/lab"
)

// TestDemoMissingSecret: the lab sets only the secrets the example needs,
// so the demo of a copy whose boot action calls another secret fails
// before any machine is touched, naming the secret, the boot action and
// its nodes, and how to set it.
func TestDemoMissingSecret(t *testing.T) {
	t.Setenv("SLIPWAY_SECRET_CLUSTER_CA_KEY", "")
	os.Unsetenv("SLIPWAY_SECRET_CLUSTER_CA_KEY")
	site := t.TempDir()
	if err := os.CopyFS(site, os.DirFS(exampleSite)); err != nil {
		t.Fatal(err)
	}
	ba := filepath.Join(site, "bootactions.yaml")
	b, err := os.ReadFile(ba)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(string(b), `token='{{ secret "kubeadm-join-token" }}'`,
		`token='{{ secret "kubeadm-join-token" }}'
        ca_key='{{ secret "cluster-ca-key" }}'`, 1)
	if body == string(b) {
		t.Fatal("the example's join script no longer calls secret \"kubeadm-join-token\"")
	}
	if err := os.WriteFile(ba, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, "demo", "--site", site, "--state", filepath.Join(t.TempDir(), "state.db"), "--time-scale", "0.001")
	if code != exitInvalid {
		t.Fatalf("demo: exit %d, want %d\n%s%s", code, exitInvalid, out, errs)
	}
	for _, want := range []string{
		"secrets the lab set, encrypted in the state database (as `orchestrator secret set` does): bmc-admin, kubeadm-join-token, maas-api-key",
		`deploy_nodes failed: preflight failed, no machine was touched: secret "cluster-ca-key" is not set (needed by boot action kubernetes-join on nodes r01-cmp01, r01-cmp02, … 6 more): set it with 'orchestrator secret set cluster-ca-key'`,
		"0 of 8 nodes deployed, 8 failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q\n%s", want, out)
		}
	}
	// Every node stayed at pending.
	if rows := regexp.MustCompile(`(?m)^r0\d-\w+\s+pending\s+failed\s+0\s`).FindAllString(out, -1); len(rows) != 8 {
		t.Errorf("%d nodes failed at pending, want 8:\n%s", len(rows), out)
	}
	if strings.Contains(out+errs, lab.DefaultBMCPassword) || strings.Contains(out+errs, "0123456789abcdef") {
		t.Error("the demo printed a secret's value")
	}
}
