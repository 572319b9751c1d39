package maas

// Rescue mode, hardware testing, erasing releases and delete, with
// MAAS's state rules (recovery.go): what each op allows, where it lands,
// and how MAAS refuses the rest.

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// op runs POST op on a machine.
func (l *simLab) op(id, op string, form url.Values) rawResp {
	l.tb.Helper()
	return l.do("POST", "/machines/"+id+"/?op="+op, form)
}

// latestEvent is the type and description of a machine's newest event.
func (l *simLab) latestEvent(id string) (string, string) {
	l.tb.Helper()
	var evs struct {
		Events []map[string]any `json:"events"`
	}
	l.must(http.StatusOK, "GET", "/events/?op=query", url.Values{"id": {id}}, &evs)
	if len(evs.Events) == 0 {
		return "", ""
	}
	typ, _ := evs.Events[0]["type"].(string)
	desc, _ := evs.Events[0]["description"].(string)
	return typ, desc
}

func TestRescueModeFromDeployed(t *testing.T) {
	l := newSimLab(t, nil)
	id := l.deployed(1, "dep")
	l.setDuration(func(d *Durations) { d.Rescue = time.Hour })
	var m map[string]any
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=rescue_mode", nil, &m)
	if st := int(m["status"].(float64)); st != StatusEnteringRescueMode || m["status_name"] != "Entering rescue mode" {
		t.Fatalf("rescue_mode: %s, want Entering rescue mode", StatusName(st))
	}
	// Asking again while entering is MAAS's same-status transition: fine.
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=rescue_mode", nil, nil)
	l.wantStill(t, "a second rescue_mode", id, StatusEnteringRescueMode)
	// Abort does not apply to rescue mode (exit_rescue_mode does).
	wantConflict(t, "abort while entering rescue mode", l.op(id, "abort", nil),
		"Cannot abort in current state: node "+id+" is in state Entering rescue mode.")

	l.setDuration(func(d *Durations) { d.Rescue = 5 * time.Second })
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=exit_rescue_mode", nil, nil) // from Entering: allowed
	l.waitStatus(id, StatusDeployed)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=rescue_mode", nil, nil)
	m = l.waitStatus(id, StatusRescueMode)
	if m["owner"] != "admin" || m["power_state"] != "on" {
		t.Errorf("in rescue mode: owner %v power %v", m["owner"], m["power_state"])
	}
	// In rescue mode, rescue_mode again is no transition MAAS allows.
	wantConflict(t, "rescue_mode in Rescue mode", l.op(id, "rescue_mode", nil), "Invalid transition: Rescue mode -> Entering rescue mode.")
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=exit_rescue_mode", nil, &m)
	if st := int(m["status"].(float64)); st != StatusExitingRescueMode {
		t.Errorf("exit_rescue_mode: %s, want Exiting rescue mode", StatusName(st))
	}
	m = l.waitStatus(id, StatusDeployed)
	if m["owner"] != "admin" || m["power_state"] != "on" || m["osystem"] != "ubuntu" {
		t.Errorf("back from rescue mode: owner %v power %v os %v, want admin, on, ubuntu", m["owner"], m["power_state"], m["osystem"])
	}
	if typ, _ := l.latestEvent(id); typ != "Exited rescue mode" {
		t.Errorf("latest event %q, want Exited rescue mode", typ)
	}
}

func TestRescueModeFromReady(t *testing.T) {
	l := newSimLab(t, nil)
	id := l.ready(1, "ready")
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=rescue_mode", nil, nil)
	l.waitStatus(id, StatusRescueMode)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=exit_rescue_mode", nil, nil)
	m := l.waitStatus(id, StatusReady)
	if m["owner"] != nil || m["power_state"] != "off" {
		t.Errorf("back from rescue mode to Ready: owner %v power %v, want none and off", m["owner"], m["power_state"])
	}
}

func TestRescueModeRefused(t *testing.T) {
	l := newSimLab(t, nil)
	ready := l.ready(1, "ready")
	wantConflict(t, "exit_rescue_mode of a Ready machine", l.op(ready, "exit_rescue_mode", nil), "Invalid transition: Ready -> Exiting rescue mode.")
	l.wantStill(t, "a refused exit_rescue_mode", ready, StatusReady)

	l.setDuration(func(d *Durations) { d.Commission = time.Hour })
	comm := l.enlist(2, "commissioning")
	l.must(http.StatusOK, "POST", "/machines/"+comm+"/?op=commission", nil, nil)
	wantConflict(t, "rescue_mode of a Commissioning machine", l.op(comm, "rescue_mode", nil), "Invalid transition: Commissioning -> Entering rescue mode.")
	l.wantStill(t, "a refused rescue_mode", comm, StatusCommissioning)
}

