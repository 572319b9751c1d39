package redfish

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The lab's Redfish service against the third-party clients operators
// and Ironic use: Debian's python3-sushy (the library Ironic drives BMCs
// with) and DMTF's redfishtool. Each test counts the checks that pass and
// reads what they did from the service's own state. In CI (CI set) a
// missing client fails the test; elsewhere it skips.

const labUUID = "5f1c2d3e-4a5b-5c6d-8e7f-0123456789ab"

// systemPython is Debian's interpreter, which has python3-sushy (the
// python3 on PATH may be another one).
const systemPython = "/usr/bin/python3"

// need fails (in CI) or skips the test when the client is missing.
func need(t *testing.T, what string, ok bool) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed: .ci/run installs it (apt python3-sushy redfishtool)", what)
	}
	t.Skipf("%s is not installed", what)
}

// caFile writes the service's CA certificate for the clients.
func caFile(t *testing.T, ca *CA) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bmc-ca.pem")
	if err := os.WriteFile(p, ca.PEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// sushyChecks are the checks testdata/sushy_agree.py runs, in order.
var sushyChecks = []string{"root", "systems", "system_get", "power_on", "power_reset", "power_off",
	"boot_override_set", "boot_override_read", "bios_get", "bios_set", "managers", "virtual_media_list",
	"virtual_media_insert", "virtual_media_eject", "sessions_list", "session_get_own", "session_get_other",
	"firmware_inventory", "chassis", "session_logout"}

// TestSushyAgrees runs sushy through the service: root, systems, power,
// boot override, BIOS, the Manager's virtual media, sessions, firmware
// inventory and chassis. It trusts the lab CA (verify=), nothing else.
func TestSushyAgrees(t *testing.T) {
	_, err := os.Stat(systemPython)
	need(t, systemPython, err == nil && exec.Command(systemPython, "-c", "import sushy").Run() == nil)
	s, m, ca := start(t, Options{UUID: labUUID})
	cafile := caFile(t, ca)
	in, _ := json.Marshal(map[string]any{"url": s.URL(), "user": user, "password": pass, "ca": cafile,
		"uuid": labUUID, "iso": "http://10.0.0.1/boot.iso", "bios": map[string]any{"ProcTurboMode": "Disabled"}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, systemPython, filepath.Join("testdata", "sushy_agree.py"))
	// requests lets these variables override sushy's verify=: point them
	// at the lab CA too, so that nothing else is trusted.
	cmd.Env = append(os.Environ(), "REQUESTS_CA_BUNDLE="+cafile, "CURL_CA_BUNDLE="+cafile)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sushy script: %v\n%s\n%s", err, out, stderr.Bytes())
	}
	passed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r struct {
			Check, Detail string
			OK            bool
		}
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Check == "" {
			continue
		}
		passed[r.Check] = r.OK
		if !r.OK {
			t.Errorf("sushy %s: %s", r.Check, r.Detail)
		}
	}
	n := 0
	for _, c := range sushyChecks {
		if passed[c] {
			n++
		}
	}
	t.Logf("sushy: %d/%d checks pass", n, len(sushyChecks))
	if n != len(sushyChecks) {
		t.Fatalf("sushy: %d/%d checks pass", n, len(sushyChecks))
	}
	sushyState(t, s, m)
}

