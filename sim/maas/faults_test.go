package maas

// Fault injection: reproducible from a seed, with Retry-After on 503s and
// latency, per op; and per-machine failure scripts.

import (
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/canonical/gomaasclient/entity"
	"github.com/juju/gomaasapi/v2"
)

// injectedStatuses sends n reads of /machines/ to a simulator whose reads
// fail at random from seed, and returns the status codes.
func injectedStatuses(t *testing.T, seed int64, n int) []int {
	t.Helper()
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Seed: seed, Ops: map[string]OpFaults{
			"GET read": {Error500: 0.1, Error503: 0.1, Error409: 0.1},
		}}
	})
	out := make([]int, n)
	for i := range out {
		out[i] = l.do("GET", "/machines/", nil).code
	}
	return out
}

func TestFaultsReproducibleFromSeed(t *testing.T) {
	a := injectedStatuses(t, 42, 200)
	b := injectedStatuses(t, 42, 200)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("the same seed injected different faults:\n%v\n%v", a, b)
	}
	c := injectedStatuses(t, 43, 200)
	if reflect.DeepEqual(a, c) {
		t.Fatalf("seeds 42 and 43 injected the same faults")
	}
	counts := map[int]int{}
	for _, code := range a {
		counts[code]++
	}
	for _, code := range []int{200, 409, 500, 503} {
		if counts[code] == 0 {
			t.Errorf("no %d among 200 requests: %v", code, counts)
		}
	}
	if len(counts) != 4 {
		t.Errorf("unexpected statuses: %v", counts)
	}
	// 30% of 200 requests fail on average; allow generous slack.
	if failed := 200 - counts[200]; failed < 30 || failed > 90 {
		t.Errorf("%d of 200 requests failed, want about 60", failed)
	}
}

func TestFaultsOnlyTheConfiguredOps(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Seed: 1, Ops: map[string]OpFaults{"POST deploy": {Error500: 1}}}
	})
	id := l.ready(1, "x") // enlist, commission and reads are not faulted
	r := l.do("POST", "/machines/"+id+"/?op=deploy", nil)
	if r.code != http.StatusInternalServerError || !strings.Contains(string(r.body), "injected") {
		t.Errorf("deploy: %s, want an injected 500", r)
	}
	l.wantStill(t, "an injected deploy failure", id, StatusReady)

	// "*" covers every request without an entry of its own.
	l2 := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Seed: 1, Ops: map[string]OpFaults{"*": {Error409: 1}, "GET read": {}}}
	})
	if r := l2.do("GET", "/machines/", nil); r.code != http.StatusOK {
		t.Errorf("a read with its own (empty) entry: %s", r)
	}
	if r := l2.do("POST", "/machines/?op=allocate", nil); r.code != http.StatusConflict || !strings.Contains(string(r.body), "Injected") {
		t.Errorf("an allocate under \"*\": %s, want an injected 409", r)
	}
}

func TestFaults503RetryAfter(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Ops: map[string]OpFaults{
			"GET read":   {Error503: 1, RetryAfter: 7},
			"GET whoami": {Error503: 1},
		}}
	})
	r := l.do("GET", "/machines/", nil)
	if r.code != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "7" {
		t.Errorf("injected 503: %d Retry-After %q, want 503 and 7", r.code, r.header.Get("Retry-After"))
	}
	r = l.do("GET", "/users/?op=whoami", nil)
	if r.code != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "1" {
		t.Errorf("injected 503 without RetryAfter: %d Retry-After %q, want 503 and 1", r.code, r.header.Get("Retry-After"))
	}
}

// gomaasapi retries a 503 that carries Retry-After, after waiting that
// long: the injected 503 must be retryable the same way.
func TestFaults503RetriedByGomaasapi(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a one-second Retry-After")
	}
	// A seed whose draws go ok (NewController's read of /version/), fail
	// (the read below), ok (its retry).
	seed := int64(0)
	for ; ; seed++ {
		r := rand.New(rand.NewSource(seed))
		if r.Float64() >= 0.5 && r.Float64() < 0.5 && r.Float64() >= 0.5 {
			break
		}
	}
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Seed: seed, Ops: map[string]OpFaults{"GET read": {Error503: 0.5, RetryAfter: 1}}}
	})
	c := l.gomaasapiController()
	id := l.enlist(1, "retry") // a POST: not faulted
	start := time.Now()
	ms, err := c.Machines(gomaasapi.MachinesArgs{SystemIDs: []string{id}})
	if err != nil || len(ms) != 1 {
		t.Fatalf("Machines through an injected 503: %v, %v", ms, err)
	}
	if el := time.Since(start); el < time.Second {
		t.Errorf("gomaasapi retried after %v, before the Retry-After second", el)
	}
	snap := l.s.Stats().Snapshot()
	if snap.Statuses[http.StatusServiceUnavailable] != 1 {
		t.Errorf("statuses %v, want exactly one 503", snap.Statuses)
	}
}