func TestRescueModeFails(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Machines: map[string]MachineFaults{"flaky": {FailRescue: 1}}}
	})
	id := l.ready(1, "flaky")
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=rescue_mode", nil, nil)
	m := l.waitStatus(id, StatusFailedEnteringRescueMode)
	if m["status_name"] != "Failed to enter rescue mode" {
		t.Errorf("status_name %v", m["status_name"])
	}
	if typ, desc := l.latestEvent(id); typ != "Marking node failed" || !strings.Contains(desc, "injected fault") {
		t.Errorf("latest event %q %q", typ, desc)
	}
	// MAAS allows entering again from the failed state; the fault played out.
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=rescue_mode", nil, nil)
	l.waitStatus(id, StatusRescueMode)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=exit_rescue_mode", nil, nil)
	l.waitStatus(id, StatusReady)
}

// An Allocated machine that entered rescue mode gets no power action on
// exit (MAAS powers off only Ready and Broken ones, cycles Deployed
// ones): it stays on and MAAS fails the exit after its timeout.
func TestExitRescueModeFromAllocatedTimesOut(t *testing.T) {
	l := newSimLab(t, nil)
	id := l.ready(1, "alloc")
	l.must(http.StatusOK, "POST", "/machines/?op=allocate", url.Values{"system_id": {id}}, nil)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=rescue_mode", nil, nil)
	l.waitStatus(id, StatusRescueMode)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=exit_rescue_mode", nil, nil)
	m := l.waitStatus(id, StatusFailedExitingRescueMode)
	if m["power_state"] != "on" {
		t.Errorf("power %v, want on (no power action)", m["power_state"])
	}
	// From Failed to exit rescue mode, exit may be asked again.
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=exit_rescue_mode", nil, nil)
	l.wantStill(t, "a second exit_rescue_mode", id, StatusExitingRescueMode)
}

func TestTestingReturnsToEarlierStatus(t *testing.T) {
	l := newSimLab(t, nil)
	ready, dep := l.ready(1, "ready"), l.deployed(2, "dep")
	for _, c := range []struct {
		id   string
		want int
	}{{ready, StatusReady}, {dep, StatusDeployed}} {
		var m map[string]any
		l.must(http.StatusOK, "POST", "/machines/"+c.id+"/?op=test", nil, &m)
		if st := int(m["status"].(float64)); st != StatusTesting {
			t.Errorf("test: %s, want Testing", StatusName(st))
		}
		m = l.waitStatus(c.id, c.want)
		if c.want == StatusDeployed && (m["power_state"] != "on" || m["owner"] != "admin") {
			t.Errorf("tested Deployed machine: power %v owner %v", m["power_state"], m["owner"])
		}
		if c.want == StatusReady && m["power_state"] != "off" {
			t.Errorf("tested Ready machine: power %v", m["power_state"])
		}
	}
	// A Broken machine that passes its tests is Ready (MAAS's
	// NODE_TESTING_RESET_READY_TRANSITIONS), and like any machine that
	// becomes Ready it has no owner any more.
	l.must(http.StatusOK, "POST", "/machines/"+dep+"/?op=mark_broken", nil, nil)
	l.must(http.StatusOK, "POST", "/machines/"+dep+"/?op=test", nil, nil)
	if m := l.waitStatus(dep, StatusReady); m["owner"] != nil {
		t.Errorf("Ready after testing with owner %v", m["owner"])
	}
	// A tested Ready machine loses the owner testing gave it.
	if m := l.machine(ready); m["owner"] != nil {
		t.Errorf("Ready machine after its tests: owner %v", m["owner"])
	}
}

func TestTestingFails(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Machines: map[string]MachineFaults{"bad-dimm": {FailTesting: 1}}}
	})
	id := l.ready(1, "bad-dimm")
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=test", nil, nil)
	m := l.waitStatus(id, StatusFailedTesting)
	if msg, _ := m["status_message"].(string); !strings.Contains(msg, "injected fault") {
		t.Errorf("status_message %q", msg)
	}
	if typ, _ := l.latestEvent(id); typ != "Failed testing" {
		t.Errorf("latest event %q, want Failed testing", typ)
	}
	// Testing again from Failed testing passes now, and resets to Ready.
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=test", nil, nil)
	l.waitStatus(id, StatusReady)
}

func TestTestingRefused(t *testing.T) {
	l := newSimLab(t, nil)
	id := l.ready(1, "x")
	l.setDuration(func(d *Durations) { d.Test = time.Hour; d.Commission = time.Hour })
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=test", nil, nil)
	// TestForm refuses a state the Test action does not list: 400 with a
	// form error, not 409.
	r := l.op(id, "test", nil)
	if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "Test is not available because of the current state of the node.") {
		t.Errorf("test of a Testing machine: %s, want 400", r)
	}
	// A machine never commissioned cannot be tested.
	newID := l.enlist(2, "new")
	if r := l.op(newID, "test", nil); r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "never been commissioned") {
		t.Errorf("test of a New machine: %s, want 400", r)
	}
	l.wantStill(t, "a refused test", newID, StatusNew)
	// Abort stops testing: back to the status before it, powered off.
	var m map[string]any
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=abort", nil, &m)
	if st := int(m["status"].(float64)); st != StatusReady || m["power_state"] != "off" {
		t.Errorf("abort of testing: %s power %v, want Ready and off", StatusName(st), m["power_state"])
	}
	time.Sleep(20 * time.Millisecond)
	l.wantStill(t, "an aborted testing", id, StatusReady)
}