// sushyState: what the sushy run did, read from the service and machine.
func sushyState(t *testing.T, s *Service, m *BareMachine) {
	t.Helper()
	st := s.Stats()
	if st.Resets["On"] != 1 || st.Resets["ForceRestart"] != 1 || st.Resets["ForceOff"] != 1 || m.IsPoweredOn() {
		t.Errorf("resets %v, powered on %v: want On, ForceRestart, ForceOff once each and off", st.Resets, m.IsPoweredOn())
	}
	if _, boots := m.LastBoot(); boots != 2 {
		t.Errorf("the machine booted %d times, want 2 (On, ForceRestart)", boots)
	}
	if dev, persistent, efi := m.BootDevice(); dev != "cdrom" || persistent || !efi {
		t.Errorf("boot override %q persistent %v efi %v, want the CD once in UEFI", dev, persistent, efi)
	}
	if _, pending := s.BIOS(); pending["ProcTurboMode"] != "Disabled" {
		t.Errorf("pending BIOS %v", pending)
	}
	if _, in := s.Media(); in || st.MediaInserted != 1 {
		t.Errorf("media inserted %d times, in now %v: want once, then ejected", st.MediaInserted, in)
	}
	if st.SessionsOpened == 0 || st.SessionsClosed != st.SessionsOpened || s.Sessions() != 0 {
		t.Errorf("sessions opened %d, closed %d, live %d: sushy logs out", st.SessionsOpened, st.SessionsClosed, s.Sessions())
	}
}

// redfishtool runs DMTF's redfishtool against the service, its
// credentials in a config file (never in its arguments). redfishtool
// sends every request with verify=False and offers no CA option, so it
// alone does not check the service's certificate.
type redfishtool struct {
	t    *testing.T
	host string
	cfg  string
}

func newRedfishtool(t *testing.T, s *Service) *redfishtool {
	cfg := filepath.Join(t.TempDir(), "redfishtool.json")
	b, _ := json.Marshal(map[string]string{"user": user, "password": pass})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return &redfishtool{t: t, host: s.Addr().String(), cfg: cfg}
}

// run runs redfishtool with args after the common options.
func (r *redfishtool) run(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(r.t.Context(), time.Minute)
	defer cancel()
	full := append([]string{"-r", r.host, "-c", r.cfg, "-S", "Always", "-T", "20"}, args...)
	cmd := exec.CommandContext(ctx, "redfishtool", full...)
	cmd.Env = append(os.Environ(), "PYTHONWARNINGS=ignore")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, &toolError{err: err, stderr: strings.TrimSpace(stderr.String())}
	}
	return out, nil
}

type toolError struct {
	err    error
	stderr string
}

func (e *toolError) Error() string { return e.err.Error() + ": " + e.stderr }

// jsonOf decodes redfishtool's JSON output.
func jsonOf(out []byte) map[string]any {
	var doc map[string]any
	_ = json.Unmarshal(out, &doc)
	return doc
}

// toolStep is one redfishtool command and what must hold after it ("" ok).
type toolStep struct {
	name  string
	args  func() []string
	check func(doc map[string]any) string
}

func args(a ...string) func() []string { return func() []string { return a } }

func want(ok bool, msg string) string {
	if ok {
		return ""
	}
	return msg
}

// TestRedfishtoolAgrees runs redfishtool's subcommands through the
// service (most with -A Session: a login, the command, a logout) and
// checks each against the service's and the machine's state.
func TestRedfishtoolAgrees(t *testing.T) {
	_, err := exec.LookPath("redfishtool")
	need(t, "redfishtool", err == nil)
	s, m, ca := start(t, Options{UUID: labUUID})
	rt := newRedfishtool(t, s)
	hc := rawClient(ca)
	steps := redfishtoolSteps(t, s, m, hc)
	passed := 0
	for _, st := range steps {
		out, err := rt.run(st.args()...)
		msg := ""
		if err != nil {
			msg = err.Error()
		} else {
			msg = st.check(jsonOf(out))
		}
		if msg != "" {
			t.Errorf("redfishtool %s (%s): %s", st.name, strings.Join(st.args(), " "), msg)
			continue
		}
		passed++
	}
	t.Logf("redfishtool: %d/%d commands agree", passed, len(steps))
	if passed != len(steps) {
		t.Fatalf("redfishtool: %d/%d commands agree", passed, len(steps))
	}
	st := s.Stats()
	if st.SessionsOpened < 20 || st.SessionsClosed != st.SessionsOpened || s.Sessions() != 0 {
		t.Fatalf("sessions opened %d, closed %d, live %d: every redfishtool session ends with its command", st.SessionsOpened, st.SessionsClosed, s.Sessions())
	}
}

