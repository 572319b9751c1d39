package api_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// fakeCluster is a standby whose leader is at a URL the test sets.
type fakeCluster struct {
	mu     sync.Mutex
	leader *url.URL
}

func (f *fakeCluster) Cluster(context.Context) (apitypes.Cluster, error) {
	self := apitypes.Replica{ID: "r1", Role: "standby"}
	return apitypes.Cluster{Self: self, Replicas: []apitypes.Replica{self}, Store: apitypes.ClusterStore{Kind: "etcd", Writable: true}}, nil
}

func (f *fakeCluster) Leader() (bool, string, *url.URL) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return false, "r0", f.leader
}

func (f *fakeCluster) ID() string { return "r1" }

func (f *fakeCluster) set(u string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leader = nil
	if u != "" {
		f.leader, _ = url.Parse(u)
	}
}

// TestStandbyForwards: a standby answers reads itself and forwards every
// mutating call to the leader, which checks the token and does it; with
// no leader it refuses with 503, with a dead one 502, and a call that was
// forwarded already is never forwarded again.
func TestStandbyForwards(t *testing.T) {
	t.Parallel()
	leader := &fixture{apitest.Start(t)}
	fc := &fakeCluster{}
	fc.set(leader.URL)
	standby := &fixture{apitest.Start(t, apitest.WithConfig(func(c *api.Config) { c.Cluster = fc }))}
	admin := leader.Token[api.RoleAdmin] // the leader's: the standby's store does not know it

	var created apitypes.CreatedToken
	if code := standby.json(t, "POST", "/api/v1/tokens", admin, apitypes.TokenRequest{Role: "viewer", Name: "via-standby"}, &created); code != http.StatusCreated {
		t.Fatalf("POST /tokens through the standby: %d", code)
	}
	var list []apitypes.TokenInfo
	leader.json(t, "GET", "/api/v1/tokens", admin, nil, &list)
	if !strings.Contains(tokenNames(list), "via-standby") {
		t.Fatalf("the leader holds no token via-standby: %s", tokenNames(list))
	}
	if code, _ := standby.do(t, "GET", "/api/v1/tokens", admin, "", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /tokens on the standby with the leader's token: %d, want 401 (reads are answered from the standby's own store)", code)
	}
	var cl apitypes.Cluster
	if code := standby.json(t, "GET", "/api/v1/cluster", standby.Token[api.RoleViewer], nil, &cl); code != 200 || cl.Self.Role != "standby" {
		t.Errorf("GET /cluster on the standby: %d %+v", code, cl)
	}
	refused := func(why string, status int, hdr map[string]string) {
		t.Helper()
		resp, _ := standby.request(t, "POST", "/api/v1/tokens", admin, hdr, strings.NewReader(`{"role":"viewer"}`))
		if resp.StatusCode != status {
			t.Errorf("%s: %d, want %d", why, resp.StatusCode, status)
		}
		if status == http.StatusServiceUnavailable && (resp.Header.Get("Retry-After") == "" || resp.Header.Get(api.NotRun) == "") {
			t.Errorf("%s: Retry-After %q, %s %q: want both (the call did not run: safe to send again)", why, resp.Header.Get("Retry-After"), api.NotRun, resp.Header.Get(api.NotRun))
		}
		if status == http.StatusBadGateway && resp.Header.Get(api.NotRun) != "" {
			t.Errorf("%s: a 502 (the leader may have run it) says it did not run", why)
		}
	}
	refused("forwarded already", http.StatusServiceUnavailable, map[string]string{api.ForwardedBy: "r2"})
	fc.set("")
	refused("no leader", http.StatusServiceUnavailable, nil)
	fc.set("http://127.0.0.1:1")
	refused("leader down", http.StatusBadGateway, nil)
}

func tokenNames(l []apitypes.TokenInfo) string {
	var names []string
	for _, t := range l {
		names = append(names, t.Name)
	}
	return strings.Join(names, ",")
}
