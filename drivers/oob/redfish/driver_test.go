package redfish_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	"github.com/slipway-dev/slipway/drivers/oob/redfish"
	"github.com/slipway-dev/slipway/internal/redfishmock"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

const password = "conformance-redfish-pw-42"

// lab starts a simulated Redfish service and a driver with the lab's
// timings, and returns the BMC that reaches it through the lab CA.
func lab(t *testing.T, o simrf.Options) (*redfish.Driver, drivers.BMC, *simrf.Service, *simrf.BareMachine) {
	t.Helper()
	ca, err := simrf.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca.PEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	o.Addr, o.Username, o.Password, o.CA = "127.0.0.1:0", "admin", password, ca
	m := &simrf.BareMachine{}
	s, err := simrf.Start(context.Background(), m, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	d, err := redfish.NewDriver(drivers.Config{Settings: map[string]string{
		redfish.SettingTimeout: "5s", redfish.SettingGracefulWait: "1s", redfish.SettingPollInterval: "50ms"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	a := s.Addr()
	return d, drivers.BMC{Node: "n1", Address: a.IP.String(), Port: a.Port, Username: "admin",
		Password: drivers.NewSecret(password), CAFile: caFile}, s, m
}

// TestConformance: the shared OOB conformance suite against the lab's
// Redfish service.
func TestConformance(t *testing.T) {
	driverstest.RunOOB(t, func(t *testing.T) (drivers.OOB, drivers.BMC) {
		d, b, _, _ := lab(t, simrf.Options{})
		return d, b
	})
}

// TestPowerOffGracefulThenForced: a graceful shutdown the OS ignores is
// forced after gracefulWait.
func TestPowerOffGracefulThenForced(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		d, b, s, _ := lab(t, simrf.Options{IgnoreGraceful: ignore})
		ctx := t.Context()
		if r, err := d.PowerOn(ctx, b); err != nil || r.Status != drivers.StatusDone {
			t.Fatalf("PowerOn: %+v %v", r, err)
		}
		r, err := d.PowerOff(ctx, b)
		if err != nil || r.Status != drivers.StatusDone {
			t.Fatalf("PowerOff (OS ignores graceful: %v): %+v %v", ignore, r, err)
		}
		forced := s.Stats().Resets["ForceOff"]
		if ignore != (forced == 1) || !strings.Contains(r.Message, map[bool]string{false: "gracefully", true: "forced"}[ignore]) {
			t.Errorf("OS ignores graceful %v: %d ForceOff, %q", ignore, forced, r.Message)
		}
	}
}

// TestBootOverrideAndSessionReuse: the override is read back, one login
// serves many calls, and a session the BMC dropped is replaced.
func TestBootOverrideAndSessionReuse(t *testing.T) {
	d, b, s, m := lab(t, simrf.Options{SessionTimeout: 300 * time.Millisecond})
	ctx := t.Context()
	for _, dev := range []string{"pxe", "disk", "http"} {
		r, err := d.SetBootDevice(ctx, b, drivers.BootDevice{Device: dev, EFI: true})
		if err != nil || r.Status != drivers.StatusDone {
			t.Fatalf("SetBootDevice %s: %+v %v", dev, r, err)
		}
		if got, _, _ := m.BootDevice(); got != dev {
			t.Fatalf("the machine's override is %s after setting %s", got, dev)
		}
	}
	if n := s.Stats().SessionsOpened; n != 1 {
		t.Fatalf("%d logins for 3 calls", n)
	}
	time.Sleep(400 * time.Millisecond) // the BMC ends the idle session
	if _, err := d.PowerStatus(ctx, b); err != nil {
		t.Fatalf("after the BMC dropped the session: %v", err)
	}
	if n := s.Stats().SessionsOpened; n != 2 {
		t.Fatalf("%d logins: want a second after the first expired", n)
	}
}

// TestBIOSApply: settings that differ are staged with their attributes'
// types and take effect at the next reset; then they are in effect.
func TestBIOSApply(t *testing.T) {
	d, b, s, _ := lab(t, simrf.Options{})
	ctx := t.Context()
	want := map[string]string{"ProcHyperthreading": "Disabled", "ProcCoreDisable": "2", "BootMode": "Uefi"}
	r, err := d.ApplyBIOS(ctx, b, want)
	if err != nil || r.Status != drivers.StatusInProgress || !strings.Contains(r.Message, "ProcCoreDisable, ProcHyperthreading") {
		t.Fatalf("ApplyBIOS: %+v %v", r, err)
	}
	if _, pending := s.BIOS(); pending["ProcCoreDisable"] != float64(2) {
		t.Fatalf("pending %v: the number was not staged as a number", pending)
	}
	if r, err := d.PowerOn(ctx, b); err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("PowerOn: %+v %v", r, err)
	}
	if r, err := d.ApplyBIOS(ctx, b, want); err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("ApplyBIOS after the reset: %+v %v", r, err)
	}
	if r, _ := d.ApplyBIOS(ctx, b, map[string]string{"NoSuch": "x"}); r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "no attribute NoSuch") {
		t.Fatalf("an unknown attribute: %+v", r)
	}
	if r, _ := d.ApplyBIOS(ctx, b, map[string]string{"ProcCoreDisable": "many"}); r.Status != drivers.StatusFailed {
		t.Fatalf("a word for a number: %+v", r)
	}
}