func redfishtoolSteps(t *testing.T, s *Service, m *BareMachine, hc *http.Client) []toolStep {
	var login map[string]any // SessionService login's answer
	sess := "-A"
	steps := []toolStep{
		{"versions", args("versions"), func(d map[string]any) string { return want(d["v1"] == "/redfish/v1/", "no v1") }},
		{"root", args("root"), func(d map[string]any) string { return want(d["UUID"] == labUUID, "root UUID") }},
		{"systems", args(sess, "Session", "Systems"), func(d map[string]any) string {
			return want(d["Members@odata.count"] == float64(1), "systems count")
		}},
		{"systems list", args(sess, "Session", "Systems", "list"), func(d map[string]any) string {
			return want(strings.Contains(fmtJSON(d), systemPath), "no system listed")
		}},
		{"system get", args(sess, "Session", "Systems", "-F", "get"), func(d map[string]any) string {
			return want(d["UUID"] == labUUID && d["PowerState"] == "Off", "system UUID or power")
		}},
		{"power on", args(sess, "Session", "Systems", "-F", "reset", "On"), func(map[string]any) string {
			return want(m.IsPoweredOn() && s.Stats().Resets["On"] == 1, "not on")
		}},
		{"power reset", args(sess, "Session", "Systems", "-F", "reset", "ForceRestart"), func(map[string]any) string {
			_, boots := m.LastBoot()
			return want(m.IsPoweredOn() && boots == 2, "not rebooted")
		}},
		{"power off", args(sess, "Session", "Systems", "-F", "reset", "ForceOff"), func(map[string]any) string {
			return want(!m.IsPoweredOn(), "still on")
		}},
		{"power state", args(sess, "Session", "Systems", "-F", "get", "-P", "PowerState"), func(d map[string]any) string {
			return want(d["PowerState"] == "Off", "power state read")
		}},
		{"boot override set", args(sess, "Session", "Systems", "-F", "setBootOverride", "Once", "Pxe"), func(map[string]any) string {
			dev, persistent, _ := m.BootDevice()
			return want(dev == "pxe" && !persistent, "machine boot device "+dev)
		}},
		{"boot override read", args(sess, "Session", "Systems", "-F", "get", "-P", "Boot"), func(d map[string]any) string {
			b, _ := d["Boot"].(map[string]any)
			return want(b["BootSourceOverrideTarget"] == "Pxe" && b["BootSourceOverrideEnabled"] == "Once", "boot read back")
		}},
		{"bios get", args(sess, "Session", "raw", "GET", biosPath), func(d map[string]any) string {
			a, _ := d["Attributes"].(map[string]any)
			return want(a["ProcTurboMode"] == "Enabled", "BIOS attributes")
		}},
		{"bios set", args(sess, "Session", "raw", "PATCH", settingsPath, "-d", `{"Attributes": {"ProcTurboMode": "Disabled"}}`), func(map[string]any) string {
			_, p := s.BIOS()
			return want(p["ProcTurboMode"] == "Disabled", "not staged")
		}},
		{"bios pending read", args(sess, "Session", "raw", "GET", settingsPath), func(d map[string]any) string {
			a, _ := d["Attributes"].(map[string]any)
			return want(a["ProcTurboMode"] == "Disabled", "pending read")
		}},
		{"managers", args(sess, "Session", "Managers"), func(d map[string]any) string {
			return want(d["Members@odata.count"] == float64(1), "managers count")
		}},
		{"managers list", args(sess, "Session", "Managers", "list"), func(d map[string]any) string {
			return want(strings.Contains(fmtJSON(d), managerPath), "no manager listed")
		}},
		{"manager get", args(sess, "Session", "Managers", "-F", "get"), func(d map[string]any) string {
			vm, _ := d["VirtualMedia"].(map[string]any)
			return want(vm["@odata.id"] == managerPath+"/VirtualMedia", "no VirtualMedia link")
		}},
		{"virtual media list", args(sess, "Session", "raw", "GET", managerPath+"/VirtualMedia"), func(d map[string]any) string {
			return want(strings.Contains(fmtJSON(d), managerMediaPath), "no CD1")
		}},
		{"virtual media insert", args(sess, "Session", "raw", "POST", managerMediaPath+"/Actions/VirtualMedia.InsertMedia", "-d", `{"Image": "http://10.0.0.1/boot.iso"}`), func(map[string]any) string {
			img, in := s.Media()
			return want(in && img == "http://10.0.0.1/boot.iso", "not inserted")
		}},
		{"virtual media read", args(sess, "Session", "raw", "GET", managerMediaPath), func(d map[string]any) string {
			return want(d["Inserted"] == true && d["Image"] == "http://10.0.0.1/boot.iso", "not shown inserted")
		}},
		{"virtual media eject", args(sess, "Session", "raw", "POST", managerMediaPath+"/Actions/VirtualMedia.EjectMedia", "-d", `{}`), func(map[string]any) string {
			_, in := s.Media()
			return want(!in, "still inserted")
		}},
		{"session service", args(sess, "Session", "SessionService"), func(d map[string]any) string {
			return want(d["ServiceEnabled"] == true, "session service")
		}},
		{"session login", args("SessionService", "login"), func(d map[string]any) string {
			login = d
			return want(d["SessionId"] != nil && d["X-Auth-Token"] != nil && s.Sessions() == 1, "no live session after login")
		}},
		{"sessions list", args(sess, "Session", "SessionService", "Sessions", "list"), func(d map[string]any) string {
			return want(d["Members@odata.count"] == float64(2), "the login's and this command's sessions not both listed: "+fmtJSON(d))
		}},
		{"sessions get all", args(sess, "Session", "SessionService", "Sessions", "-a"), func(d map[string]any) string {
			return want(strings.Count(fmtJSON(d), `"UserName":"`+user+`"`) == 2, "own and other session not both read: "+fmtJSON(d))
		}},
		{"session get", func() []string { return []string{"SessionService", "Sessions", "-i", str(login["SessionId"])} }, func(d map[string]any) string {
			return want(d["Id"] == login["SessionId"] && d["UserName"] == user, "session read")
		}},
		{"session logout", func() []string { return []string{"SessionService", "logout", "-i", str(login["SessionId"])} }, func(map[string]any) string {
			code, _, _ := do(t, hc, "GET", s.URL()+systemPath, str(login["X-Auth-Token"]), nil)
			return want(code == 401 && s.Sessions() == 0, "the logged-out token still works")
		}},
		{"firmware inventory", args(sess, "Session", "raw", "GET", "/redfish/v1/UpdateService/FirmwareInventory"), func(d map[string]any) string {
			return want(strings.Contains(fmtJSON(d), "FirmwareInventory/BMC"), "no BMC firmware")
		}},
		{"firmware get", args(sess, "Session", "raw", "GET", "/redfish/v1/UpdateService/FirmwareInventory/BIOS"), func(d map[string]any) string {
			return want(d["Version"] != nil && d["Version"] != "", "no BIOS version")
		}},
		{"chassis", args(sess, "Session", "Chassis"), func(d map[string]any) string {
			return want(d["Members@odata.count"] == float64(1), "chassis count")
		}},
		{"chassis list", args(sess, "Session", "Chassis", "list"), func(d map[string]any) string {
			return want(strings.Contains(fmtJSON(d), "/redfish/v1/Chassis/"), "no chassis listed")
		}},
		{"chassis get", args(sess, "Session", "Chassis", "-F", "get"), func(d map[string]any) string {
			return want(d["Id"] != nil, "chassis")
		}},
	}
	return steps
}

func fmtJSON(d map[string]any) string {
	b, _ := json.Marshal(d)
	return string(b)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
