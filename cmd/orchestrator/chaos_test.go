package main

// Real chaos: the built binary deploys into a lab that runs as its own
// process (`orchestrator lab --faults`), is killed with SIGKILL while
// MAAS calls are in flight, and is resumed with `orchestrator wait`. The
// outcome is counted from the simulator's own state (its MAAS API and
// /sim/stats), not from the engine's records or the MAAS driver.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
)

// TestChaosKill9 is the 200-node chaos run (make chaos): MAAS 5xx and 503
// with Retry-After, dead BMCs, failed commissioning and deployments, and
// 3 SIGKILLs of the engine at random instants while work is in flight.
// It runs only with SLIPWAY_CHAOS=1; SLIPWAY_CHAOS_SEED replays a seed.
func TestChaosKill9(t *testing.T) {
	if os.Getenv("SLIPWAY_CHAOS") != "1" {
		t.Skip("the 200-node chaos run: set SLIPWAY_CHAOS=1 (make chaos)")
	}
	start := time.Now()
	res := runChaos(t, chaosSpec{nodes: 200, kills: 3, scale: 0.02, earliest: 1500 * time.Millisecond, spread: 6 * time.Second, budget: 8 * time.Minute})
	t.Logf("chaos: seed %d, %d nodes: %d deployed, %d failed (%d scripted to fail), %d leaked, %d duplicate deploys, %d duplicate allocations; %s; wall %s",
		res.seed, res.nodes, res.deployed, res.failed, res.scripted, res.leaks, res.dupDeploys, res.dupAllocs, res.faulted, time.Since(start).Round(time.Second))
}

// chaosSpec sizes a run: kill instants are drawn in
// [earliest, earliest+spread) after each engine run starts.
type chaosSpec struct {
	nodes, kills     int
	scale            float64 // the lab's time scale: phases must outlast the kills
	earliest, spread time.Duration
	budget           time.Duration // the whole run, kills and resumes
}

// chaosResult is what the lab's state says after the run.
type chaosResult struct {
	seed                                   uint64
	nodes, deployed, failed, scripted      int
	leaks, dupDeploys, dupAllocs, requests int
	faulted                                string // what the lab's faults did
	kills                                  []killReport
}

// runChaos builds the binary, starts the lab process with the fault mix,
// applies and prepares the site, deploys with kills, and audits the lab.
func runChaos(t *testing.T, spec chaosSpec) chaosResult {
	seed := chaosSeed(t)
	rnd := mrand.New(mrand.NewPCG(seed, 3))
	dir, bin, d := generatedSite(t, spec.nodes)
	names := d.NodeNames()
	faults, dead := faultMix(int64(seed), names)
	lv := startLabProc(t, bin, dir, faults, int64(seed), spec.scale)
	state, common := writeEngineFiles(t, bin, dir, d.Site.Metadata.Name, lv.info)
	ctx, cancel := context.WithTimeout(t.Context(), spec.budget)
	defer cancel()
	taskID, kills := deployWithKills(ctx, t, bin, common, state, lv, rnd, spec)
	res := auditLab(t, lv, []string{"--state", state}, taskID, names, dead)
	res.seed, res.kills = seed, kills
	return res
}

// faulted says what the faults did, from the lab's counters: answers 500
// and 503, commissionings and deploys started, deployments failed.
func faulted(s maas.StatsSnapshot) string {
	var comm, deploys, failed int
	for _, c := range s.Lifecycle {
		comm, deploys, failed = comm+c.CommissionStarts, deploys+c.DeployStarts, failed+c.DeployFailures
	}
	return fmt.Sprintf("%d answers 500 and %d 503 (Retry-After) of %d MAAS requests; %d commissionings, %d deploys started, %d failed deployments",
		s.Statuses[500], s.Statuses[503], s.Total, comm, deploys, failed)
}

// chaosSeed is SLIPWAY_CHAOS_SEED when set, else random; it is logged.
func chaosSeed(t *testing.T) uint64 {
	var seed uint64
	if s := os.Getenv("SLIPWAY_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SLIPWAY_CHAOS_SEED=%q: %v", s, err)
		}
		seed = v
	} else {
		var b [8]byte
		_, _ = rand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:]) >> 1 // fits an int64 too
	}
	t.Logf("seed %d (SLIPWAY_CHAOS_SEED=%d replays the fault script and the kill instants drawn; timing still varies)", seed, seed)
	return seed
}