// TestTrust: a pinned fingerprint is accepted, a wrong one and an
// unknown CA are refused; insecure skips the check.
func TestTrust(t *testing.T) {
	d, b, s, _ := lab(t, simrf.Options{})
	ctx := t.Context()
	pinned := b
	pinned.CAFile, pinned.Fingerprint = "", s.Fingerprint()
	if _, err := d.PowerStatus(ctx, pinned); err != nil {
		t.Fatalf("pinned fingerprint: %v", err)
	}
	wrong := pinned
	wrong.Fingerprint = strings.Repeat("ab", 32)
	if _, err := d.PowerStatus(ctx, wrong); err == nil || !strings.Contains(err.Error(), "not the pinned oob.fingerprint") {
		t.Fatalf("wrong fingerprint: %v", err)
	}
	noCA := b
	noCA.CAFile = ""
	if _, err := d.PowerStatus(ctx, noCA); err == nil {
		t.Fatal("the lab's certificate was trusted without its CA")
	}
	noCA.Insecure = true
	if _, err := d.PowerStatus(ctx, noCA); err != nil {
		t.Fatalf("insecure: %v", err)
	}
}

// TestBusyRetried: 503 answers are retried after their Retry-After.
func TestBusyRetried(t *testing.T) {
	d, b, s, _ := lab(t, simrf.Options{})
	s.SetBusy(2)
	if _, err := d.PowerStatus(t.Context(), b); err != nil {
		t.Fatalf("after two 503s: %v", err)
	}
	if s.Stats().Busy != 2 {
		t.Fatalf("busy answers %d", s.Stats().Busy)
	}
}

// TestDMTFMockupAsServed: the driver reads DMTF's public-rackmount1
// documents as DMTF publishes them (served raw, no lab state): the
// system's maker, model, serial, UUID and power, the BMC's firmware, the
// BIOS attributes, the firmware inventory.
func TestDMTFMockupAsServed(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/SessionService/Sessions") {
			w.Header().Set("X-Auth-Token", "mock-token")
			w.Header().Set("Location", "/redfish/v1/SessionService/Sessions/1234567890ABCDEF")
			w.WriteHeader(http.StatusCreated)
			return
		}
		b, ok := redfishmock.Get(r.URL.Path)
		if !ok || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	host, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "https://"), ":")
	p, _ := strconv.Atoi(port)
	bmc := drivers.BMC{Node: "n1", Address: host, Port: p, Username: "u", Password: drivers.NewSecret(password), Insecure: true}
	d, err := redfish.NewDriver(drivers.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	info, err := d.Probe(ctx, bmc)
	if err != nil || !info.Authorized || info.Vendor != "Contoso" || info.GUID != "38947555-7742-3448-3784-823347823834" ||
		info.Firmware != "1.45.455b66-rev4" || !strings.Contains(info.Description, "model 3500, serial 437XR1138R2") {
		t.Fatalf("Probe: %+v %v", info, err)
	}
	if ps, err := d.PowerStatus(ctx, bmc); err != nil || ps != drivers.PowerOn {
		t.Fatalf("PowerStatus: %s %v", ps, err)
	}
	attrs, err := d.BIOSAttributes(ctx, bmc)
	if err != nil || attrs["ProcTurboMode"] != "Enabled" || attrs["ProcCoreDisable"] != "0" {
		t.Fatalf("BIOS: %v %v", attrs, err)
	}
	fw, err := d.FirmwareInventory(ctx, bmc)
	if err != nil || len(fw) < 2 {
		t.Fatalf("firmware: %+v %v", fw, err)
	}
	// The versions the engine completes an inventory with (OOBFirmware).
	if v, err := d.Firmware(ctx, bmc); err != nil || v.BMCVersion != "1.45.455b66-rev4" || v.BIOSVersion == "" {
		t.Fatalf("Firmware: %+v %v", v, err)
	}
}