// MAAS 3.4 erases when asked (erase), straight from the release into Disk
// erasing; quick_erase and secure_erase pick how. The lab's phase lengths
// tell which one ran: the others take longer than labWait.
func TestReleaseEraseModes(t *testing.T) {
	l := newSimLab(t, nil)
	const never = 100 * time.Hour // 360 s in the lab
	for _, c := range []struct {
		name string
		form url.Values
		set  func(*Durations)
	}{
		{"quick", url.Values{"erase": {"true"}, "quick_erase": {"true"}}, func(d *Durations) { d.Erase, d.EraseSecure = never, never }},
		{"secure", url.Values{"erase": {"true"}, "secure_erase": {"true"}, "quick_erase": {"true"}}, func(d *Durations) { d.Erase, d.EraseQuick = never, never }},
		{"full", url.Values{"erase": {"true"}}, func(d *Durations) { d.EraseQuick, d.EraseSecure = never, never }},
	} {
		id := l.deployed(1, "erase-"+c.name)
		l.setDuration(func(d *Durations) { *d = *labDurations(); c.set(d) })
		var m map[string]any
		l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=release", c.form, &m)
		if st := int(m["status"].(float64)); st != StatusDiskErasing {
			t.Errorf("%s: release with erase: %s, want Disk erasing", c.name, StatusName(st))
		}
		l.waitStatus(id, StatusReady)
		l.must(http.StatusNoContent, "DELETE", "/machines/"+id+"/", nil, nil)
	}
	// quick_erase without erase erases nothing (MAAS 3.4).
	id := l.deployed(2, "no-erase")
	l.setDuration(func(d *Durations) { *d = *labDurations() })
	var m map[string]any
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=release", url.Values{"quick_erase": {"true"}}, &m)
	if st := int(m["status"].(float64)); st != StatusReleasing {
		t.Errorf("release with quick_erase alone: %s, want Releasing", StatusName(st))
	}
}

func TestReleaseEraseFails(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Machines: map[string]MachineFaults{"worn": {FailErase: 1}}}
	})
	id := l.deployed(1, "worn")
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=release", url.Values{"erase": {"true"}}, nil)
	m := l.waitStatus(id, StatusFailedDiskErasing)
	if m["status_message"] != "Failed to erase disks." {
		t.Errorf("status_message %v", m["status_message"])
	}
	// Failed disk erasing is releasable again; the fault played out.
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=release", url.Values{"erase": {"true"}}, nil)
	l.waitStatus(id, StatusReady)
}

// MAAS deletes a machine in any state (admin only): 204, then 404.
func TestDeleteInAnyState(t *testing.T) {
	l := newSimLab(t, nil)
	id := l.ready(1, "doomed")
	l.setDuration(func(d *Durations) { d.Deploy = time.Hour })
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", nil, nil)
	l.wantStill(t, "deploy", id, StatusDeploying)
	l.must(http.StatusNoContent, "DELETE", "/machines/"+id+"/", nil, nil)
	if r := l.do("GET", "/machines/"+id+"/", nil); r.code != http.StatusNotFound {
		t.Errorf("GET of a deleted machine: %s, want 404", r)
	}
	if r := l.do("DELETE", "/machines/"+id+"/", nil); r.code != http.StatusNotFound {
		t.Errorf("DELETE of a deleted machine: %s, want 404", r)
	}
}

// phaseRecorder hears the phases machines waited (PhaseHooks).
type phaseRecorder struct {
	*hookRecorder
	mu     sync.Mutex
	phases map[string][]string
}

func (p *phaseRecorder) PhaseWaited(id string, _ []string, ph Phase) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phases[id] = append(p.phases[id], ph.Name)
}

func (p *phaseRecorder) of(id string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.phases[id]...)
}

// The recovery phases are phases a machine waits, told to the hooks like
// the others (the lab's per-machine timeline).
func TestRecoveryPhasesInTimeline(t *testing.T) {
	rec := &phaseRecorder{hookRecorder: newHookRecorder(), phases: map[string][]string{}}
	l := newSimLab(t, func(o *Options) { o.Hooks = rec })
	id := l.deployed(1, "phases")
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=rescue_mode", nil, nil)
	l.waitStatus(id, StatusRescueMode)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=exit_rescue_mode", nil, nil)
	l.waitStatus(id, StatusDeployed)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=test", nil, nil)
	l.waitStatus(id, StatusDeployed)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=release", url.Values{"erase": {"true"}, "quick_erase": {"true"}}, nil)
	l.waitStatus(id, StatusReady)
	want := []string{PhaseRescue, PhaseExitRescue, PhaseTest, PhaseErase, PhaseRelease}
	waitFor(t, "the phases told to the hooks", func() bool {
		got := rec.of(id)
		return len(got) >= len(want) && strings.Join(got[len(got)-len(want):], ",") == strings.Join(want, ",")
	})
}