// generatedSite is a test directory with the built binary and a
// generated site of n nodes (in site/). The processes started on it get
// the lab's secrets from childEnv, not from this process's environment.
func generatedSite(t *testing.T, n int) (dir, bin string, d *design.Design) {
	dir = t.TempDir()
	bin = buildBinary(t, dir)
	d, err := labrun.Generated(t.Context(), filepath.Join(dir, "site"), n)
	if err != nil {
		t.Fatal(err)
	}
	return dir, bin, d
}

// buildBinary is the orchestrator binary built for this test run (once:
// the tests that run it share it; TestMain removes it), copied into dir.
func buildBinary(t *testing.T, dir string) string {
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "slipway-bin-")
		if built.err == nil {
			built.out, built.err = exec.Command("go", "build", "-o", filepath.Join(built.dir, "orchestrator"), ".").CombinedOutput()
		}
	})
	if built.err != nil {
		t.Fatalf("build: %v\n%s", built.err, built.out)
	}
	bin := filepath.Join(dir, "orchestrator")
	b, err := os.ReadFile(filepath.Join(built.dir, "orchestrator"))
	if err == nil {
		err = os.WriteFile(bin, b, 0o755)
	}
	if err == nil { // WriteFile's mode passes the umask, which a local socket's bind narrows for a moment (api.listenMasked)
		err = os.Chmod(bin, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// built is the binary the tests share.
var built struct {
	once sync.Once
	dir  string
	out  []byte
	err  error
}

// faultMix is docs/lab.md's fault mix over the nodes: every MAAS request
// may fail with 500 or 503 (Retry-After 1 s); in every 20 nodes one fails
// commissioning once and one deployment once (both retried), one fails
// deployment three times (beyond the engine's retry) and one has a BMC
// that never answers. The last two must end failed: dead.
func faultMix(seed int64, names []string) (*maas.Faults, map[string]bool) {
	f := &maas.Faults{Seed: seed, Ops: map[string]maas.OpFaults{
		"*":           {Error500: 0.01, Error503: 0.005, RetryAfter: 1},
		"POST deploy": {Error500: 0.02, Error503: 0.05, RetryAfter: 1},
	}, Machines: map[string]maas.MachineFaults{}}
	dead := map[string]bool{}
	for i, n := range names {
		switch i % 20 {
		case 3:
			f.Machines[n] = maas.MachineFaults{FailCommissioning: 1}
		case 7:
			f.Machines[n] = maas.MachineFaults{FailDeploy: 1}
		case 11:
			f.Machines[n] = maas.MachineFaults{FailDeploy: 3}
			dead[n] = true
		case 15:
			f.Machines[n] = maas.MachineFaults{BMCUnreachable: true}
			dead[n] = true
		}
	}
	return f, dead
}

// childEnv is the environment of a process started on the lab: this
// process's, with the lab's BMC password and its MAAS key (the site
// layer's env:SLIPWAY_TEST_MAAS_KEY). Given to each child explicitly
// rather than set with t.Setenv, so that the tests that start them can
// run in parallel (t.Setenv forbids it), each with its own lab's key.
func childEnv(info lab.Info) []string {
	return append(os.Environ(), "SLIPWAY_SECRET_BMC_ADMIN="+lab.DefaultBMCPassword, "SLIPWAY_TEST_MAAS_KEY="+info.APIKey)
}

// labView reads the lab process's simulator: its MAAS API and /sim/stats.
type labView struct {
	info  lab.Info
	creds maas.Credentials
	hc    *http.Client
}

// startLabProc runs `orchestrator lab` on the generated site with the
// faults, reads its JSON line, and stops it (by its PID) at cleanup.
func startLabProc(t *testing.T, bin, dir string, faults *maas.Faults, seed int64, scale float64) *labView {
	fp := filepath.Join(dir, "faults.json")
	b, _ := json.Marshal(faults)
	if err := os.WriteFile(fp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "lab", "--design", filepath.Join(dir, "site"), "--maas-listen", "127.0.0.1:0",
		"--time-scale", strconv.FormatFloat(scale, 'g', -1, 64), "--faults", fp, "--seed", strconv.FormatInt(seed, 10))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopProc(cmd) })
	line := make(chan string, 1)
	go func() { l, _ := bufio.NewReader(out).ReadString('\n'); line <- l }()
	lv := &labView{hc: &http.Client{Timeout: 10 * time.Second}}
	select {
	case l := <-line:
		if err := json.Unmarshal([]byte(l), &lv.info); err != nil {
			t.Fatalf("lab printed %q: %v", l, err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the lab printed nothing in 60 s")
	}
	if lv.creds, err = maas.ParseAPIKey(lv.info.APIKey); err != nil {
		t.Fatal(err)
	}
	t.Logf("lab process %d: %s, %d machines", cmd.Process.Pid, lv.info.MAASURL, len(lv.info.BMCs))
	return lv
}

// stopProc interrupts a process this test started, then kills it after 5 s.
func stopProc(cmd *exec.Cmd) { interruptWithin(cmd, 5*time.Second) }

// interruptWithin interrupts a process this test started and waits for
// it to exit; after d it kills it. False when it had to be killed.
func interruptWithin(cmd *exec.Cmd, d time.Duration) bool {
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		return false
	}
}

// stats reads /sim/stats (not a MAAS request: not counted, never faulted).
func (lv *labView) stats(t *testing.T) maas.StatsSnapshot {
	resp, err := lv.hc.Get(lv.info.StatsURL)
	if err != nil {
		t.Fatalf("sim stats: %v", err)
	}
	defer resp.Body.Close()
	var s maas.StatsSnapshot
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatalf("sim stats: %v", err)
	}
	return s
}