func TestFaultsLatency(t *testing.T) {
	const lat = 40 * time.Millisecond
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Ops: map[string]OpFaults{"GET read": {Latency: lat}}}
	})
	for i := 0; i < 3; i++ {
		start := time.Now()
		if r := l.do("GET", "/machines/", nil); r.code != http.StatusOK {
			t.Fatalf("read: %s", r)
		}
		if el := time.Since(start); el < lat {
			t.Errorf("read took %v, want at least the injected %v", el, lat)
		}
	}
	// Latency comes with injected errors too.
	l2 := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Ops: map[string]OpFaults{"GET read": {Latency: lat, Error500: 1}}}
	})
	start := time.Now()
	if r := l2.do("GET", "/machines/", nil); r.code != http.StatusInternalServerError {
		t.Fatalf("read: %s, want 500", r)
	}
	if el := time.Since(start); el < lat {
		t.Errorf("a failing read took %v, want at least %v", el, lat)
	}
}

func TestFaultsLatencyCancelledWithTheRequest(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Ops: map[string]OpFaults{"GET read": {Latency: time.Hour}}}
	})
	cl := l.hs.Client()
	cl.Timeout = 50 * time.Millisecond
	req, _ := http.NewRequest("GET", l.hs.URL+APIPrefix+"/machines/", nil)
	req.Header.Set("Authorization", oauthHeader(labCreds))
	start := time.Now()
	if _, err := cl.Do(req); err == nil {
		t.Fatal("a request delayed an hour answered")
	}
	// httptest's Close waits for the handler: it must have returned.
	done := make(chan struct{})
	go func() { l.hs.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler kept sleeping after the client went away")
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %v", el)
	}
}

func TestFaultFailCommissioning(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Machines: map[string]MachineFaults{"flaky": {FailCommissioning: 2}}}
	})
	id := l.enlist(1, "flaky")
	for attempt := 1; attempt <= 2; attempt++ {
		l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=commission", nil, nil)
		m := l.waitStatus(id, StatusFailedCommissioning)
		if msg, _ := m["status_message"].(string); !strings.Contains(msg, "Failed commissioning") {
			t.Errorf("attempt %d: status_message %q", attempt, msg)
		}
		if m["power_state"] != "off" {
			t.Errorf("attempt %d: a failed commissioning left power %v", attempt, m["power_state"])
		}
	}
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=commission", nil, nil)
	m := l.waitStatus(id, StatusReady)
	if m["cpu_count"].(float64) != 16 {
		t.Errorf("the successful commissioning did not discover the hardware: %v CPUs", m["cpu_count"])
	}
	// Later commissionings succeed.
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=commission", nil, nil)
	l.waitStatus(id, StatusReady)

	// Machines without a script are unaffected.
	other := l.enlist(2, "steady")
	l.must(http.StatusOK, "POST", "/machines/"+other+"/?op=commission", nil, nil)
	l.waitStatus(other, StatusReady)
}

func TestFaultFailDeploy(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Machines: map[string]MachineFaults{"flaky": {FailDeploy: 2}}}
	})
	id := l.ready(1, "flaky")
	l.must(http.StatusOK, "POST", "/machines/?op=allocate", url.Values{"system_id": {id}}, nil)
	for attempt := 1; attempt <= 2; attempt++ {
		l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", nil, nil)
		m := l.waitStatus(id, StatusFailedDeployment)
		if msg, _ := m["status_message"].(string); !strings.Contains(msg, "Failed deployment") {
			t.Errorf("attempt %d: status_message %q", attempt, msg)
		}
	}
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", nil, nil)
	l.waitStatus(id, StatusDeployed)

	// The script is played out: the next deployment succeeds first time.
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=release", nil, nil)
	l.waitStatus(id, StatusReady)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", nil, nil)
	l.waitStatus(id, StatusDeployed)
}

