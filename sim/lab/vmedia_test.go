package lab

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/juju/gomaasapi/v2"

	"github.com/slipway-dev/slipway/drivers"
	rfdriver "github.com/slipway-dev/slipway/drivers/oob/redfish"
)

// redfishMachines are the lab's machines whose BMC speaks Redfish.
func redfishMachines(t *testing.T, l *Lab) []*Machine {
	t.Helper()
	var out []*Machine
	for _, m := range l.Machines() {
		if m.BMC.RedfishPort != 0 {
			out = append(out, m)
		}
	}
	if len(out) < 2 {
		t.Fatalf("the example design has %d machines with a Redfish BMC, want 2 or more", len(out))
	}
	return out
}

// redfishDriver is the Redfish driver and the machine's BMC as it reaches
// it (the lab's endpoint, trusted through the lab's CA).
func redfishDriver(t *testing.T, l *Lab, m *Machine) (*rfdriver.Driver, drivers.BMC) {
	t.Helper()
	d, err := rfdriver.NewDriver(drivers.Config{Settings: map[string]string{rfdriver.SettingTimeout: "5s", rfdriver.SettingPollInterval: "20ms", rfdriver.SettingGracefulWait: "1s"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	user, pw := m.BMCCredentials()
	return d, l.Endpoint("redfish", drivers.BMC{Node: m.Name, Username: user, Password: drivers.NewSecret(pw)})
}

func must(t *testing.T, what string, r drivers.Result, err error) {
	t.Helper()
	if err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("%s: %+v %v", what, r, err)
	}
}

// enlisted reports whether MAAS knows the machine (by its first MAC).
func enlisted(t *testing.T, c gomaasapi.Controller, m *Machine) (string, bool) {
	t.Helper()
	ms, err := c.Machines(gomaasapi.MachinesArgs{MACAddresses: []string{m.Hardware.NICs[0].MAC}})
	if err != nil || len(ms) != 1 {
		return "", false
	}
	return ms[0].SystemID(), true
}

// TestVirtualMediaBootProvisions: a machine without PXE boots nothing
// from its PXE override and stays unknown to MAAS; another ISO in its
// virtual CD boots and enlists nothing; the lab's boot ISO, inserted over
// Redfish with a one-time CD boot, boots into the provisioner: MAAS
// enlists it, and commissions and deploys it (its PXE boots falling
// through to the CD).
func TestVirtualMediaBootProvisions(t *testing.T) {
	l, err := Start(t.Context(), Config{Design: exampleDesign(t), TimeScale: 0.0005, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	info := l.Info()
	c, err := gomaasapi.NewController(gomaasapi.ControllerArgs{BaseURL: info.MAASURL, APIKey: info.APIKey})
	if err != nil {
		t.Fatal(err)
	}
	m := redfishMachines(t, l)[0]
	m.SetPXE(false)
	d, b := redfishDriver(t, l, m)
	ctx := t.Context()
	boot := func(dev string) {
		t.Helper()
		r, err := d.SetBootDevice(ctx, b, drivers.BootDevice{Device: dev, EFI: true})
		must(t, "SetBootDevice("+dev+")", r, err)
		r, err = d.PowerCycle(ctx, b)
		if err != nil || r.Status == drivers.StatusFailed {
			t.Fatalf("PowerCycle: %+v %v", r, err)
		}
		time.Sleep(250 * time.Millisecond) // the enlistment, scaled, is 90 ms
	}
	boot("pxe")
	r, err := d.InsertMedia(ctx, b, "http://10.0.0.1/rescue.iso")
	must(t, "InsertMedia(rescue)", r, err)
	boot(drivers.BootCD)
	l.mu.Lock()
	booting := l.pending[m] // set at once by a boot into the provisioner
	l.mu.Unlock()
	if _, ok := enlisted(t, c, m); ok || booting {
		t.Fatalf("a machine without PXE that booted %v is enlisting (%v) or enlisted", m.BootLog(), booting)
	}
	iso := l.BootISOURL()
	r, err = d.InsertMedia(ctx, b, iso)
	must(t, "InsertMedia(boot ISO)", r, err)
	boot(drivers.BootCD)
	var sysID string
	waitFor(t, "enlistment from the virtual CD", func() bool { id, ok := enlisted(t, c, m); sysID = id; return ok })
	if got, want := m.BootLog(), []string{BootFromDisk, BootFromCD, BootFromProvisioner}; !slices.Equal(got, want) {
		t.Fatalf("boots %v, want %v", got, want)
	}
	if code, body := post(t, info, "/machines/"+sysID+"/", "commission", nil); code != 200 {
		t.Fatalf("commission: %d %s", code, body)
	}
	waitFor(t, "Ready", func() bool {
		ms, _ := c.Machines(gomaasapi.MachinesArgs{SystemIDs: []string{sysID}})
		return len(ms) == 1 && ms[0].StatusName() == "Ready"
	})
	if code, body := post(t, info, "/machines/"+sysID+"/", "deploy", nil); code != 200 {
		t.Fatalf("deploy: %d %s", code, body)
	}
	waitFor(t, "Deployed", func() bool { return m.OS() != "" })
	if log := m.BootLog(); slices.Contains(log, BootFromPXE) || len(log) < 5 || log[3] != BootFromProvisioner {
		t.Fatalf("boots %v: commissioning and deployment should boot the ISO, never PXE", log)
	}
	r, err = d.EjectMedia(ctx, b)
	must(t, "EjectMedia", r, err)
	if _, in := mediaOf(m); in {
		t.Fatal("inserted after EjectMedia")
	}
}

// TestBootISOServed: the lab serves its boot ISO with the SHA-256 it
// publishes.
func TestBootISOServed(t *testing.T) {
	l, err := Start(t.Context(), Config{Design: exampleDesign(t), TimeScale: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	resp, err := http.Get(l.BootISOURL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	sum := sha256.Sum256(b)
	if err != nil || resp.StatusCode != 200 || hex.EncodeToString(sum[:]) != BootISOSHA256() || len(b) != bootISOSize {
		t.Fatalf("GET %s: %d, %d bytes, sha256 %x, %v", l.BootISOURL(), resp.StatusCode, len(b), sum, err)
	}
}

// TestRedfishUUIDIsIPMIGUID: each lab BMC's ComputerSystem and service
// root report the machine's own UUID, the GUID ipmitool reads from the
// same machine's IPMI BMC; no two machines share one.
func TestRedfishUUIDIsIPMIGUID(t *testing.T) {
	if _, err := exec.LookPath("ipmitool"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ipmitool is not installed (.ci/run installs it)")
		}
		t.Skip("ipmitool is not installed")
	}
	l, err := Start(t.Context(), Config{Design: exampleDesign(t), TimeScale: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	seen := map[string]string{}
	guidRE := regexp.MustCompile(`(?i)System GUID\s*:\s*([0-9a-f-]{36})`)
	for _, m := range redfishMachines(t, l) {
		user, pw := m.BMCCredentials()
		cmd := exec.CommandContext(t.Context(), "ipmitool", "-I", "lanplus", "-H", "127.0.0.1", "-p", strconv.Itoa(m.BMC.Port),
			"-U", user, "-E", "-C", "3", "-N", "1", "-R", "3", "mc", "guid")
		cmd.Env = append(os.Environ(), "IPMI_PASSWORD="+pw)
		out, err := cmd.CombinedOutput()
		g := guidRE.FindStringSubmatch(string(out))
		if err != nil || g == nil {
			t.Fatalf("%s: ipmitool mc guid: %v\n%s", m.Name, err, out)
		}
		guid := strings.ToLower(g[1])
		d, b := redfishDriver(t, l, m)
		p, err := d.Probe(t.Context(), b)
		if err != nil || strings.ToLower(p.GUID) != guid {
			t.Fatalf("%s: Redfish ComputerSystem UUID %q (%v), IPMI GUID %s", m.Name, p.GUID, err, guid)
		}
		if root := rootUUID(t, l, m); root != guid {
			t.Fatalf("%s: service root UUID %q, IPMI GUID %s", m.Name, root, guid)
		}
		if other, dup := seen[guid]; dup {
			t.Fatalf("%s and %s share the UUID %s", other, m.Name, guid)
		}
		seen[guid] = m.Name
	}
}

// mediaOf reads the machine's virtual CD from its Redfish service.
func mediaOf(m *Machine) (string, bool) {
	m.mu.Lock()
	rf := m.rf
	m.mu.Unlock()
	return rf.Media()
}

// rootUUID reads the UUID of the service root of the machine's Redfish
// service, trusting the lab's CA only.
func rootUUID(t *testing.T, l *Lab, m *Machine) string {
	t.Helper()
	pem, err := os.ReadFile(l.RedfishCAFile())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(m.BMC.RedfishURL + "/redfish/v1/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var root struct{ UUID string }
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&root); err != nil {
		t.Fatal(err)
	}
	return strings.ToLower(root.UUID)
}
