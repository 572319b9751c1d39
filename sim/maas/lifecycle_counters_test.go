package maas

// The per-machine lifecycle counters (Server.Lifecycle) and
// DuplicateAllocations, which a deploy engine's tests use to prove that no
// machine was allocated or deployed twice; and IdealDeploySeconds.

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// lifecycle returns the counters of one machine.
func (l *simLab) lifecycle(id string) MachineLifecycle {
	l.tb.Helper()
	lc, ok := l.s.Lifecycle()[id]
	if !ok {
		l.tb.Fatalf("no lifecycle counters for %s", id)
	}
	return lc
}

// wantLifecycle fails unless the machine's counters are want and the
// simulator counts dups duplicates over all machines.
func (l *simLab) wantLifecycle(t *testing.T, what, id string, want MachineLifecycle, dups int) {
	t.Helper()
	if got := l.lifecycle(id); got != want {
		t.Errorf("%s: lifecycle %+v, want %+v", what, got, want)
	}
	if got := DuplicateAllocations(l.s.Lifecycle()); got != dups {
		t.Errorf("%s: DuplicateAllocations = %d, want %d", what, got, dups)
	}
}

func TestLifecycleAllocateDeployOnce(t *testing.T) {
	l := newSimLab(t, nil)
	id := l.deployed(1, "once")
	l.wantLifecycle(t, "allocate and deploy", id,
		MachineLifecycle{Hostname: "once", Allocations: 1, DeployStarts: 1, CommissionStarts: 1}, 0)

	// A deploy of a Ready machine allocates it on the way: one allocation.
	id2 := l.ready(2, "implicit")
	l.must(http.StatusOK, "POST", "/machines/"+id2+"/?op=deploy", nil, nil)
	l.waitStatus(id2, StatusDeployed)
	l.wantLifecycle(t, "deploy of a Ready machine", id2,
		MachineLifecycle{Hostname: "implicit", Allocations: 1, DeployStarts: 1, CommissionStarts: 1}, 0)

	// A dry run allocates nothing.
	id3 := l.ready(3, "dry")
	l.must(http.StatusOK, "POST", "/machines/?op=allocate", url.Values{"system_id": {id3}, "dry_run": {"true"}}, nil)
	l.wantLifecycle(t, "allocate dry_run", id3, MachineLifecycle{Hostname: "dry", CommissionStarts: 1}, 0)
}

func TestLifecycleAllocateReleaseAllocate(t *testing.T) {
	l := newSimLab(t, nil)
	id := l.ready(1, "again")
	l.must(http.StatusOK, "POST", "/machines/?op=allocate", url.Values{"system_id": {id}}, nil)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=release", nil, nil)
	l.waitStatus(id, StatusReady)
	l.must(http.StatusOK, "POST", "/machines/?op=allocate", url.Values{"system_id": {id}}, nil)
	l.wantLifecycle(t, "allocate, release, allocate", id,
		MachineLifecycle{Hostname: "again", Allocations: 2, Releases: 1, CommissionStarts: 1}, 0)

	// Released through the machines op, deployed after: still no duplicate.
	l.must(http.StatusOK, "POST", "/machines/?op=release", url.Values{"machines": {id}}, nil)
	l.waitStatus(id, StatusReady)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", nil, nil)
	l.waitStatus(id, StatusDeployed)
	l.wantLifecycle(t, "release (machines op), deploy", id,
		MachineLifecycle{Hostname: "again", Allocations: 3, DeployStarts: 1, Releases: 2, CommissionStarts: 1}, 0)

	// A second allocation without a release is a duplicate.
	id2 := l.ready(2, "twice")
	l.must(http.StatusOK, "POST", "/machines/?op=allocate", url.Values{"system_id": {id2}}, nil)
	r := l.do("POST", "/machines/?op=allocate", url.Values{"system_id": {id2}})
	if r.code != http.StatusConflict {
		t.Fatalf("allocate an Allocated machine: %s, want 409", r)
	}
	l.wantLifecycle(t, "a refused second allocate", id2,
		MachineLifecycle{Hostname: "twice", Allocations: 1, CommissionStarts: 1}, 0)
}

func TestLifecycleFailedDeployThenDeploy(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Machines: map[string]MachineFaults{"flaky": {FailDeploy: 1}}}
	})
	id := l.ready(1, "flaky")
	l.must(http.StatusOK, "POST", "/machines/?op=allocate", url.Values{"system_id": {id}}, nil)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", nil, nil)
	l.waitStatus(id, StatusFailedDeployment)
	l.wantLifecycle(t, "a failed deployment", id,
		MachineLifecycle{Hostname: "flaky", Allocations: 1, DeployStarts: 1, DeployFailures: 1, CommissionStarts: 1}, 0)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", nil, nil)
	l.waitStatus(id, StatusDeployed)
	l.wantLifecycle(t, "a deployment after a failed one", id,
		MachineLifecycle{Hostname: "flaky", Allocations: 1, DeployStarts: 2, DeployFailures: 1, CommissionStarts: 1}, 0)
}

