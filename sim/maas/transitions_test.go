package maas

// MAAS's machine state machine: an op a state does not allow answers 409
// naming the state (and changes nothing); the allowed ones land where MAAS
// lands (src/maasserver/node_status.py, NODE_TRANSITIONS); MAAS times out
// phases on its own.

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// wantConflict fails unless r is a 409 whose body contains every part.
func wantConflict(t *testing.T, what string, r rawResp, parts ...string) {
	t.Helper()
	if r.code != http.StatusConflict {
		t.Errorf("%s: got %s, want 409", what, r)
		return
	}
	for _, p := range parts {
		if !strings.Contains(string(r.body), p) {
			t.Errorf("%s: %q does not contain %q", what, r.body, p)
		}
	}
}

// wantStill fails unless the machine is still in status st.
func (l *simLab) wantStill(t *testing.T, what, id string, st int) {
	t.Helper()
	if got := l.statusOf(id); got != st {
		t.Errorf("%s moved the machine to %s, want it still %s", what, StatusName(got), StatusName(st))
	}
}

// setDuration changes a phase duration of a running simulator.
func (l *simLab) setDuration(f func(*Durations)) {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	f(&l.s.dur)
}

func TestIllegalDeploy(t *testing.T) {
	l := newSimLab(t, nil)
	newID := l.enlist(1, "new")
	wantConflict(t, "deploy a New machine", l.do("POST", "/machines/"+newID+"/?op=deploy", nil), "Cannot deploy", "'New'")
	l.wantStill(t, "deploy of a New machine", newID, StatusNew)

	dep := l.deployed(2, "deployed")
	wantConflict(t, "deploy a Deployed machine", l.do("POST", "/machines/"+dep+"/?op=deploy", nil), "Cannot deploy", "'Deployed'")
	l.wantStill(t, "deploy of a Deployed machine", dep, StatusDeployed)

	l.setDuration(func(d *Durations) { d.Commission = time.Hour })
	comm := l.enlist(3, "commissioning")
	l.must(http.StatusOK, "POST", "/machines/"+comm+"/?op=commission", nil, nil)
	wantConflict(t, "deploy a Commissioning machine", l.do("POST", "/machines/"+comm+"/?op=deploy", nil), "'Commissioning'")
	l.wantStill(t, "deploy of a Commissioning machine", comm, StatusCommissioning)
}

func TestIllegalDeployBadSeriesLeavesReady(t *testing.T) {
	l := newSimLab(t, nil)
	id := l.ready(1, "series")
	r := l.do("POST", "/machines/"+id+"/?op=deploy", url.Values{"distro_series": {"warty"}})
	if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "distro_series") {
		t.Fatalf("deploy with an unknown series: %s, want 400 on distro_series", r)
	}
	l.wantStill(t, "a rejected deploy", id, StatusReady)
	if m := l.machine(id); m["owner"] != nil {
		t.Errorf("a rejected deploy left owner %v", m["owner"])
	}
}

// TestDeployKernelMustBeSynced: like MAAS, a deploy's hwe_kernel must be
// the kernel of a boot resource of the series (amd64/hwe-22.04 for
// hwe-22.04 on jammy); another is refused with 400 on hwe_kernel and the
// machine stays Ready.
func TestDeployKernelMustBeSynced(t *testing.T) {
	l := newSimLab(t, nil)
	id := l.ready(1, "kernel")
	r := l.do("POST", "/machines/"+id+"/?op=deploy", url.Values{"distro_series": {"jammy"}, "hwe_kernel": {"hwe-24.04"}})
	if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "hwe_kernel") || !strings.Contains(string(r.body), "hwe-24.04 is not available for ubuntu/jammy") {
		t.Fatalf("deploy jammy with hwe-24.04: %s, want 400 on hwe_kernel", r)
	}
	l.wantStill(t, "a deploy with a kernel not synced", id, StatusReady)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", url.Values{"distro_series": {"jammy"}, "hwe_kernel": {"hwe-22.04"}}, nil)
	var res []map[string]any
	l.must(http.StatusOK, "GET", "/boot-resources/", nil, &res)
	var jammy []string
	for _, b := range res {
		if b["name"] == "ubuntu/jammy" {
			jammy = append(jammy, b["architecture"].(string))
		}
	}
	if strings.Join(jammy, " ") != "amd64/ga-22.04 amd64/hwe-22.04" {
		t.Errorf("ubuntu/jammy's boot resources: %v, want one per kernel like MAAS's", jammy)
	}
}

