package main

// High availability, end to end: three built `serve` binaries share the
// state in a three-member etcd cluster (Debian's etcd, on loopback); the
// lab runs as its own process; nodes reach the introspection API through
// a TCP balancer in front of the three replicas. The leader is killed with
// SIGKILL twice while machines are mid-phase; a standby takes over and
// resumes the deploy. The outcome is counted from the lab's state.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/internal/etcdtest"
	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/orchestrator/record"
	secretstore "github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/sim/maas"
)

// haSpec sizes an HA run.
type haSpec struct {
	nodes, kills int
	pause        bool // after the kills, SIGSTOP the leader past its lease, then SIGCONT it
	scale        float64
	ttl          int
	budget       time.Duration
}

// haResult is what the run measured.
type haResult struct {
	chaosResult
	failovers   []time.Duration // SIGKILL of the leader to a standby saying it leads
	floors      []time.Duration // SIGKILL to the end of the killed leader's lease, as etcd counts it
	keys        int64           // keys under the store's prefix at the end
	dbSize      int64           // the largest member's database
	wall        time.Duration
	leaderIDs   []string
	forwardedOK bool
}

// TestHAFailover: 200 nodes, three replicas, the leader SIGKILLed twice
// mid-deploy, then the next leader paused (SIGSTOP) past its lease and
// woken (make test; make ha-demo shows it with its progress).
func TestHAFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary, runs etcd and 200 nodes: skipped with -short")
	}
	t.Parallel()
	spec := haSpec{nodes: envInt("SLIPWAY_HA_NODES", 200), kills: envInt("SLIPWAY_HA_KILLS", 2), ttl: envInt("SLIPWAY_HA_TTL", 3),
		scale: 0.02, budget: time.Duration(envInt("SLIPWAY_HA_BUDGET_MIN", 6)) * time.Minute, pause: true}
	if v, err := strconv.ParseFloat(os.Getenv("SLIPWAY_HA_SCALE"), 64); err == nil && v > 0 && v <= 1 {
		spec.scale = v
	}
	res := runHA(t, spec)
	t.Logf("HA: %d nodes, %d deployed, %d leaked, %d duplicate deploys, %d duplicate allocations; leaders %v; failovers %v; %d keys in etcd (%.1f a node), db %d KiB; wall %s",
		res.nodes, res.deployed, res.leaks, res.dupDeploys, res.dupAllocs, res.leaderIDs, res.failovers, res.keys,
		float64(res.keys)/float64(res.nodes), res.dbSize>>10, res.wall.Round(time.Second))
	if res.deployed != res.nodes {
		t.Errorf("%d of %d nodes deployed", res.deployed, res.nodes)
	}
	for _, f := range res.failovers {
		if f > 15*time.Second {
			t.Errorf("a failover took %s (want within 15 s with a %d s lease)", f, spec.ttl)
		}
	}
	if len(res.failovers) > 0 {
		fs := slices.Sorted(slices.Values(res.failovers))
		ratios := make([]float64, len(fs))
		for i := range res.failovers {
			ratios[i] = res.failovers[i].Seconds() / res.floors[i].Seconds()
		}
		slices.Sort(ratios)
		t.Logf("failover over %d kills (lease %d s): median %s, max %s; failover/floor (the killed lease's end) median %.2f, max %.2f",
			len(fs), spec.ttl, median(fs).Round(time.Millisecond), fs[len(fs)-1].Round(time.Millisecond), medianF(ratios), ratios[len(ratios)-1])
	}
}

// median is the middle of sorted ds (the mean of the two middle ones for
// an even count).
func median(ds []time.Duration) time.Duration {
	n := len(ds)
	return (ds[(n-1)/2] + ds[n/2]) / 2
}

func medianF(fs []float64) float64 {
	n := len(fs)
	return (fs[(n-1)/2] + fs[n/2]) / 2
}