func TestFaultFailDeployThroughGomaasclient(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Machines: map[string]MachineFaults{"tf-flaky": {FailDeploy: 1}}}
	})
	gc := l.gomaasclient()
	id := l.ready(1, "tf-flaky")
	if _, err := gc.Machine.Deploy(id, &entity.MachineDeployParams{DistroSeries: "jammy"}); err != nil {
		t.Fatal(err)
	}
	failed := waitGomaasclient(t, gc, id, 11) // Failed deployment
	if failed.StatusName != "Failed deployment" || failed.StatusMessage == "" {
		t.Errorf("failed deployment: %q %q", failed.StatusName, failed.StatusMessage)
	}
	if _, err := gc.Machine.Deploy(id, &entity.MachineDeployParams{DistroSeries: "jammy"}); err != nil {
		t.Fatalf("redeploy from Failed deployment: %v", err)
	}
	waitGomaasclient(t, gc, id, 6) // Deployed
}

func TestFaultBMCUnreachable(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.Faults = &Faults{Machines: map[string]MachineFaults{"dead-bmc": {BMCUnreachable: true}}}
	})
	id := l.enlist(1, "dead-bmc")
	ok := l.enlist(2, "good-bmc")
	for _, op := range []struct{ method, op string }{{"POST", "power_on"}, {"POST", "power_off"}, {"GET", "query_power_state"}} {
		r := l.do(op.method, "/machines/"+id+"/?op="+op.op, nil)
		if r.code != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "BMC") {
			t.Errorf("%s with an unreachable BMC: %s, want 503", op.op, r)
		}
		if r := l.do(op.method, "/machines/"+ok+"/?op="+op.op, nil); r.code != http.StatusOK {
			t.Errorf("%s with a good BMC: %s", op.op, r)
		}
	}
	if m := l.machine(id); m["power_state"] != "error" {
		t.Errorf("power_state %v after failed power actions, want error", m["power_state"])
	}

	gc := l.gomaasclient()
	_, err := gc.Machine.PowerOn(id, &entity.MachinePowerOnParams{})
	wantServerError(t, "gomaasclient PowerOn", err, http.StatusServiceUnavailable, "BMC")
	_, err = gc.Machine.GetPowerState(id)
	wantServerError(t, "gomaasclient GetPowerState", err, http.StatusServiceUnavailable)
	if _, err := gc.Machine.PowerOn(ok, &entity.MachinePowerOnParams{}); err != nil {
		t.Errorf("PowerOn with a good BMC: %v", err)
	}
}

