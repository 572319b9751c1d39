package redfish

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/redfish"
)

const user, pass = "admin", "lab-redfish-pw-7d1"

func start(t *testing.T, o Options) (*Service, *BareMachine, *CA) {
	t.Helper()
	ca, err := NewCA()
	if err != nil {
		t.Fatal(err)
	}
	o.CA, o.Addr, o.Username, o.Password = ca, "127.0.0.1:0", user, pass
	m := &BareMachine{}
	s, err := Start(t.Context(), m, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, m, ca
}

// connect logs in with gofish, trusting the lab CA only.
func connect(t *testing.T, s *Service, ca *CA, password string) (*gofish.APIClient, error) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM())
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	return gofish.ConnectContext(t.Context(), gofish.ClientConfig{Endpoint: s.URL(), Username: user, Password: password, HTTPClient: hc})
}

func system(t *testing.T, c *gofish.APIClient) *redfish.ComputerSystem {
	t.Helper()
	ss, err := c.Service.Systems()
	if err != nil || len(ss) != 1 {
		t.Fatalf("systems: %v %d", err, len(ss))
	}
	return ss[0]
}

func TestGofishSessionPowerAndBoot(t *testing.T) {
	s, m, ca := start(t, Options{UUID: "3c0a1b2d-0000-4000-8000-000000000001", Serial: "LAB-0001", BMCFirmware: "7.10"})
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	sys := system(t, c)
	if sys.PowerState != redfish.OffPowerState || sys.UUID != "3c0a1b2d-0000-4000-8000-000000000001" || sys.SerialNumber != "LAB-0001" {
		t.Fatalf("system %s: power %s uuid %s serial %s", sys.ID, sys.PowerState, sys.UUID, sys.SerialNumber)
	}
	if err := sys.SetBoot(redfish.Boot{BootSourceOverrideTarget: redfish.PxeBootSourceOverrideTarget,
		BootSourceOverrideEnabled: redfish.OnceBootSourceOverrideEnabled, BootSourceOverrideMode: redfish.UEFIBootSourceOverrideMode}); err != nil {
		t.Fatal(err)
	}
	if sys = system(t, c); sys.Boot.BootSourceOverrideTarget != redfish.PxeBootSourceOverrideTarget || sys.Boot.BootSourceOverrideEnabled != redfish.OnceBootSourceOverrideEnabled {
		t.Fatalf("boot override read back %+v", sys.Boot)
	}
	if err := sys.Reset(redfish.OnResetType); err != nil {
		t.Fatal(err)
	}
	sys = system(t, c)
	if last, _ := m.LastBoot(); sys.PowerState != redfish.OnPowerState || last != "pxe" || sys.Boot.BootSourceOverrideEnabled != redfish.DisabledBootSourceOverrideEnabled {
		t.Fatalf("after On: power %s, booted from %q, override %s (a Once override is cleared by the boot)", sys.PowerState, last, sys.Boot.BootSourceOverrideEnabled)
	}
	if err := sys.Reset(redfish.PowerCycleResetType); err == nil {
		t.Fatal("PowerCycle is not in this system's allowable ResetType values, and was accepted")
	}
	if err := sys.Reset(redfish.ForceOffResetType); err != nil {
		t.Fatal(err)
	}
	c.Logout()
	st := s.Stats()
	if st.SessionsOpened != 1 || st.SessionsClosed != 1 || st.Resets["On"] != 1 || st.Resets["ForceOff"] != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestWrongPasswordAndBasicAuth(t *testing.T) {
	s, _, ca := start(t, Options{})
	if _, err := connect(t, s, ca, "wrong-password"); err == nil {
		t.Fatal("a login with a wrong password succeeded")
	}
	if s.Stats().AuthFailures != 1 {
		t.Fatalf("auth failures %d", s.Stats().AuthFailures)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM())
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	for _, tc := range []struct {
		user, pw string
		want     int
	}{{user, pass, 200}, {user, "nope", 401}, {"", "", 401}} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", s.URL()+systemPath, nil)
		if tc.user != "" {
			req.SetBasicAuth(tc.user, tc.pw)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("basic auth %q: %d, want %d", tc.user, resp.StatusCode, tc.want)
		}
	}
}

func TestBIOSPendingAppliedAtReset(t *testing.T) {
	s, _, ca := start(t, Options{})
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	sys := system(t, c)
	bios, err := sys.Bios()
	if err != nil {
		t.Fatal(err)
	}
	if bios.Attributes["ProcHyperthreading"] != "Enabled" {
		t.Fatalf("attributes %v", bios.Attributes)
	}
	if err := bios.UpdateBiosAttributes(redfish.SettingsAttributes{"ProcHyperthreading": "Disabled", "ProcCoreDisable": 2}); err != nil {
		t.Fatal(err)
	}
	if err := bios.UpdateBiosAttributes(redfish.SettingsAttributes{"NoSuchAttribute": "x"}); err == nil {
		t.Fatal("an unknown attribute was staged")
	}
	cur, pending := s.BIOS()
	if cur["ProcHyperthreading"] != "Enabled" || pending["ProcHyperthreading"] != "Disabled" {
		t.Fatalf("before the reset: current %v, pending %v", cur, pending)
	}
	if err := sys.Reset(redfish.OnResetType); err != nil {
		t.Fatal(err)
	}
	bios, err = system(t, c).Bios()
	if err != nil || bios.Attributes["ProcHyperthreading"] != "Disabled" || bios.Attributes["ProcCoreDisable"] != float64(2) {
		t.Fatalf("after the reset: %v %v", bios.Attributes, err)
	}
}

func TestVirtualMedia(t *testing.T) {
	s, _, ca := start(t, Options{})
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	vms, err := system(t, c).VirtualMedia()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(vms, func(v *redfish.VirtualMedia) bool { return v.ID == "CD1" })
	if i < 0 {
		t.Fatalf("no CD1 among %d virtual media", len(vms))
	}
	vms[0] = vms[i]
	if err := vms[0].InsertMedia("http://10.0.0.1/rescue.iso", true, true); err != nil {
		t.Fatal(err)
	}
	// Inserted as soon as InsertMedia answered: a client that does not
	// poll a task sees it (sushy does not).
	if img, in := s.Media(); img != "http://10.0.0.1/rescue.iso" || !in {
		t.Fatalf("media %q %v", img, in)
	}
	if err := vms[0].InsertMedia("http://10.0.0.1/other.iso", true, true); err == nil {
		t.Fatal("a second medium was inserted over the first")
	}
	if err := vms[0].EjectMedia(); err != nil {
		t.Fatal(err)
	}
	if _, in := s.Media(); in {
		t.Fatal("still inserted after eject")
	}
}

func TestFirmwareInventoryAndBusy(t *testing.T) {
	s, _, ca := start(t, Options{BMCFirmware: "7.10.30", BIOSVersion: "2.19.1"})
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	us, err := c.Service.UpdateService()
	if err != nil {
		t.Fatal(err)
	}
	inv, err := us.FirmwareInventories()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range inv {
		got[f.ID] = f.Version
	}
	if got["BMC"] != "7.10.30" || got["BIOS"] != "2.19.1" {
		t.Fatalf("firmware %v", got)
	}
	s.SetBusy(1)
	if _, err := c.Service.Systems(); err == nil {
		t.Fatal("a busy service answered")
	}
	if _, err := c.Service.Systems(); err != nil {
		t.Fatalf("after the busy answer: %v", err)
	}
	if s.Stats().Busy != 1 {
		t.Fatalf("busy answers %d", s.Stats().Busy)
	}
}