// watchLease follows the lease of the first key under prefix (the
// election's leader key) from now on: asked the time of a kill, it answers
// the earliest the lease can end after it, as etcd counts: the largest
// poll time plus the remaining TTL etcd reported at that poll (etcd rounds
// the remainder down to a second, so each poll is a lower bound; the one
// just before the count drops is within one poll interval of exact).
// Polls before the kill do not count (a keep-alive could follow them).
func watchLease(t *testing.T, cl *clientv3.Client, prefix string) func(killed time.Time) time.Time {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	resp, err := cl.Get(ctx, prefix, clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		cancel()
		t.Fatalf("the leader key under %s: %v (%d keys)", prefix, err, len(resp.Kvs))
	}
	lease := clientv3.LeaseID(resp.Kvs[0].Lease)
	type poll struct {
		at  time.Time
		ttl int64
	}
	var polls []poll
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			at := time.Now()
			r, err := cl.TimeToLive(ctx, lease)
			if err == nil && r.TTL < 0 {
				return // gone
			}
			if err == nil {
				polls = append(polls, poll{at, r.TTL})
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return func(killed time.Time) time.Time {
		<-done
		cancel()
		end := killed
		for _, p := range polls {
			if !p.at.Before(killed) {
				end = later(end, p.at.Add(time.Duration(p.ttl)*time.Second))
			}
		}
		return end
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// envInt is the environment's integer name, else def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// haGroup is the replicas of a run and what they share.
type haGroup struct {
	bin, dir, store string
	args            [][]string // each replica's serve arguments
	env             []string   // the replicas' environment (childEnv)
	procs           []*exec.Cmd
	urls            []string
	intro           []string
	tok             string
	hc              *http.Client
	mu              sync.Mutex
}

func runHA(t *testing.T, spec haSpec) haResult {
	begun := time.Now()
	ec := etcdtest.Start(t, 3)
	g, lv, names := haSite(t, ec, spec.nodes, spec.scale, spec.ttl)
	res := haResult{}
	first := g.waitLeader(t, "", 30*time.Second)
	res.leaderIDs = append(res.leaderIDs, g.replicaID(first))
	standby := (first + 1) % len(g.urls)
	g.waitSees(t, standby, first)
	code, out, errs := cli(t, "deploy", "--server", g.urls[standby], "--token", g.tok, "--no-wait")
	var task record.Task
	if f := strings.Fields(out); code != 0 || len(f) < 3 || f[0] != "task" || f[2] != "stored" {
		t.Fatalf("deploy through the standby %s: %d %s %s", g.replicaID(standby), code, out, errs)
	} else {
		task.ID = f[1]
	}
	res.forwardedOK = true
	stopProgress := g.progress(t, lv)
	leader := first
	for k := range spec.kills {
		expiry := watchLease(t, ec.Client(t), "/slipway/ha/election/")
		kr := killInFlight(t, lv, g.procs[leader], 2*time.Second)
		next := g.waitLeader(t, g.replicaID(leader), 30*time.Second)
		res.failovers = append(res.failovers, time.Since(kr.at))
		res.floors = append(res.floors, expiry(kr.at).Sub(kr.at))
		res.leaderIDs = append(res.leaderIDs, g.replicaID(next))
		t.Logf("kill %d: leader %s SIGKILLed %s after the run began (%d machines mid-phase %s before it, %d after it %v; %d MAAS requests in the 100 ms before); %s leads %s later",
			k+1, g.replicaID(leader), kr.after.Round(time.Millisecond), kr.midRead, kr.readGap.Round(time.Millisecond), kr.midPhase, kr.statuses, kr.requests, g.replicaID(next), res.failovers[k].Round(time.Millisecond))
		t.Logf("kill %d: the killed leader's lease ended no sooner than %s after the kill (etcd's own count): failover/floor %.2f",
			k+1, res.floors[k].Round(time.Millisecond), res.failovers[k].Seconds()/res.floors[k].Seconds())
		if res.failovers[k] < res.floors[k] {
			t.Errorf("kill %d: a standby led %s after the kill, before the killed leader's lease could end (%s): two leaders", k+1, res.failovers[k], res.floors[k])
		}
		g.restart(t, leader) // as a supervisor would: it rejoins as a standby
		leader = next
	}
	if spec.pause {
		g.pauseLeader(t, leader, spec.ttl)
	}
	g.waitTask(t, task.ID, spec.budget-time.Since(begun))
	stopProgress()
	res.chaosResult = auditLab(t, lv, []string{"--server", g.urls[leader], "--token", g.tok}, task.ID, names, nil)
	cl := g.cluster(t, leader)
	res.keys = cl.Store.Keys
	for _, m := range cl.Store.Members {
		res.dbSize = max(res.dbSize, m.DBSize)
	}
	res.wall = time.Since(begun)
	return res
}

// haSite is a generated site of n nodes in the lab (its own process),
// applied and prepared, its state migrated into ec, and three replicas
// serving it with a lease of ttl seconds.
func haSite(t *testing.T, ec *etcdtest.Cluster, n int, scale float64, ttl int) (*haGroup, *labView, []string) {
	dir, bin, d := generatedSite(t, n)
	lv := startLabProc(t, bin, dir, &maas.Faults{}, 1, scale)
	state, _ := writeEngineFiles(t, bin, dir, d.Site.Metadata.Name, lv.info)
	store := "etcd://" + strings.Join(trimScheme(ec.Endpoints()), ",")
	if code, out, errs := cli(t, "store", "migrate", "--from", "bolt:"+state, "--to", store); code != 0 {
		t.Fatalf("store migrate: %d %s %s", code, out, errs)
	}
	return startGroup(t, bin, dir, store, ttl, childEnv(lv.info)), lv, d.NodeNames()
}

func trimScheme(eps []string) []string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = strings.TrimPrefix(e, "http://")
	}
	return out
}

// startGroup starts three replicas on the store, behind one balancer for
// the introspection API (what nodes call), with the keys made once and
// env as their environment.
func startGroup(t *testing.T, bin, dir, store string, ttl int, env []string) *haGroup {
	g := &haGroup{bin: bin, dir: dir, store: store, env: env, hc: &http.Client{Timeout: 10 * time.Second}}
	for _, k := range []string{"slipway.key", "introspection.key"} {
		if _, err := secretstore.LoadOrCreateKey(filepath.Join(dir, k)); err != nil {
			t.Fatal(err)
		}
	}
	ports := testtool.FreePorts(t, 6)
	for i := range 3 {
		g.urls = append(g.urls, fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]))
		g.intro = append(g.intro, fmt.Sprintf("127.0.0.1:%d", ports[2*i+1]))
	}
	lb := balance(t, g.intro)
	engine, err := os.ReadFile(filepath.Join(dir, "engine.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(engine) + fmt.Sprintf("secretRefs: {env: [SLIPWAY_TEST_MAAS_KEY]}\nkeyFile: %s\nintrospectionKeyFile: %s\nadminTokenFile: %s\nintrospectionURL: http://%s\n",
		filepath.Join(dir, "slipway.key"), filepath.Join(dir, "introspection.key"), filepath.Join(dir, "admin.token"), lb)
	cfgFile := filepath.Join(dir, "serve-ha.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		data := filepath.Join(dir, fmt.Sprintf("r%d", i))
		if err := os.MkdirAll(data, 0o700); err != nil {
			t.Fatal(err)
		}
		g.args = append(g.args, []string{"serve", "--config", cfgFile, "--store", store, "--lease-ttl", strconv.Itoa(ttl),
			"--replica-id", fmt.Sprintf("r%d", i), "--listen", strings.TrimPrefix(g.urls[i], "http://"),
			"--introspection-listen", g.intro[i], "--data-dir", data, "--plugin-dir", dir})
		g.procs = append(g.procs, nil)
		g.start(t, i)
	}
	tokFile := filepath.Join(dir, "admin.token")
	deadline := time.Now().Add(60 * time.Second)
	for g.tok == "" && time.Now().Before(deadline) {
		if b, err := os.ReadFile(tokFile); err == nil {
			g.tok = strings.TrimSpace(string(b))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if g.tok == "" {
		t.Fatalf("no admin token in %s after 60 s: %s", tokFile, g.logs())
	}
	return g
}

// start runs replica i, its output in r<i>/serve.log.
func (g *haGroup) start(t *testing.T, i int) {
	f, err := os.OpenFile(filepath.Join(g.dir, fmt.Sprintf("r%d", i), "serve.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(g.bin, g.args[i]...)
	cmd.Env = g.env
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			stopProc(cmd)
		}
		f.Close()
	})
	g.mu.Lock()
	g.procs[i] = cmd
	g.mu.Unlock()
}

func (g *haGroup) restart(t *testing.T, i int) { g.start(t, i) }

func (g *haGroup) replicaID(i int) string { return fmt.Sprintf("r%d", i) }

// logs is the tail of every replica's log.
func (g *haGroup) logs() string {
	var b strings.Builder
	for i := range g.args {
		out, _ := os.ReadFile(filepath.Join(g.dir, fmt.Sprintf("r%d", i), "serve.log"))
		if len(out) > 3000 {
			out = out[len(out)-3000:]
		}
		fmt.Fprintf(&b, "\n--- r%d ---\n%s", i, out)
	}
	return b.String()
}

// cluster is replica i's GET /api/v1/cluster.
func (g *haGroup) cluster(t *testing.T, i int) apitypes.Cluster {
	cl, err := g.clusterOf(i)
	if err != nil {
		t.Fatalf("cluster of r%d: %v", i, err)
	}
	return cl
}

func (g *haGroup) clusterOf(i int) (apitypes.Cluster, error) {
	var cl apitypes.Cluster
	ctx, cancel := context.WithTimeout(context.Background(), time.Second) // a paused replica answers nothing
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.urls[i]+"/api/v1/cluster", nil)
	req.Header.Set("Authorization", "Bearer "+g.tok)
	resp, err := g.hc.Do(req)
	if err != nil {
		return cl, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return cl, fmt.Errorf("%s: %s", resp.Status, b)
	}
	return cl, json.NewDecoder(resp.Body).Decode(&cl)
}

