package maas

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/lab"
)

// Shared helpers of the driver's lab tests.

const (
	testTimeScale = 0.0005
	pollCap       = 20 * time.Millisecond // the RetryAfter the tests honour at most
	pollDeadline  = 20 * time.Second
)

// startLab starts a lab and closes it with the test.
func startLab(t *testing.T, cfg lab.Config) *lab.Lab {
	t.Helper()
	if cfg.TimeScale == 0 {
		cfg.TimeScale = testTimeScale
	}
	l, err := lab.Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// newTestDriver configures a driver against the lab's MAAS; settings
// override the defaults.
func newTestDriver(t *testing.T, l *lab.Lab, settings map[string]string) *Driver {
	t.Helper()
	info := l.Info()
	cfg := drivers.Config{Settings: map[string]string{SettingURL: info.MAASURL, SettingInstance: "slipway-test", SettingTimeout: "5s"},
		Secrets: map[string]drivers.Secret{SecretAPIKey: drivers.NewSecret(info.APIKey)}}
	for k, v := range settings {
		cfg.Settings[k] = v
	}
	d, err := NewDriver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d.c.maxWait = 50 * time.Millisecond // honour Retry-After, briefly
	return d
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// poll calls step until it is no longer InProgress, sleeping as long as
// RetryAfter says (capped), and answers the last Result and how many
// calls it took. An error ends the test.
func poll(t testing.TB, what string, step func(context.Context) (drivers.Result, error)) (drivers.Result, int) {
	t.Helper()
	deadline := time.Now().Add(pollDeadline)
	for n := 1; ; n++ {
		r, err := step(testCtx(t))
		if err != nil {
			t.Fatalf("%s (call %d): %v", what, n, err)
		}
		if !r.Valid() {
			t.Fatalf("%s (call %d): invalid result %+v", what, n, r)
		}
		if r.Status != drivers.StatusInProgress {
			return r, n
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still in progress after %s: %s", what, pollDeadline, r.Message)
		}
		time.Sleep(min(r.RetryAfter, pollCap))
	}
}

// mustDone polls step and ends the test unless it reaches Done.
func mustDone(t testing.TB, what string, step func(context.Context) (drivers.Result, error)) drivers.Result {
	t.Helper()
	r, _ := poll(t, what, step)
	if r.Status != drivers.StatusDone {
		t.Fatalf("%s: %s: %s", what, r.Status, r.Message)
	}
	return r
}

// identify polls IdentifyNode until Done.
func identify(t testing.TB, d *Driver, n drivers.Node) drivers.Machine {
	t.Helper()
	var m drivers.Machine
	mustDone(t, "IdentifyNode "+n.Name, func(ctx context.Context) (r drivers.Result, err error) {
		m, r, err = d.IdentifyNode(ctx, n)
		return r, err
	})
	if m.MachineID == "" {
		t.Fatalf("IdentifyNode %s: Done without a machine ID", n.Name)
	}
	return m
}

// pxeBoot powers a lab machine on from the network, as an operator would
// (it enlists itself when MAAS doesn't know it).
func pxeBoot(m *lab.Machine) {
	m.SetBootDevice("pxe", false, true)
	m.PowerOn()
}

// stateOf reads a machine's MAAS status name.
func stateOf(t *testing.T, d *Driver, id string) string {
	t.Helper()
	m, err := d.fetchMachine(testCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return m.StatusName
}

// count is how many requests the lab's MAAS answered whose stats key
// ("METHOD /path/{template}/?op=...") is key, or starts with it when key
// ends in "*".
func count(l *lab.Lab, key string) int {
	n := 0
	prefix, wild := strings.CutSuffix(key, "*")
	for _, r := range l.MAAS.Stats().Snapshot().Requests {
		if r.Request == key || (wild && strings.HasPrefix(r.Request, prefix)) {
			n += r.Count
		}
	}
	return n
}

// statuses is the lab MAAS's answers by status code.
func statuses(l *lab.Lab) map[int]int { return l.MAAS.Stats().Snapshot().Statuses }

// waitEnlisted waits until MAAS knows a machine with the MAC.
func waitEnlisted(t *testing.T, d *Driver, mac string) {
	t.Helper()
	deadline := time.Now().Add(pollDeadline)
	for {
		var ms []mMachine
		if err := d.c.call(testCtx(t), http.MethodGet, "machines/", "", url.Values{"mac_address": {mac}}, &ms); err != nil {
			t.Fatal(err)
		}
		if len(ms) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("machine with MAC %s never enlisted", mac)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// genericNode is a design-less node for a lab machine: hostname its name,
// BMC address the simulated BMC's (MAAS's power_address), no boot MAC.
func genericNode(m *lab.Machine) drivers.Node {
	return drivers.Node{NodeRef: drivers.NodeRef{Name: m.Name}, Hostname: m.Name,
		BMCAddress: m.BMC.Address + ":" + itoa(m.BMC.Port), Platform: drivers.Platform{Image: "ubuntu/jammy"}}
}

func itoa(n int) string { return strconv.Itoa(n) }

// exampleDesign loads examples/site-yaml.
func exampleDesign(t *testing.T) *design.Design { return designtest.Example(t) }