func TestLifecycleNodeTimeoutIsDeployFailure(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Machines: map[string]MachineFaults{"hangs": {HangDeploy: true}}}
		o.Durations.NodeTimeout = 20 * time.Second // 20 ms
	})
	id := l.ready(1, "hangs")
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", nil, nil)
	l.waitStatus(id, StatusFailedDeployment)
	l.wantLifecycle(t, "a deployment MAAS timed out", id,
		MachineLifecycle{Hostname: "hangs", Allocations: 1, DeployStarts: 1, DeployFailures: 1, CommissionStarts: 1}, 0)
}

// A second deploy while the first runs, or after it succeeded, is refused
// with 409: DeployRefused counts it, and it is no duplicate. A second
// deployment the simulator does start without a failure or release in
// between (here: after an abort) is one.
func TestLifecycleSecondDeploy(t *testing.T) {
	l := newSimLab(t, nil)
	l.setDuration(func(d *Durations) { d.Deploy = time.Hour })
	id := l.ready(1, "double")
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", nil, nil)
	wantConflict(t, "deploy a Deploying machine", l.do("POST", "/machines/"+id+"/?op=deploy", nil), "'Deploying'")
	l.wantLifecycle(t, "a refused second deploy", id,
		MachineLifecycle{Hostname: "double", Allocations: 1, DeployStarts: 1, DeployRefused: 1, CommissionStarts: 1}, 0)

	// Abort (Deploying to Allocated) and deploy again: a second deploy start
	// with neither a failed deployment nor a release before it.
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=abort", nil, nil)
	l.wantStill(t, "abort", id, StatusAllocated)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", nil, nil)
	l.wantLifecycle(t, "a deploy after an abort", id,
		MachineLifecycle{Hostname: "double", Allocations: 1, DeployStarts: 2, DeployRefused: 1, CommissionStarts: 1, DuplicateDeploys: 1}, 1)

	// Deployed machines refuse deploy too.
	l.setDuration(func(d *Durations) { d.Deploy = 5 * time.Second })
	dep := l.deployed(2, "deployed")
	wantConflict(t, "deploy a Deployed machine", l.do("POST", "/machines/"+dep+"/?op=deploy", nil), "'Deployed'")
	if got := l.lifecycle(dep); got.DeployRefused != 1 || got.DeployStarts != 1 {
		t.Errorf("deploy of a Deployed machine: lifecycle %+v, want 1 start and 1 refused", got)
	}
	if got := DuplicateAllocations(l.s.Lifecycle()); got != 1 {
		t.Errorf("DuplicateAllocations = %d, want still 1", got)
	}
}

// A healthy deployment released and deployed again scores 0 duplicate
// allocations (the release excuses it) but is a duplicate deploy unless
// the engine asked for the redeploy; a deploy after a failed deployment
// is none.
func TestDuplicateDeploys(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Machines: map[string]MachineFaults{"flaky": {FailDeploy: 1}}}
	})
	id := l.deployed(1, "healthy")
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=release", nil, nil)
	l.waitStatus(id, StatusReady)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", nil, nil)
	l.waitStatus(id, StatusDeployed)
	if got := DuplicateAllocations(l.s.Lifecycle()); got != 0 {
		t.Errorf("DuplicateAllocations = %d (the old measure), want 0", got)
	}
	if got := DuplicateDeploys(l.s.Lifecycle(), nil); got != 1 {
		t.Errorf("DuplicateDeploys = %d after release and redeploy of a healthy machine, want 1", got)
	}
	if got := DuplicateDeploys(l.s.Lifecycle(), map[string]int{id: 1}); got != 0 {
		t.Errorf("DuplicateDeploys = %d with the redeploy requested, want 0", got)
	}
	flaky := l.ready(2, "flaky")
	l.must(http.StatusOK, "POST", "/machines/"+flaky+"/?op=deploy", nil, nil)
	l.waitStatus(flaky, StatusFailedDeployment)
	l.must(http.StatusOK, "POST", "/machines/"+flaky+"/?op=release", nil, nil)
	l.waitStatus(flaky, StatusReady)
	l.must(http.StatusOK, "POST", "/machines/"+flaky+"/?op=deploy", nil, nil)
	l.waitStatus(flaky, StatusDeployed)
	if got := l.lifecycle(flaky).DuplicateDeploys; got != 0 {
		t.Errorf("a redeploy after a failed deployment counts %d duplicates, want 0", got)
	}
}