// waitLeader waits until a replica other than not says it leads (the
// others may learn it a moment later: waitSees); it answers its index.
func (g *haGroup) waitLeader(t *testing.T, not string, within time.Duration) int {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for i := range g.urls {
			if cl, err := g.clusterOf(i); err == nil && cl.Self.Role == "leader" && cl.Self.ID != not {
				return i
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no replica (other than %q) leads after %s: %s", not, within, g.logs())
	return -1
}

// waitSees waits until replica i names replica leader as the leader (a
// standby learns a new leader from a watch, a moment after it leads;
// until then it answers a mutating call 503, as an election does).
func (g *haGroup) waitSees(t *testing.T, i, leader int) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if cl, err := g.clusterOf(i); err == nil && cl.Leader != nil && cl.Leader.ID == g.replicaID(leader) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("r%d does not see r%d lead after 30 s: %s", i, leader, g.logs())
}

// waitTask polls the task through any replica that answers until it ends.
func (g *haGroup) waitTask(t *testing.T, id string, within time.Duration) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for i := range g.urls {
			req, _ := http.NewRequest(http.MethodGet, g.urls[i]+"/api/v1/tasks/"+id, nil)
			req.Header.Set("Authorization", "Bearer "+g.tok)
			resp, err := g.hc.Do(req)
			if err != nil {
				continue
			}
			var task struct{ Status string }
			err = json.NewDecoder(resp.Body).Decode(&task)
			resp.Body.Close()
			if err == nil && record.TaskStatus(task.Status).Finished() {
				return
			}
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("task %s did not finish within %s: %s", id, within, g.logs())
}

// progress logs the lab's machines by status every 2 s until stopped.
func (g *haGroup) progress(t *testing.T, lv *labView) func() {
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			_, st := phases(lv.machines(t))
			keys := slices.Sorted(func(yield func(string) bool) {
				for k := range st {
					if !yield(k) {
						return
					}
				}
			})
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s %d", k, st[k]))
			}
			t.Logf("progress (the lab's machines): %s", strings.Join(parts, ", "))
			time.Sleep(2 * time.Second)
		}
	}()
	return func() { stop.Store(true); <-done }
}