func TestIllegalCommission(t *testing.T) {
	l := newSimLab(t, nil)
	dep := l.deployed(1, "deployed")
	wantConflict(t, "commission a Deployed machine", l.do("POST", "/machines/"+dep+"/?op=commission", nil), "Cannot commission", "'Deployed'")
	l.wantStill(t, "commission of a Deployed machine", dep, StatusDeployed)

	alloc := l.ready(2, "allocated")
	l.must(http.StatusOK, "POST", "/machines/?op=allocate", url.Values{"system_id": {alloc}}, nil)
	wantConflict(t, "commission an Allocated machine", l.do("POST", "/machines/"+alloc+"/?op=commission", nil), "'Allocated'")
	l.wantStill(t, "commission of an Allocated machine", alloc, StatusAllocated)

	l.setDuration(func(d *Durations) { d.Commission = time.Hour })
	comm := l.enlist(3, "twice")
	l.must(http.StatusOK, "POST", "/machines/"+comm+"/?op=commission", nil, nil)
	wantConflict(t, "commission a Commissioning machine", l.do("POST", "/machines/"+comm+"/?op=commission", nil), "'Commissioning'")
}

func TestIllegalRelease(t *testing.T) {
	l := newSimLab(t, nil)
	// MAAS: releasing a Ready machine is a redundant retry whose
	// postcondition holds: 200, nothing changes (both ops).
	ready := l.ready(1, "ready")
	l.must(http.StatusOK, "POST", "/machines/"+ready+"/?op=release", nil, nil)
	var ids []string
	l.must(http.StatusOK, "POST", "/machines/?op=release", url.Values{"machines": {ready}}, &ids)
	if len(ids) != 0 {
		t.Errorf("releasing a Ready machine (machines op) released %v", ids)
	}
	l.wantStill(t, "release of a Ready machine", ready, StatusReady)

	newID := l.enlist(2, "new")
	wantConflict(t, "release a New machine", l.do("POST", "/machines/"+newID+"/?op=release", nil), "'New'")

	// One machine that cannot be released fails the whole request.
	dep := l.deployed(3, "deployed")
	wantConflict(t, "release Deployed and New together", l.do("POST", "/machines/?op=release", url.Values{"machines": {dep, newID}}), newID, "'New'")
	l.wantStill(t, "a failed release of several machines", dep, StatusDeployed)

	// Unknown machines are a 400 naming them.
	r := l.do("POST", "/machines/?op=release", url.Values{"machines": {dep, "nosuch"}})
	if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "nosuch") {
		t.Errorf("release of an unknown machine: %s, want 400 naming it", r)
	}
	l.wantStill(t, "a release naming an unknown machine", dep, StatusDeployed)
}

func TestIllegalAbort(t *testing.T) {
	l := newSimLab(t, nil)
	for _, c := range []struct {
		state int
		id    string
	}{
		{StatusNew, l.enlist(1, "new")},
		{StatusReady, l.ready(2, "ready")},
		{StatusDeployed, l.deployed(3, "deployed")},
	} {
		name := StatusName(c.state)
		// MAAS's NodeStateViolation: "Cannot abort in current state: node
		// <system_id> is in state <status>."
		wantConflict(t, "abort a "+name+" machine", l.do("POST", "/machines/"+c.id+"/?op=abort", nil), "Cannot abort in current state: node "+c.id+" is in state "+name+".")
		l.wantStill(t, "abort of a "+name+" machine", c.id, c.state)
	}
}