// simMachine is a machine as the simulator's MAAS API shows it.
type simMachine struct {
	SystemID   string `json:"system_id"`
	Hostname   string `json:"hostname"`
	StatusName string `json:"status_name"`
	Owner      string `json:"owner"`
}

// machines lists the simulator's machines, retrying (at most 20 times)
// the injected faults that hit this GET too.
func (lv *labView) machines(t *testing.T) []simMachine {
	var last string
	for range 20 {
		req, _ := http.NewRequest(http.MethodGet, lv.info.MAASURL+"/api/2.0/machines/", nil)
		lv.creds.Sign(req)
		resp, err := lv.hc.Do(req)
		if err != nil {
			t.Fatalf("list machines: %v", err)
		}
		var ms []simMachine
		err = json.NewDecoder(resp.Body).Decode(&ms)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && err == nil {
			return ms
		}
		last = resp.Status
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("list machines: %s 20 times", last)
	return nil
}

// writeEngineFiles writes the site layer (the lab's MAAS) and the engine
// configuration (its BMC ports), applies the site and prepares it (bin
// prepare-site, with the lab's secrets in its environment: childEnv).
func writeEngineFiles(t *testing.T, bin, dir, siteName string, info lab.Info) (state string, common []string) {
	layer := filepath.Join(dir, "layer")
	site := fmt.Sprintf("apiVersion: slipway/v1\nkind: Site\nmetadata: {name: %s}\nspec:\n  maas: {url: %q, apiKey: \"env:SLIPWAY_TEST_MAAS_KEY\"}\n",
		siteName, info.MAASURL)
	var cfg strings.Builder
	cfg.WriteString("pollInterval: 100ms\nretryBase: 100ms\nretryMax: 1s\nretryAttempts: 4\nbmcEndpoints:\n")
	for _, b := range info.BMCs {
		fmt.Fprintf(&cfg, "  %s: 127.0.0.1:%d\n", b.Node, b.Port)
	}
	for name, body := range map[string]string{filepath.Join(layer, "site.yaml"): site, filepath.Join(dir, "engine.yaml"): cfg.String()} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	state = filepath.Join(dir, "state.db")
	common = []string{"--state", state, "--config", filepath.Join(dir, "engine.yaml"), "--plugin-dir", dir}
	if code, out, errs := cli(t, "apply", "--state", state, filepath.Join(dir, "site"), layer); code != 0 {
		t.Fatalf("apply: %d %s %s", code, out, errs)
	}
	prep := exec.Command(bin, append([]string{"prepare-site"}, common...)...)
	prep.Env = childEnv(info)
	if out, err := prep.CombinedOutput(); err != nil {
		t.Fatalf("prepare-site: %v\n%s", err, out)
	}
	return state, common
}

// killReport says when a kill landed and what was in flight then.
type killReport struct {
	after    time.Duration // since the killed run started
	at       time.Time     // when the SIGKILL was sent
	requests int           // MAAS requests the lab served in the 100 ms before the kill
	midRead  int           // machines mid-phase in the lab's listing read last before the kill
	readGap  time.Duration // from the start of that listing to the kill
	midPhase int           // machines the lab shows mid-phase right after the kill
	statuses map[string]int
}

// deployWithKills runs `deploy`, then `wait TASK` after each kill; the
// run after the last kill goes to the end. It returns the task's ID.
func deployWithKills(ctx context.Context, t *testing.T, bin string, common []string, state string, lv *labView, rnd *mrand.Rand, spec chaosSpec) (string, []killReport) {
	args := append([]string{"deploy", "-o", "json"}, common...)
	taskID := ""
	var kills []killReport
	for run := 0; run <= spec.kills; run++ {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = childEnv(lv.info)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if run == spec.kills {
			begun := time.Now()
			err := cmd.Wait()
			t.Logf("final run (pid %d) to the task's end: %s", cmd.Process.Pid, time.Since(begun).Round(time.Millisecond))
			var ee *exec.ExitError
			if err != nil && (!errors.As(err, &ee) || ee.ExitCode() < 0) {
				t.Fatalf("final run: %v\n%s", err, out.String())
			}
			break
		}
		at := spec.earliest + time.Duration(rnd.Int64N(int64(spec.spread)))
		k := killInFlight(t, lv, cmd, at)
		t.Logf("kill %d (pid %d): drawn at %s, landed %s after start, %d MAAS requests served in the 100 ms before it, %d machines mid-phase %s before it and %d after it %v",
			run+1, cmd.Process.Pid, at.Round(time.Millisecond), k.after.Round(time.Millisecond), k.requests, k.midRead, k.readGap.Round(time.Millisecond), k.midPhase, k.statuses)
		kills = append(kills, k)
		if taskID == "" {
			taskID = deployTask(t, state)
		}
		args = append([]string{"wait", taskID, "-o", "json"}, common...)
	}
	if err := ctx.Err(); err != nil {
		t.Fatalf("the run exceeded its budget of %s", spec.budget)
	}
	return taskID, kills
}

// killInFlight waits until at, then (for at most 10 s) until the lab has
// served MAAS requests in the last 100 ms and shows at least a tenth of
// its machines mid-phase, and kills the engine with SIGKILL at once. The
// process must still be running at the kill. The kill is in flight when
// the lab served requests just before it and its last listing, read
// readGap before the kill, showed machines mid-phase. How many are still
// mid-phase right after it is reported too (the engine dead, only the
// lab's timers move machines); it can be none when a phase's machines all
// ended in the gap (200 machines commissioned together end within a few
// hundred ms of each other).
func killInFlight(t *testing.T, lv *labView, cmd *exec.Cmd, at time.Duration) killReport {
	begun := time.Now()
	time.Sleep(at)
	k := killReport{}
	var read time.Time
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		before := lv.stats(t).Total
		time.Sleep(100 * time.Millisecond)
		k.requests = lv.stats(t).Total - before
		read = time.Now()
		ms := lv.machines(t) // after the window: its own request is not in it
		if k.midRead, _ = phases(ms); k.requests > 0 && k.midRead >= max(1, len(ms)/10) {
			break
		}
	}
	k.at = time.Now()
	k.after = k.at.Sub(begun)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL: %v (had the run ended?)", err)
	}
	k.readGap = time.Since(read)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the run ended before the kill landed: %v", err)
	}
	k.midPhase, k.statuses = phases(lv.machines(t))
	if k.requests == 0 || k.midRead == 0 {
		t.Errorf("kill at %s: %d MAAS requests served in the 100 ms before it, %d machines mid-phase in a listing read %s before it: not in flight",
			k.after, k.requests, k.midRead, k.readGap)
	}
	return k
}

