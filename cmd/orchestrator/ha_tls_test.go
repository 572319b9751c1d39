package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/internal/etcdtest"
	"github.com/slipway-dev/slipway/sim/lab"
)

// TestServeEtcdTLS: the state migrated into an etcd that requires client
// certificates (--etcd-ca, --etcd-cert, --etcd-key), and serve on it: it
// leads, reports the store, and runs a task through the engine there.
func TestServeEtcdTLS(t *testing.T) {
	t.Parallel()
	ec := etcdtest.StartTLS(t, 1)
	lb, err := lab.Start(t.Context(), lab.Config{Design: designtest.Example(t), TimeScale: 0.001, Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	dir, state, cfg := serveLabState(t, lb.Info())
	store := "etcd://" + strings.TrimPrefix(ec.Endpoints()[0], "https://")
	tlsArgs := []string{"--etcd-ca", ec.TLS.CA, "--etcd-cert", ec.TLS.ClientCert, "--etcd-key", ec.TLS.ClientKey}
	if code, out, errs := cli(t, append([]string{"store", "migrate", "--from", "bolt:" + state, "--to", store}, tlsArgs...)...); code != 0 {
		t.Fatalf("store migrate over TLS: %d %s %s", code, out, errs)
	}
	p := startServe(t, cfg, state, dir, append([]string{"--store", store, "--data-dir", filepath.Dir(state), "--lease-ttl", "3",
		"--introspection-listen", "127.0.0.1:0"}, tlsArgs...)...)
	defer p.stop()
	var cl apitypes.Cluster
	for i := 0; i < 200 && cl.Self.Role != "leader"; i++ {
		_, b := p.call(t, "GET", "/api/v1/cluster", "")
		_ = json.Unmarshal([]byte(b), &cl)
		time.Sleep(50 * time.Millisecond)
	}
	if cl.Self.Role != "leader" || cl.Store.Kind != "etcd" || len(cl.Store.Members) != 1 || !cl.Store.Members[0].Healthy || !cl.Store.Writable {
		t.Fatalf("GET /api/v1/cluster: %+v", cl)
	}
	// The replica's role and leader changes, in an exposition promtool accepts.
	code, metrics := p.call(t, "GET", "/metrics", "")
	if code != 200 || !strings.Contains(metrics, `slipway_replica_role{replica=`) || !strings.Contains(metrics, `role="leader"} 1`) ||
		!strings.Contains(metrics, "slipway_leader_changes_total") {
		t.Errorf("GET /metrics: %d: no role or leader-change metrics", code)
	}
	promtoolCheck(t, metrics)
	if code, out, errs := cli(t, "cluster", "--server", p.base, "--token", p.tok); code != 0 || !strings.Contains(out, "(answered)  leader") || !strings.Contains(out, "store etcd /slipway/: writable") {
		t.Errorf("orchestrator cluster: %d\n%s%s", code, out, errs)
	}
	if status, msg := p.task(t, "prepare_site"); status != "succeeded" {
		t.Fatalf("prepare_site on etcd over TLS: %s %s", status, msg)
	}
}

// TestServeEtcdEmpty: serve on an etcd prefix that holds no design stops
// at once saying how to copy one in.
func TestServeEtcdEmpty(t *testing.T) {
	ec := etcdtest.Start(t, 1)
	store := "etcd://" + strings.TrimPrefix(ec.Endpoints()[0], "http://")
	dir := t.TempDir()
	code, _, errs := cli(t, "serve", "--store", store, "--etcd-prefix", "/empty/", "--data-dir", dir, "--listen", "127.0.0.1:0", "--introspection-listen", "")
	if code != exitUsage || !strings.Contains(errs, "store migrate --from bolt:FILE") {
		t.Fatalf("serve on an empty prefix: exit %d: %s", code, errs)
	}
}