func TestIllegalMarkFixed(t *testing.T) {
	l := newSimLab(t, nil)
	// MAAS's message names the state mark_fixed leads to, not the current
	// one: "Can't mark a non-broken node as 'Ready'."
	for _, id := range []string{l.ready(1, "ready"), l.deployed(2, "deployed")} {
		before := l.statusOf(id)
		wantConflict(t, "mark_fixed a "+StatusName(before)+" machine", l.do("POST", "/machines/"+id+"/?op=mark_fixed", nil), "non-broken")
		l.wantStill(t, "mark_fixed of a non-broken machine", id, before)
	}
}

func TestIllegalAllocateOnlyDeployed(t *testing.T) {
	l := newSimLab(t, nil)
	a, b := l.deployed(1, "a"), l.deployed(2, "b")
	// MAAS's messages: no constraints, a system_id, others (machines.py).
	wantConflict(t, "allocate with only Deployed machines", l.do("POST", "/machines/?op=allocate", nil), "No machine available.")
	wantConflict(t, "allocate a Deployed machine by system_id", l.do("POST", "/machines/?op=allocate", url.Values{"system_id": {a}}), "No machine with system ID "+a+" available.")
	wantConflict(t, "allocate a Deployed machine by name", l.do("POST", "/machines/?op=allocate", url.Values{"name": {"b"}}), "No available machine matches constraints")
	l.wantStill(t, "a failed allocation", a, StatusDeployed)
	l.wantStill(t, "a failed allocation", b, StatusDeployed)
	// New and commissioning machines are not available either.
	l.enlist(3, "new")
	wantConflict(t, "allocate with only Deployed and New machines", l.do("POST", "/machines/?op=allocate", nil), "No machine available.")
}

func TestIllegalLockAndLockedMachine(t *testing.T) {
	l := newSimLab(t, nil)
	ready := l.ready(1, "ready")
	wantConflict(t, "lock a Ready machine", l.do("POST", "/machines/"+ready+"/?op=lock", nil), "Ready")
	dep := l.deployed(2, "deployed")
	l.must(http.StatusOK, "POST", "/machines/"+dep+"/?op=lock", nil, nil)
	if m := l.machine(dep); m["locked"] != true {
		t.Errorf("locked = %v after lock", m["locked"])
	}
	l.must(http.StatusOK, "POST", "/machines/"+dep+"/?op=unlock", nil, nil)
	if m := l.machine(dep); m["locked"] != false {
		t.Errorf("locked = %v after unlock", m["locked"])
	}
}

func TestIllegalOpUnknown(t *testing.T) {
	l := newSimLab(t, nil)
	id := l.enlist(1, "x")
	r := l.do("POST", "/machines/"+id+"/?op=levitate", nil)
	if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "Unrecognised signature") {
		t.Errorf("unknown op: %s, want 400 Unrecognised signature", r)
	}
	r = l.do("POST", "/machines/nosuch/?op=deploy", nil)
	if r.code != http.StatusNotFound || string(r.body) != "No Machine matches the given query." {
		t.Errorf("op on an unknown machine: %s", r)
	}
}

