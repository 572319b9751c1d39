package main

import (
	"encoding/json"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slipway-dev/slipway/internal/etcdtest"
)

// TestDemoEtcdStore: demo --store etcd:// deploys a generated site with
// the engine's state in etcd: every node deployed by the lab's count,
// nothing leaked or deployed twice, and the engine's records under the
// prefix afterwards.
func TestDemoEtcdStore(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, 1)
	store := "etcd://" + strings.TrimPrefix(c.Endpoints()[0], "http://")
	const prefix = "/demo-etcd-test/"
	code, out, errs := cli(t, "demo", "--nodes", "8", "--time-scale", "0.001", "--store", store, "--etcd-prefix", prefix, "-o", "json")
	if code != 0 {
		t.Fatalf("demo: exit %d\n%s%s", code, out, errs)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for k, want := range map[string]float64{"nodes": 8, "deployed": 8, "leaked": 0, "duplicate_deploys": 0} {
		if got, _ := r[k].(float64); got != want {
			t.Errorf("%s = %v, want %v", k, r[k], want)
		}
	}
	if r["store"] != "etcd" || r["etcd_prefix"] != prefix {
		t.Errorf("store %v under %v, want etcd under %s", r["store"], r["etcd_prefix"], prefix)
	}
	resp, err := c.Client(t).Get(t.Context(), prefix+"rec/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count == 0 {
		t.Errorf("etcd holds no records under %s after the demo", prefix)
	}
}

// TestDemoStoreFlags: --store is etcd:// with --nodes, not with --state;
// --etcd-prefix needs --store.
func TestDemoStoreFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--nodes", "2", "--store", "http://127.0.0.1:2379"},
		{"--nodes", "2", "--store", "etcd://127.0.0.1:2379", "--state", "x.db"},
		{"--store", "etcd://127.0.0.1:2379"},
		{"--nodes", "2", "--etcd-prefix", "/p/"},
	} {
		if code, out, errs := cli(t, append([]string{"demo"}, args...)...); code != exitUsage {
			t.Errorf("demo %v: exit %d, want %d\n%s%s", args, code, exitUsage, out, errs)
		}
	}
}