// phases counts the machines mid-phase and the machines by status.
func phases(ms []simMachine) (mid int, statuses map[string]int) {
	statuses = map[string]int{}
	for _, m := range ms {
		statuses[m.StatusName]++
		if midPhase[m.StatusName] {
			mid++
		}
	}
	return mid, statuses
}

// midPhase are the statuses a machine leaves on a timer of the lab's.
var midPhase = map[string]bool{"Commissioning": true, "Deploying": true, "Releasing": true, "Disk erasing": true}

// deployTask finds the deploy_nodes task the killed run submitted.
func deployTask(t *testing.T, state string) string {
	code, o, errs := cli(t, "tasks", "--state", state, "-o", "json")
	var tasks []struct{ ID, Action string }
	if code != 0 || json.Unmarshal([]byte(o), &tasks) != nil {
		t.Fatalf("tasks: %d %s %s", code, o, errs)
	}
	for _, tk := range tasks {
		if tk.Action == "deploy_nodes" {
			return tk.ID
		}
	}
	t.Fatal("the killed deploy left no task")
	return ""
}

// auditLab checks the run against the lab's state: every node's machine
// Deployed in the simulator or the node failed with a reason, no machine
// the simulator has allocated or deployed that no node record claims, no
// deploy started twice on a machine without a failed deployment between.
// where names the engine's records: --state FILE, or --server URL.
func auditLab(t *testing.T, lv *labView, where []string, taskID string, names []string, dead map[string]bool) chaosResult {
	res := chaosResult{nodes: len(names), scripted: len(dead)}
	if st := taskStatus(t, where, taskID); !record.TaskStatus(st).Finished() {
		t.Fatalf("task %s is %s after the final run", taskID, st)
	}
	recs := nodeRecords(t, where)
	byID := map[string]simMachine{}
	for _, m := range lv.machines(t) {
		byID[m.SystemID] = m
	}
	for _, n := range names {
		r, ok := recs[n]
		switch {
		case !ok:
			t.Errorf("%s: no node record", n)
		case r.Outcome == record.OutcomeFailed && r.Reason != "":
			res.failed++
			if !dead[n] {
				t.Logf("%s failed (not scripted to; the lab shows %q): %s: %s", n, byID[r.MachineID].StatusName, r.Stage, r.Reason)
			}
		case byID[r.MachineID].StatusName == "Deployed":
			res.deployed++
			if dead[n] {
				t.Errorf("%s: deployed although its faults should have failed it", n)
			}
		default:
			t.Errorf("%s: machine %q is %q in the lab; record %s at %s, reason %q", n, r.MachineID, byID[r.MachineID].StatusName, r.Outcome, r.Stage, r.Reason)
		}
	}
	res.leaks = leaked(t, byID, recs)
	s := lv.stats(t)
	res.dupDeploys, res.dupAllocs, res.requests = duplicateDeploys(t, s.Lifecycle), maas.DuplicateAllocations(s.Lifecycle), s.Total
	res.faulted = faulted(s)
	if res.leaks != 0 || res.dupDeploys != 0 || res.dupAllocs != 0 {
		t.Errorf("%d leaked machines, %d duplicate deploys, %d duplicate allocations", res.leaks, res.dupDeploys, res.dupAllocs)
	}
	if min := len(names) - len(dead) - len(names)/20; res.deployed < min {
		t.Errorf("only %d of %d nodes deployed (%d scripted to fail; want at least %d)", res.deployed, len(names), len(dead), min)
	}
	return res
}

