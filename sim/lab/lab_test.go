package lab

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"

	"github.com/juju/gomaasapi/v2"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/sim/maas"
)

func exampleDesign(t *testing.T) *design.Design { return designtest.Example(t) }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// post sends a signed form request.
func post(t *testing.T, info Info, path, op string, form url.Values) (int, string) {
	t.Helper()
	creds, _ := maas.ParseAPIKey(info.APIKey)
	req, _ := http.NewRequest("POST", info.MAASURL+"/api/2.0"+path+"?op="+op, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	creds.Sign(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func TestLabFromDesignLifecycle(t *testing.T) {
	d := exampleDesign(t)
	l, err := Start(t.Context(), Config{Design: d, TimeScale: 0.0005, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	info := l.Info()
	if len(info.BMCs) != len(d.Nodes) || !strings.HasPrefix(info.MAASURL, "http://127.0.0.1:") {
		t.Fatalf("info: %+v", info)
	}
	node := d.NodeNames()[0]
	m := l.Machine(node)
	if m == nil || m.BMC.Port == 0 || m.BMC.DesignAddr != d.Nodes[node].Spec.OOB.Address {
		t.Fatalf("machine %s: %+v", node, m)
	}

	c, err := gomaasapi.NewController(gomaasapi.ControllerArgs{BaseURL: info.MAASURL, APIKey: info.APIKey})
	if err != nil {
		t.Fatal(err)
	}
	// Physics: powered on from PXE, an unknown machine enlists itself.
	m.SetBootDevice("pxe", false, true)
	m.PowerOn()
	var sysID string
	waitFor(t, "enlistment", func() bool {
		ms, err := c.Machines(gomaasapi.MachinesArgs{MACAddresses: []string{m.Hardware.NICs[0].MAC}})
		if err == nil && len(ms) == 1 {
			sysID = ms[0].SystemID()
			return ms[0].StatusName() == "New"
		}
		return false
	})
	// Commissioning discovers the design's NICs at their PCI addresses.
	if code, body := post(t, info, "/machines/"+sysID+"/", "commission", nil); code != 200 {
		t.Fatalf("commission: %d %s", code, body)
	}
	waitFor(t, "Ready", func() bool {
		ms, _ := c.Machines(gomaasapi.MachinesArgs{SystemIDs: []string{sysID}})
		return len(ms) == 1 && ms[0].StatusName() == "Ready"
	})
	ms, _ := c.Machines(gomaasapi.MachinesArgs{SystemIDs: []string{sysID}})
	names := map[string]bool{}
	for _, i := range ms[0].InterfaceSet() {
		names[i.Name()] = true
	}
	want := pciName(m.Hardware.NICs[0].PCI)
	if !names[want] {
		t.Errorf("interfaces %v lack %s (from PCI %s)", names, want, m.Hardware.NICs[0].PCI)
	}
	if m.IsPoweredOn() {
		t.Error("a commissioned machine is powered off")
	}
	// Deploy hands the user data to the machine.
	ud := base64.StdEncoding.EncodeToString([]byte("#cloud-config\nhostname: " + node))
	if code, body := post(t, info, "/machines/"+sysID+"/", "deploy", url.Values{"user_data": {ud}, "distro_series": {"jammy"}}); code != 200 {
		t.Fatalf("deploy: %d %s", code, body)
	}
	waitFor(t, "Deployed", func() bool { return m.OS() != "" })
	if !strings.Contains(string(m.UserData()), "hostname: "+node) || !m.IsPoweredOn() {
		t.Errorf("deployed machine: os %q, on %v, user data %q", m.OS(), m.IsPoweredOn(), m.UserData())
	}
	if code, body := post(t, info, "/machines/"+sysID+"/", "release", url.Values{"erase": {"true"}}); code != 200 {
		t.Fatalf("release: %d %s", code, body)
	}
	waitFor(t, "released", func() bool { return m.OS() == "" && !m.IsPoweredOn() })
}

func TestGenericMachinesAndSecrets(t *testing.T) {
	l, err := Start(t.Context(), Config{Machines: 3, TimeScale: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := len(l.Info().BMCs); got != 3 {
		t.Errorf("%d BMCs, want 3", got)
	}
	t.Setenv("LAB_PW", "from-env")
	t.Setenv("SLIPWAY_SECRET_BMC_ADMIN", "from-store")
	for ref, want := range map[string]string{"env:LAB_PW": "from-env", "secret:bmc-admin": "from-store"} {
		if got, err := ResolveSecret(ref); err != nil || got != want {
			t.Errorf("%s: %q, %v", ref, got, err)
		}
	}
	if _, err := ResolveSecret("secret:missing"); err == nil || !strings.Contains(err.Error(), "SLIPWAY_SECRET_MISSING") {
		t.Errorf("missing secret: %v", err)
	}
}

func TestPCIName(t *testing.T) {
	if got := pciName("0000:3b:00.1"); got != "enp59s0f1" {
		t.Errorf("pciName = %s", got)
	}
}
