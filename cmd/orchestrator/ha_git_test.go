package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/gitsync/gittest"
	"github.com/slipway-dev/slipway/internal/etcdtest"
	"github.com/slipway-dev/slipway/sim/maas"
)

// TestHAGitLeaderOnly: in a group of three replicas on etcd with a git:
// block, only the leader follows the remote (only its data directory
// holds a cache repository, while rounds go on every second); a standby
// answers the status from the store; after the leader is SIGKILLed the
// next leader follows, and takes a commit pushed after the kill.
func TestHAGitLeaderOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, runs etcd and three replicas: skipped with -short")
	}
	t.Parallel()
	ec := etcdtest.Start(t, 1)
	dir, bin, d := generatedSite(t, 3)
	lv := startLabProc(t, bin, dir, &maas.Faults{}, 1, 0.01)
	state, _ := writeEngineFiles(t, bin, dir, d.Site.Metadata.Name, lv.info)
	up := gittest.NewUpstream(t)
	c1 := up.Commit("one", map[string]string{"site/site.yaml": "apiVersion: slipway/v1\nkind: Network\nmetadata: {name: n1}\nspec: {cidr: 10.99.0.0/24}\n"})
	dmn := gittest.StartDaemon(t, up.Root)
	f, err := os.OpenFile(filepath.Join(dir, "engine.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "git: {url: %q, path: site, interval: 1s}\n", dmn.URL)
	f.Close()
	store := "etcd://" + strings.Join(trimScheme(ec.Endpoints()), ",")
	if code, out, errs := cli(t, "store", "migrate", "--from", "bolt:"+state, "--to", store); code != 0 {
		t.Fatalf("store migrate: %d %s %s", code, out, errs)
	}
	// A 6 s lease: with 2 s, a leader starved that long on a loaded
	// machine could lose it, and the next one make a git cache of its own.
	g := startGroup(t, bin, dir, store, 6, childEnv(lv.info))
	leader := g.waitLeader(t, "", 30*time.Second)
	standby := (leader + 1) % len(g.urls)
	g.waitGitFetched(t, standby, c1, 20*time.Second)
	time.Sleep(2500 * time.Millisecond) // two more rounds' intervals
	if got := g.gitCaches(); len(got) != 1 || got[0] != leader {
		t.Fatalf("replicas with a git cache: %v, want only the leader r%d", got, leader)
	}
	if err := g.procs[leader].Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = g.procs[leader].Wait()
	next := g.waitLeader(t, g.replicaID(leader), 30*time.Second)
	c2 := up.Commit("two", map[string]string{"site/site.yaml": "apiVersion: slipway/v1\nkind: Network\nmetadata: {name: n1}\nspec: {cidr: 10.98.0.0/24}\n"})
	g.waitGitFetched(t, next, c2, 20*time.Second)
	if got := g.gitCaches(); len(got) != 2 || !(got[0] == next || got[1] == next) {
		t.Errorf("replicas with a git cache after the failover: %v, want the killed leader r%d and the new one r%d", got, leader, next)
	}
}

// gitCaches lists the replicas whose data directory holds a git cache.
func (g *haGroup) gitCaches() []int {
	var out []int
	for i := range g.urls {
		if m, _ := filepath.Glob(filepath.Join(g.dir, fmt.Sprintf("r%d", i), "gitsync", "cache-*.git")); len(m) > 0 {
			out = append(out, i)
		}
	}
	return out
}

// waitGitFetched waits until replica i's GET /git/status says commit was
// fetched.
func (g *haGroup) waitGitFetched(t *testing.T, i int, commit string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", g.urls[i]+"/api/v1/git/status", nil)
		req.Header.Set("Authorization", "Bearer "+g.tok)
		if resp, err := g.hc.Do(req); err == nil {
			var st apitypes.GitStatus
			if json.NewDecoder(resp.Body).Decode(&st) == nil && st.LastFetch != nil {
				last = st.LastFetch.Commit
			}
			resp.Body.Close()
		}
		if last == commit {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("r%d's git status: last fetched %q, not %s within %s: %s", i, last, commit, within, g.logs())
}