func TestAbortCommissioning(t *testing.T) {
	l := newSimLab(t, nil)
	ready := l.ready(1, "was-ready")
	// Long enough to abort in, short enough to see that an aborted phase
	// does not complete later.
	l.setDuration(func(d *Durations) { d.Commission = 200 * time.Second }) // 200 ms

	// A machine never commissioned goes back to New.
	newID := l.enlist(2, "was-new")
	l.must(http.StatusOK, "POST", "/machines/"+newID+"/?op=commission", nil, nil)
	l.wantStill(t, "commission", newID, StatusCommissioning)
	var m map[string]any
	l.must(http.StatusOK, "POST", "/machines/"+newID+"/?op=abort", url.Values{"comment": {"wrong rack"}}, &m)
	if st := int(m["status"].(float64)); st != StatusNew {
		t.Errorf("abort of a first commissioning: %s, want New", StatusName(st))
	}

	// A commissioned machine goes back to New too: MAAS's
	// _abort_commissioning_async sets NEW whatever the status before (an
	// earlier lab returned Ready here, which MAAS never does).
	l.must(http.StatusOK, "POST", "/machines/"+ready+"/?op=commission", nil, nil)
	l.must(http.StatusOK, "POST", "/machines/"+ready+"/?op=abort", nil, &m)
	if st := int(m["status"].(float64)); st != StatusNew {
		t.Errorf("abort of a recommissioning: %s, want New", StatusName(st))
	}
	if m["power_state"] != "off" {
		t.Errorf("abort of a recommissioning left power %v, want off (MAAS stops the machine)", m["power_state"])
	}

	// The aborted phases do not complete later.
	time.Sleep(300 * time.Millisecond)
	l.wantStill(t, "an aborted commissioning", newID, StatusNew)
	l.wantStill(t, "an aborted recommissioning", ready, StatusNew)
	l.setDuration(func(d *Durations) { d.Commission = 5 * time.Second })
	// And it can be commissioned again.
	l.must(http.StatusOK, "POST", "/machines/"+newID+"/?op=commission", nil, nil)
	l.waitStatus(newID, StatusReady)
}

func TestAbortDeploying(t *testing.T) {
	l := newSimLab(t, nil)
	id := l.ready(1, "abort-deploy")
	l.setDuration(func(d *Durations) { d.Deploy = time.Hour })
	l.must(http.StatusOK, "POST", "/machines/?op=allocate", url.Values{"system_id": {id}, "agent_name": {"slipway"}}, nil)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", nil, nil)
	l.wantStill(t, "deploy", id, StatusDeploying)
	var m map[string]any
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=abort", nil, &m)
	if st := int(m["status"].(float64)); st != StatusAllocated {
		t.Fatalf("abort of a deployment: %s, want Allocated", StatusName(st))
	}
	if m["owner"] != "admin" {
		t.Errorf("an aborted deployment dropped the owner: %v", m["owner"])
	}
	// Deploying again works.
	l.setDuration(func(d *Durations) { d.Deploy = 5 * time.Second })
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", nil, nil)
	l.waitStatus(id, StatusDeployed)
}

func TestAbortDiskErasing(t *testing.T) {
	l := newSimLab(t, nil)
	id := l.deployed(1, "erase")
	l.setDuration(func(d *Durations) { d.Erase = time.Hour })
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=release", url.Values{"erase": {"true"}}, nil)
	l.waitStatus(id, StatusDiskErasing)
	var m map[string]any
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=abort", nil, &m)
	if st := int(m["status"].(float64)); st != StatusFailedDiskErasing {
		t.Errorf("abort of disk erasing: %s, want Failed disk erasing", StatusName(st))
	}
}

func TestMarkBrokenMarkFixed(t *testing.T) {
	l := newSimLab(t, nil)
	cases := []struct {
		name  string
		id    string
		fixed int
	}{
		{"Deployed", l.deployed(1, "deployed"), StatusDeployed},
	}
	// MAAS lets only the owner mark a machine broken: 403 for an unowned
	// one, admin or not.
	for _, id := range []string{l.ready(2, "ready"), l.enlist(3, "new")} {
		before := l.statusOf(id)
		if r := l.do("POST", "/machines/"+id+"/?op=mark_broken", nil); r.code != http.StatusForbidden {
			t.Errorf("mark_broken of an unowned %s machine: %s, want 403", StatusName(before), r)
		}
		l.wantStill(t, "a refused mark_broken", id, before)
	}
	alloc := l.ready(4, "allocated")
	l.must(http.StatusOK, "POST", "/machines/?op=allocate", url.Values{"system_id": {alloc}}, nil)
	cases = append(cases, struct {
		name  string
		id    string
		fixed int
	}{"Allocated", alloc, StatusReady})

	for _, c := range cases {
		var m map[string]any
		l.must(http.StatusOK, "POST", "/machines/"+c.id+"/?op=mark_broken", url.Values{"comment": {"bad DIMM"}}, &m)
		if st := int(m["status"].(float64)); st != StatusBroken || m["status_message"] != "bad DIMM" {
			t.Errorf("mark_broken of a %s machine: %s %v", c.name, StatusName(st), m["status_message"])
		}
		if c.name == "Allocated" {
			// Powered off, it was released at once: no owner any more, so
			// marking it broken again is the 403 of an unowned machine.
			if m["owner"] != nil || len(m["owner_data"].(map[string]any)) != 0 {
				t.Errorf("mark_broken of a powered-off Allocated machine kept owner %v, owner data %v", m["owner"], m["owner_data"])
			}
		} else {
			// Marking its own broken machine broken again changes nothing.
			l.must(http.StatusOK, "POST", "/machines/"+c.id+"/?op=mark_broken", nil, nil)
		}
		l.must(http.StatusOK, "POST", "/machines/"+c.id+"/?op=mark_fixed", nil, &m)
		if st := int(m["status"].(float64)); st != c.fixed {
			t.Errorf("mark_fixed of a machine that was %s: %s, want %s", c.name, StatusName(st), StatusName(c.fixed))
		}
	}
}