// balance is a TCP balancer on loopback in front of backends: each
// connection goes to the next backend that accepts it (a dead replica is
// skipped), as a load balancer's health checks would do.
func balance(t *testing.T, backends []string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var next atomic.Uint64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go proxyConn(c, backends, int(next.Add(1)))
		}
	}()
	return ln.Addr().String()
}

func proxyConn(c net.Conn, backends []string, start int) {
	defer c.Close()
	for k := range backends {
		b, err := net.DialTimeout("tcp", backends[(start+k)%len(backends)], time.Second)
		if err != nil {
			continue
		}
		defer b.Close()
		go func() { _, _ = io.Copy(b, c); _ = b.(*net.TCPConn).CloseWrite() }()
		_, _ = io.Copy(c, b)
		return
	}
}

// TestHAQuorum: one etcd member of three lost changes nothing; two lost,
// every replica stops changing anything (503 naming the cause) but still
// answers reads; with the members back, a replica leads again and calls
// change things again, with nobody restarting a replica.
func TestHAQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs etcd: skipped with -short")
	}
	t.Parallel()
	ec := etcdtest.Start(t, 3)
	g, _, _ := haSite(t, ec, 4, 0.02, 10)
	leader := g.waitLeader(t, "", 30*time.Second)
	standby := (leader + 1) % 3
	g.waitSees(t, standby, leader)
	ec.Members[2].Stop()
	if code, b := g.call(standby, "POST", "/api/v1/tokens", `{"role":"viewer","name":"one-member-down"}`); code != http.StatusCreated {
		t.Fatalf("one etcd member of three down: POST /tokens through a standby: %d %s", code, b)
	}
	ec.Members[1].Stop()
	lost := time.Now()
	code, b := g.until(t, standby, "POST", "/api/v1/tokens", `{"role":"viewer"}`, http.StatusServiceUnavailable, 45*time.Second)
	t.Logf("quorum lost: a change refused %s later: %d %s", time.Since(lost).Round(time.Millisecond), code, b)
	if !strings.Contains(string(b), "quorum") && !strings.Contains(string(b), "no replica leads") {
		t.Errorf("the refusal does not say why: %s", b)
	}
	for i := range 3 {
		begun := time.Now()
		if code, b := g.call(i, "GET", "/api/v1/nodes", ""); code != http.StatusOK {
			t.Errorf("r%d: a read without quorum: %d %s", i, code, b)
		}
		t.Logf("r%d: GET /api/v1/nodes without quorum answered in %s", i, time.Since(begun).Round(time.Millisecond))
	}
	g.until(t, leader, "POST", "/api/v1/tokens", `{"role":"viewer"}`, http.StatusServiceUnavailable, 45*time.Second)
	ec.Members[1].Restart(t)
	ec.Members[2].Restart(t)
	back := time.Now()
	g.until(t, standby, "POST", "/api/v1/tokens", `{"role":"viewer","name":"quorum-back"}`, http.StatusCreated, 60*time.Second)
	t.Logf("quorum back: a change accepted %s later", time.Since(back).Round(time.Millisecond))
	// A leader stopped (SIGINT) gives the leadership up as it exits: its
	// key in the election is gone from etcd once the process has ended,
	// where a leader that did not resign leaves it for its 10 s lease.
	// (The key is gone before its lease could have ended: the exit took
	// less than what the lease had left at the stop.)
	cur := g.waitLeader(t, "", 30*time.Second)
	cl := ec.Client(t)
	key, left := leaderKey(t, cl, "/slipway/ha/election/")
	stopped := time.Now()
	interruptAndWait(t, g.procs[cur])
	took := time.Since(stopped)
	if r, err := cl.Get(t.Context(), key); err != nil || len(r.Kvs) != 0 {
		t.Errorf("leader %s exited without resigning: its election key %s is still in etcd (%v)", g.replicaID(cur), key, err)
	} else if took >= left {
		t.Errorf("leader %s took %s to exit, and its lease had %s left: the key's end does not show it resigned", g.replicaID(cur), took, left)
	}
	next := g.waitLeader(t, g.replicaID(cur), 30*time.Second)
	t.Logf("leader %s stopped: %s leads %s later", g.replicaID(cur), g.replicaID(next), time.Since(stopped).Round(time.Millisecond))
}