func TestLoadFaults(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "faults.json")
	if err := os.WriteFile(good, []byte(`{"seed": 9,
		"ops": {"POST deploy": {"error503": 0.25, "retryAfter": 3, "latency": 5000000}},
		"machines": {"node-1": {"failCommissioning": 1, "bmcUnreachable": true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := LoadFaults(good)
	if err != nil {
		t.Fatal(err)
	}
	want := &Faults{Seed: 9, Ops: map[string]OpFaults{"POST deploy": {Error503: 0.25, RetryAfter: 3, Latency: 5 * time.Millisecond}},
		Machines: map[string]MachineFaults{"node-1": {FailCommissioning: 1, BMCUnreachable: true}}}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("LoadFaults = %+v, want %+v", f, want)
	}
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`{"seed": 1, "opps": {}}`), 0o600)
	if _, err := LoadFaults(bad); err == nil || !strings.Contains(err.Error(), "opps") {
		t.Errorf("an unknown key: %v, want an error naming it", err)
	}
	if _, err := LoadFaults(filepath.Join(dir, "missing.json")); err == nil {
		t.Errorf("a missing file loaded")
	}
}

// Faults are drawn after authentication: a rejected request consumes no
// draw, so the sequence a client sees does not depend on stray requests.
func TestFaultsNotDrawnForRejectedRequests(t *testing.T) {
	seq := func(strays int) []int {
		l := newSimLab(t, func(o *Options) {
			o.Faults = &Faults{Seed: 5, Ops: map[string]OpFaults{"GET read": {Error500: 0.5}}}
		})
		for i := 0; i < strays; i++ {
			resp, err := http.Get(l.hs.URL + APIPrefix + "/machines/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		var out []int
		for i := 0; i < 30; i++ {
			out = append(out, l.do("GET", "/machines/", url.Values{}).code)
		}
		return out
	}
	if a, b := seq(0), seq(5); !reflect.DeepEqual(a, b) {
		t.Errorf("unauthenticated requests shifted the fault sequence:\n%v\n%v", a, b)
	}
}

// TestParseFaultsRefuses: each malformed machine fault is refused, naming
// the machine and the field.
func TestParseFaultsRefuses(t *testing.T) {
	long := strings.Repeat("x", maxFaultString+1)
	for _, c := range []struct{ json, want string }{
		{`{"machines":{"n1":{"failDeploy":-1}}}`, `machines["n1"]: counts must not be negative`},
		{`{"machines":{"n1":{"missingGPUs":-2}}}`, `machines["n1"]: counts must not be negative`},
		{`{"machines":{"n1":{"nicSpeedMbps":{"eth0":0}}}}`, `machines["n1"].nicSpeedMbps["eth0"]`},
		{`{"machines":{"n1":{"nicSpeedMbps":{"":1000}}}}`, `machines["n1"].nicSpeedMbps[""]`},
		{`{"machines":{"n1":{"swapCables":["a","a"]}}}`, `machines["n1"].swapCables`},
		{`{"machines":{"n1":{"swapCables":["a"]}}}`, `machines["n1"].swapCables`},
		{`{"machines":{"n1":{"swapCables":["a","` + long + `"]}}}`, `machines["n1"].swapCables`},
		{`{"machines":{"n1":{"firmware":{"bios":"` + long + `"}}}}`, `machines["n1"].firmware`},
		{`{"ops":{"deploy":{"error500":1.5}}}`, `ops["deploy"]: a rate must be in [0, 1]`},
		{`{"uploadStall":{"atBytes":1,"times":1}}`, `uploadStall: `},
		{`{"uploadStall":{"atBytes":-1,"times":1,"for":1}}`, `uploadStall: `},
	} {
		if _, err := ParseFaults([]byte(c.json)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseFaults(%.80s): %v, want an error with %q", c.json, err, c.want)
		}
	}
	ok := `{"machines":{"n1":{"failDeploy":1,"nicSpeedMbps":{"eth0":25000},"swapCables":["eth0","eth1"],"firmware":{"bios":"2.1"}}},` +
		`"uploadStall":{"atBytes":4194304,"times":1,"for":60000000000}}`
	if _, err := ParseFaults([]byte(ok)); err != nil {
		t.Errorf("ParseFaults(%s): %v", ok, err)
	}
}

// A machine powered manually: MAAS's manual power driver cannot be
// queried, so query_power_state answers the state "unknown" (and records
// it), and power actions do nothing, as MAAS does; the lab's BMCs are not
// asked (before: 503).
func TestManualPowerType(t *testing.T) {
	l := newSimLab(t, func(o *Options) { o.Power = bmcsByAddress{} })
	id := l.enlist(1, "by-hand")
	l.must(http.StatusOK, "PUT", "/machines/"+id+"/", url.Values{"power_type": {"manual"}}, nil)
	var st map[string]string
	l.must(http.StatusOK, "GET", "/machines/"+id+"/?op=query_power_state", nil, &st)
	if st["state"] != "unknown" {
		t.Fatalf("query_power_state of a manual machine: %v, want unknown", st)
	}
	for _, op := range []string{"power_on", "power_off"} {
		if r := l.do("POST", "/machines/"+id+"/?op="+op, nil); r.code != http.StatusOK {
			t.Errorf("%s of a manual machine: %s", op, r)
		}
	}
	if m := l.machine(id); m["power_state"] != "unknown" {
		t.Errorf("power_state %v, want unknown", m["power_state"])
	}
}

// bmcsByAddress is a power driver that, like the lab's, reaches the BMCs
// its power parameters name: none here, so every call fails as an
// unreachable BMC does.
type bmcsByAddress struct{}

func (bmcsByAddress) Power(_ context.Context, p PowerParams, _ string) (string, error) {
	return "error", fmt.Errorf("no BMC answers at %q", p["power_address"])
}

func (bmcsByAddress) SetBootDevice(_ context.Context, p PowerParams, _ string) error {
	return fmt.Errorf("no BMC answers at %q", p["power_address"])
}