func TestStatsByKind(t *testing.T) {
	st := newStats()
	st.arrived("POST /machines/{system_id}/?op=deploy")
	st.arrived("POST /machines/{system_id}/?op=deploy")
	st.arrived("POST /machines/?op=allocate")
	st.arrived("GET /machines/{system_id}/")
	want := map[string]int{"POST deploy": 2, "POST allocate": 1, "GET /machines/{system_id}/": 1}
	got := st.ByKind()
	if len(got) != len(want) {
		t.Fatalf("ByKind = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("ByKind[%q] = %d, want %d", k, got[k], v)
		}
	}
}

func TestLifecycleInSimStats(t *testing.T) {
	l := newSimLab(t, nil)
	id := l.deployed(1, "stats")
	resp, err := l.hs.Client().Get(l.hs.URL + "/sim/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var snap struct {
		Total     int                                   `json:"total"`
		Lifecycle map[string]map[string]json.RawMessage `json:"lifecycle"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil {
		t.Fatal(err)
	}
	lc, ok := snap.Lifecycle[id]
	if !ok {
		t.Fatalf("/sim/stats lifecycle %v has no %s", snap.Lifecycle, id)
	}
	for k, want := range map[string]string{"hostname": `"stats"`, "allocations": "1", "deploy_starts": "1",
		"deploy_refused": "0", "deploy_failures": "0", "releases": "0", "commission_starts": "1"} {
		if got := string(lc[k]); got != want {
			t.Errorf("/sim/stats lifecycle %s = %s, want %s", k, got, want)
		}
	}
	if snap.Total == 0 {
		t.Error("/sim/stats total is 0")
	}
}

func TestDuplicateAllocations(t *testing.T) {
	for _, c := range []struct {
		name string
		lc   MachineLifecycle
		want int
	}{
		{"nothing", MachineLifecycle{}, 0},
		{"allocated and deployed", MachineLifecycle{Allocations: 1, DeployStarts: 1}, 0},
		{"allocated twice", MachineLifecycle{Allocations: 2}, 1},
		{"allocated twice, released between", MachineLifecycle{Allocations: 2, Releases: 1}, 0},
		{"deployed twice", MachineLifecycle{Allocations: 1, DeployStarts: 2}, 1},
		{"deployed twice, failed once", MachineLifecycle{Allocations: 1, DeployStarts: 2, DeployFailures: 1}, 0},
		{"deployed three times, failed once", MachineLifecycle{Allocations: 1, DeployStarts: 3, DeployFailures: 1}, 1},
		{"deployed twice, released between", MachineLifecycle{Allocations: 2, DeployStarts: 2, Releases: 1}, 0},
		{"allocated and deployed three times", MachineLifecycle{Allocations: 3, DeployStarts: 3}, 4},
		{"refusals are no duplicates", MachineLifecycle{Allocations: 1, DeployStarts: 1, DeployRefused: 5}, 0},
	} {
		if got := DuplicateAllocations(map[string]MachineLifecycle{"abc": c.lc}); got != c.want {
			t.Errorf("%s: DuplicateAllocations = %d, want %d", c.name, got, c.want)
		}
	}
	sum := DuplicateAllocations(map[string]MachineLifecycle{
		"a": {Allocations: 2}, "b": {DeployStarts: 2}, "c": {Allocations: 1, DeployStarts: 1},
	})
	if sum != 2 {
		t.Errorf("over three machines: %d, want 2", sum)
	}
}

func TestIdealDeploySeconds(t *testing.T) {
	// Enlist 3m + Commission 5m + Deploy 8m.
	if got := IdealDeploySeconds(DefaultDurations, 1); got != 960 {
		t.Errorf("IdealDeploySeconds(DefaultDurations, 1) = %v, want 960", got)
	}
	if got := IdealDeploySeconds(DefaultDurations, 0.01); got < 9.5999 || got > 9.6001 {
		t.Errorf("IdealDeploySeconds(DefaultDurations, 0.01) = %v, want 9.6", got)
	}
	if got := IdealDeploySeconds(DefaultDurations, 0); got != 960 {
		t.Errorf("IdealDeploySeconds(DefaultDurations, 0) = %v, want 960 (scale 0 is 1, as in New)", got)
	}
	// Only enlist, commission and deploy count.
	d := Durations{PowerCycle: time.Hour, Enlist: time.Second, Commission: 2 * time.Second, Deploy: 3 * time.Second,
		Release: time.Hour, Erase: time.Hour, NodeTimeout: time.Hour, ReleaseTimeout: time.Hour}
	if got := IdealDeploySeconds(d, 2); got != 12 {
		t.Errorf("IdealDeploySeconds = %v, want 12", got)
	}
}