func taskStatus(t *testing.T, where []string, taskID string) string {
	code, o, errs := cli(t, append([]string{"tasks", taskID, "-o", "json"}, where...)...)
	var task struct{ Status string }
	if code != 0 || json.Unmarshal([]byte(o), &task) != nil {
		t.Fatalf("tasks %s: %d %s", taskID, code, errs)
	}
	return task.Status
}

func nodeRecords(t *testing.T, where []string) map[string]record.NodeRecord {
	code, o, errs := cli(t, append([]string{"nodes", "-o", "json"}, where...)...)
	var recs []record.NodeRecord
	if code != 0 || json.Unmarshal([]byte(o), &recs) != nil {
		t.Fatalf("nodes: %d %s", code, errs)
	}
	out := map[string]record.NodeRecord{}
	for _, r := range recs {
		out[r.Name] = r
	}
	return out
}

// leaked counts the machines the simulator shows owned (an owner, or
// Allocated, Deploying, Deployed, Failed deployment) that no node record
// claims.
func leaked(t *testing.T, byID map[string]simMachine, recs map[string]record.NodeRecord) int {
	claimed := map[string]bool{}
	for _, r := range recs {
		claimed[r.MachineID] = true
	}
	n := 0
	for id, m := range byID {
		taken := m.Owner != "" || maas.MachineState{Status: m.StatusName}.Owned()
		if taken && !claimed[id] {
			t.Errorf("leaked: %s (%s) is %s, owner %q, and no node record claims it", id, m.Hostname, m.StatusName, m.Owner)
			n++
		}
	}
	return n
}

// duplicateDeploys is the simulator's duplicate_deploys measure
// (maas.DuplicateDeploys): per machine, the deploy starts beyond the
// first that did not follow a Failed deployment. This run asks for no
// redeploy, so none is excused.
func duplicateDeploys(t *testing.T, lc map[string]maas.MachineLifecycle) int {
	for id, c := range lc {
		if c.DuplicateDeploys > 0 {
			t.Errorf("%s (%s): %d duplicate deploys (%d starts, %d failed deployments)", id, c.Hostname, c.DuplicateDeploys, c.DeployStarts, c.DeployFailures)
		}
	}
	return maas.DuplicateDeploys(lc, nil)
}
