package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/juju/gomaasapi/v2"
)

// TestSushyBootsVirtualMedia: Ironic's library (python3-sushy, run with
// /usr/bin/python3, trusting the lab's CA only) inserts the lab's boot ISO
// in a lab machine's Manager virtual CD, sets a one-time CD boot and
// powers it on; the machine, which has no PXE, boots the ISO into the
// provisioner and MAAS enlists it. In CI a missing sushy fails the test.
func TestSushyBootsVirtualMedia(t *testing.T) {
	const python = "/usr/bin/python3"
	if exec.Command(python, "-c", "import sushy").Run() != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3-sushy is not installed (.ci/run installs it)")
		}
		t.Skip("python3-sushy is not installed")
	}
	l, err := Start(t.Context(), Config{Design: exampleDesign(t), TimeScale: 0.0005, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := redfishMachines(t, l)[0]
	m.SetPXE(false)
	user, pw := m.BMCCredentials()
	ca := l.RedfishCAFile()
	in, _ := json.Marshal(map[string]string{"url": m.BMC.RedfishURL, "user": user, "password": pw, "ca": ca, "iso": l.BootISOURL()})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, filepath.Join("testdata", "sushy_vmedia_boot.py"))
	cmd.Env = append(os.Environ(), "REQUESTS_CA_BUNDLE="+ca, "CURL_CA_BUNDLE="+ca) // requests lets these override verify=
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	var res struct {
		OK     bool
		Detail string
	}
	if err != nil || json.Unmarshal(out, &res) != nil || !res.OK {
		t.Fatalf("sushy: %v %s", err, out)
	}
	c, err := gomaasapi.NewController(gomaasapi.ControllerArgs{BaseURL: l.Info().MAASURL, APIKey: l.Info().APIKey})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "enlistment from the virtual CD", func() bool { _, ok := enlisted(t, c, m); return ok })
	img, inserted := mediaOf(m)
	if boots := m.BootLog(); !slices.Equal(boots, []string{BootFromProvisioner}) || !inserted || img != l.BootISOURL() {
		t.Fatalf("boots %v, medium %q inserted %v: want one boot of the lab's ISO into the provisioner", boots, img, inserted)
	}
	if dev, _, _ := m.BootDevice(); dev != "" {
		t.Fatalf("the one-time CD override is still set after the boot: %q", dev)
	}
}
