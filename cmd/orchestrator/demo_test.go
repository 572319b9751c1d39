package main

import (
	"encoding/json"
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
	code, out, errs := cli(t, "demo", "--site", site, "--no-fabric", "--state", filepath.Join(t.TempDir(), "state.db"), "--time-scale", "0.001")
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

// TestDemoJSONFigures: the JSON summary of a generated site counts
// outcomes from the lab, and its floor is below the wall time.
func TestDemoJSONFigures(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := cli(t, "demo", "--nodes", "3", "--time-scale", "0.001", "--state", filepath.Join(dir, "state.db"), "-o", "json")
	if code != 0 {
		t.Fatalf("demo: exit %d\n%s%s", code, out, errs)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for k, want := range map[string]float64{"nodes": 3, "deployed": 3, "engine_deployed": 3, "failed": 0, "stuck": 0,
		"leaked": 0, "duplicate_deploys": 0, "duplicate_allocations": 0} {
		if got, _ := r[k].(float64); got != want {
			t.Errorf("%s = %v, want %v", k, r[k], want)
		}
	}
	wall, _ := r["wall_seconds"].(float64)
	floor, _ := r["floor_seconds"].(float64)
	// commission 5 min + deploy 8 min + boot 30 s, scaled by 0.001.
	if floor < 0.81 || floor > wall || r["wall_over_floor"].(float64) < 1 {
		t.Errorf("wall %v, floor %v, ratio %v: want 0.81 <= floor <= wall", wall, floor, r["wall_over_floor"])
	}
	kinds, _ := r["maas_requests_by_kind"].(map[string]any)
	if kinds["POST deploy"] != 3.0 {
		t.Errorf("maas_requests_by_kind: %v, want POST deploy: 3", kinds)
	}
	if _, ok := r["ideal_seconds"]; ok {
		t.Error("ideal_seconds is still reported")
	}
}