func TestMarkBrokenDuringDeploymentStopsIt(t *testing.T) {
	l := newSimLab(t, nil)
	id := l.ready(1, "x")
	l.setDuration(func(d *Durations) { d.Deploy = 200 * time.Second }) // 200 ms
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", nil, nil)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=mark_broken", nil, nil)
	time.Sleep(300 * time.Millisecond)
	l.wantStill(t, "the deployment of a machine marked broken", id, StatusBroken)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=mark_fixed", nil, nil)
	l.wantStill(t, "mark_fixed of a machine broken while deploying", id, StatusReady)
}

func TestReleaseFromEveryReleasableState(t *testing.T) {
	l := newSimLab(t, nil)
	alloc := l.ready(1, "alloc")
	l.must(http.StatusOK, "POST", "/machines/?op=allocate", url.Values{"system_id": {alloc}}, nil)
	broken := l.deployed(2, "broken")
	l.must(http.StatusOK, "POST", "/machines/"+broken+"/?op=mark_broken", nil, nil)
	for _, id := range []string{alloc, broken, l.deployed(3, "dep")} {
		l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=release", nil, nil)
		m := l.waitStatus(id, StatusReady)
		if m["owner"] != nil || m["power_state"] != "off" {
			t.Errorf("released machine: owner %v power %v", m["owner"], m["power_state"])
		}
	}
}

// MAAS fails a deployment that does not finish within node_timeout.
func TestNodeTimeoutHangDeploy(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Machines: map[string]MachineFaults{"hangs": {HangDeploy: true}}}
		o.Durations.NodeTimeout = 300 * time.Second // 300 ms
	})
	id := l.ready(1, "hangs")
	ok := l.ready(2, "fine")
	start := time.Now()
	for _, m := range []string{id, ok} {
		l.must(http.StatusOK, "POST", "/machines/"+m+"/?op=deploy", nil, nil)
	}
	l.waitStatus(ok, StatusDeployed)
	l.wantStill(t, "a hung deployment before node_timeout", id, StatusDeploying)
	m := l.waitStatus(id, StatusFailedDeployment)
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Errorf("the deployment failed after %v, before node_timeout (300ms)", el)
	}
	if msg, _ := m["status_message"].(string); !strings.Contains(msg, "timed out") {
		t.Errorf("status_message %q does not say it timed out", msg)
	}
	var evs struct {
		Events []map[string]any `json:"events"`
	}
	l.must(http.StatusOK, "GET", "/events/?op=query", url.Values{"id": {id}}, &evs)
	if len(evs.Events) == 0 || evs.Events[0]["type"] != "Failed deployment" || evs.Events[0]["level"] != "ERROR" {
		t.Errorf("latest event %v, want an ERROR Failed deployment", evs.Events)
	}
	// Failed deployment can be released (and redeployed).
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=release", nil, nil)
	l.waitStatus(id, StatusReady)
}