// leaderKey is the election's leader key (the first created under
// prefix) and the least time its lease has left (etcd rounds down).
func leaderKey(t *testing.T, cl *clientv3.Client, prefix string) (string, time.Duration) {
	t.Helper()
	r, err := cl.Get(t.Context(), prefix, clientv3.WithFirstCreate()...)
	if err != nil || len(r.Kvs) == 0 {
		t.Fatalf("the leader key under %s: %v", prefix, err)
	}
	ttl, err := cl.TimeToLive(t.Context(), clientv3.LeaseID(r.Kvs[0].Lease))
	if err != nil || ttl.TTL <= 0 {
		t.Fatalf("the leader key's lease: %v (TTL %d)", err, ttl.TTL)
	}
	return string(r.Kvs[0].Key), time.Duration(ttl.TTL) * time.Second
}

// interruptAndWait interrupts a process this test started and waits for
// it to exit (a minute at most, then SIGKILL and the test fails).
func interruptAndWait(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if !interruptWithin(cmd, time.Minute) {
		t.Fatalf("process %d did not exit within a minute of SIGINT", cmd.Process.Pid)
	}
}

// call sends one request to replica i with the admin token.
func (g *haGroup) call(i int, method, path, body string) (int, []byte) {
	req, _ := http.NewRequest(method, g.urls[i]+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+g.tok)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := g.hc.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// until repeats a call to replica i until it answers want.
func (g *haGroup) until(t *testing.T, i int, method, path, body string, want int, within time.Duration) (int, []byte) {
	deadline := time.Now().Add(within)
	for {
		code, b := g.call(i, method, path, body)
		if code == want {
			return code, b
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s on r%d: %d %s after %s, want %d: %s", method, path, i, code, b, within, want, g.logs())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// pauseLeader stops replica i (SIGSTOP) until another replica leads and
// its lease has run out, then wakes it (SIGCONT): a paused leader's writes
// are refused once it wakes (the fence), it stops its engine and rejoins
// as a standby; the deploy goes on under the new leader.
func (g *haGroup) pauseLeader(t *testing.T, i, ttl int) {
	p := g.procs[i].Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	next := g.waitLeader(t, g.replicaID(i), 30*time.Second)
	took := time.Since(paused)
	time.Sleep(time.Second)
	if err := p.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("leader r%d paused (SIGSTOP): r%d leads %s later; r%d woken %s after the pause", i, next, took.Round(time.Millisecond), i, time.Since(paused).Round(time.Millisecond))
	deadline := time.Now().Add(time.Duration(ttl+10) * time.Second)
	for {
		if cl, err := g.clusterOf(i); err == nil && cl.Self.Role == "standby" {
			log, _ := os.ReadFile(filepath.Join(g.dir, fmt.Sprintf("r%d", i), "serve.log"))
			if !strings.Contains(string(log), "the leadership's lease is lost") {
				t.Errorf("the woken r%d is a standby but its log does not say it lost the lease", i)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the woken r%d does not say it is a standby: %s", i, g.logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
