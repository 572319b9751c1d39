package demo

import (
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slipway-dev/slipway/internal/etcdtest"
	"github.com/slipway-dev/slipway/statestore"
)

// TestOpenStore: the demo's state in a bbolt file, or in etcd under the
// prefix (a record written through the store is read back from etcd
// itself); a store URL without an endpoint is refused.
func TestOpenStore(t *testing.T) {
	ctx := t.Context()
	st, kind, err := OpenStore(ctx, StoreConfig{State: filepath.Join(t.TempDir(), "state.db")})
	if err != nil || kind != "bolt" {
		t.Fatalf("bolt: %s %v", kind, err)
	}
	st.Close()

	c := etcdtest.Start(t, 1)
	store := "etcd://" + strings.TrimPrefix(c.Endpoints()[0], "http://")
	const prefix = "/demo-openstore-test/"
	st, kind, err = OpenStore(ctx, StoreConfig{Store: store, EtcdPrefix: prefix})
	if err != nil || kind != "etcd" {
		t.Fatalf("etcd: %s %v", kind, err)
	}
	defer st.Close()
	if _, err := st.Write(ctx, statestore.Put("demo", "k1", []byte(`{"v":1}`))); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Client(t).Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count == 0 {
		t.Errorf("keys under %s in etcd: %v %v", prefix, resp, err)
	}
	if _, _, err := OpenStore(ctx, StoreConfig{Store: "etcd://", EtcdPrefix: prefix}); err == nil {
		t.Error("--store etcd:// without an endpoint: accepted")
	}
}
