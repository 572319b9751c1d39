package orchestrator_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/internal/redfishmock"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

// redfishNode is a node of the example whose hardware profile is
// managed over Redfish (the GPU servers), and its profile.
func redfishNode(t *testing.T, d *design.Design) string {
	t.Helper()
	for _, name := range d.NodeNames() {
		if hw := d.Nodes[name].Spec.Hardware; hw != nil && hw.OOB.Type == "redfish" {
			return name
		}
	}
	t.Fatal("the example has no node managed over Redfish")
	return ""
}

// withProfile gives node a copy of its hardware profile that edit
// changes (the other nodes of the profile keep theirs), with no
// baseline but what edit sets.
func withProfile(d *design.Design, node string, edit func(*design.HardwareProfileSpec)) {
	hw := *d.Nodes[node].Spec.Hardware
	hw.BIOS, hw.Firmware, hw.RAID, hw.VirtualMedia = nil, nil, nil, nil
	edit(&hw)
	d.Nodes[node].Spec.Hardware = &hw
}

// bmcCall sends a request to a lab machine's Redfish service, behind
// Slipway's back (an operator at the BMC), and decodes its answer.
func bmcCall(t *testing.T, env *labrun.Env, node, method, path string, body, out any) {
	t.Helper()
	m := env.Lab.Machine(node)
	pem, err := os.ReadFile(env.Lab.RedfishCAFile())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, m.BMC.RedfishURL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(m.BMCCredentials())
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %s %s", method, path, resp.Status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatal(err)
		}
	}
}

const labSystem = redfishmock.Root + "/Systems/" + redfishmock.SystemID

// setBIOSAtTheBMC stages a BIOS setting at the BMC and resets the
// machine (it takes effect), then reads it back from the BMC.
func setBIOSAtTheBMC(t *testing.T, env *labrun.Env, node, attr, val string) {
	t.Helper()
	bmcCall(t, env, node, "PATCH", labSystem+"/Bios/Settings", map[string]any{"Attributes": map[string]any{attr: val}}, nil)
	bmcCall(t, env, node, "POST", labSystem+"/Actions/ComputerSystem.Reset", map[string]any{"ResetType": "ForceRestart"}, nil)
	var bios struct{ Attributes map[string]any }
	bmcCall(t, env, node, "GET", labSystem+"/Bios", nil, &bios)
	if bios.Attributes[attr] != val {
		t.Fatalf("the BMC of %s reports %s=%v after the reset, want %s", node, attr, bios.Attributes[attr], val)
	}
}

// TestBIOSDriftFromTheBMC: a deployed node whose BIOS setting is changed
// at its BMC (staged and reset behind Slipway's back) is reported as
// bios drift naming the attribute, what the BMC has and what the profile
// wants; a repair is refused (an apply task puts it back); set back at
// the BMC, the drift is gone with a resolved event.
func TestBIOSDriftFromTheBMC(t *testing.T) {
	d := designtest.Example(t)
	node := redfishNode(t, d)
	withProfile(d, node, func(hw *design.HardwareProfileSpec) {
		hw.BIOS = &design.BIOSSettings{Attributes: map[string]string{"ProcTurboMode": "Enabled", "PowerProfile": "MaxPerf"}}
	})
	env := startEnv(t, d, nil, nil, nil)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test",
		Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{node}}}}}, record.TaskSucceeded)
	key := node + "/bios"
	if _, open := reconcile(t, e); open[key].Kind != "" {
		t.Fatalf("bios drift right after the deploy: %+v", open[key])
	}

	setBIOSAtTheBMC(t, env, node, "ProcTurboMode", "Disabled")
	rep, open := reconcile(t, e)
	dr := open[key]
	if dr.Kind != record.DriftBIOS || dr.Observed != "ProcTurboMode: have Disabled, want Enabled" ||
		dr.Expected != "PowerProfile=MaxPerf, ProcTurboMode=Enabled" || !slices.Contains(rep.Detected, key) {
		t.Fatalf("after the BIOS change at the BMC: %+v (detected %v)", dr, rep.Detected)
	}
	if evs := typedEvents(t, e, node, record.EventDriftDetected); len(evs) == 0 || !strings.Contains(evs[len(evs)-1].Message, "ProcTurboMode: have Disabled") {
		t.Errorf("detected events %+v", evs)
	}
	if _, err := e.ResolveDrift(t.Context(), node, record.DriftBIOS, record.ResolveRepair, "test", ""); !errors.Is(err, orchestrator.ErrConflict) {
		t.Errorf("repair of bios drift: %v, want a conflict naming the task that applies it", err)
	}

	setBIOSAtTheBMC(t, env, node, "ProcTurboMode", "Enabled")
	rep, open = reconcile(t, e)
	if open[key].Kind != "" || !slices.Contains(rep.Cleared, key) {
		t.Fatalf("set back at the BMC: open %+v, cleared %v", open[key], rep.Cleared)
	}
}

// TestFirmwareDriftFromTheBMC: a deployed node whose profile's firmware
// baseline is what its BMC runs has no firmware drift; a GPU's firmware
// changed at the BMC behind Slipway's back (a technician's update, set in
// the lab's inventory) is firmware drift naming the item, its device,
// the version it has and the baseline's; once the version is back, the
// drift is gone, but not while the BMC does not answer (the record stays
// as it was, neither cleared nor detected again).
func TestFirmwareDriftFromTheBMC(t *testing.T) {
	d := designtest.Example(t)
	node := redfishNode(t, d)
	withProfile(d, node, func(*design.HardwareProfileSpec) {})
	env := startEnv(t, d, nil, nil, nil)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: onlyNodes(node)}, record.TaskSucceeded)

	// The baseline: what the lab's BMC runs, its BIOS and a GPU by alias.
	rf := env.Lab.Machine(node).Redfish()
	var bios, gpu simrf.FirmwareItem
	for _, it := range rf.Firmware() {
		switch {
		case it.Kind == "bios":
			bios = it
		case it.Kind == "gpu" && gpu.ID == "":
			gpu = it
		}
	}
	if bios.Version == "" || gpu.Device == "" {
		t.Fatalf("the lab's inventory has no BIOS or GPU: %+v", rf.Firmware())
	}
	img := design.FirmwareImage{URL: "http://images.lab.example/fw.bin", SHA256: strings.Repeat("ab", 32)}
	withProfile(d, node, func(hw *design.HardwareProfileSpec) {
		hw.DeviceAliases = maps.Clone(hw.DeviceAliases)
		hw.DeviceAliases["gpu0"] = design.DeviceAlias{Bus: "pci", Address: gpu.Device}
		hw.Firmware = []design.FirmwareBaseline{{Component: "bios", Version: bios.Version, Image: img},
			{Component: "gpu", Devices: []string{"gpu0"}, Version: gpu.Version, Image: img}}
	})
	putDesign(t, env, d)
	key := node + "/firmware"
	if _, open := reconcile(t, e); open[key].Kind != "" {
		t.Fatalf("firmware drift with the baseline the BMC runs: %+v", open[key])
	}

	if !rf.SetFirmwareVersion(gpu.ID, "96.00.00.00.01") {
		t.Fatalf("no inventory item %s", gpu.ID)
	}
	rep, open := reconcile(t, e)
	want := "gpu " + gpu.ID + " (" + gpu.Device + "): have 96.00.00.00.01, want " + gpu.Version
	if dr := open[key]; dr.Kind != record.DriftFirmware || dr.Observed != want || !slices.Contains(rep.Detected, key) ||
		dr.Expected != "bios "+bios.Version+"; gpu [gpu0] "+gpu.Version {
		t.Fatalf("after the GPU's update at the BMC: %+v (detected %v); want observed %q", dr, rep.Detected, want)
	}

	// Back at the BMC, but the BMC does not answer: nothing is known.
	rf.SetFirmwareVersion(gpu.ID, gpu.Version)
	rf.SetBusy(1 << 20) // the BMC answers 503 to everything
	rep, open = reconcile(t, e)
	rf.SetBusy(0)
	if open[key].Observed != want || slices.Contains(rep.Detected, key) || slices.Contains(rep.Cleared, key) {
		t.Fatalf("with the BMC silent: %+v, detected %v, cleared %v; want the record kept", open[key], rep.Detected, rep.Cleared)
	}

	rep, open = reconcile(t, e)
	if open[key].Kind != "" || !slices.Contains(rep.Cleared, key) {
		t.Fatalf("version back at the BMC: open %+v, cleared %v", open[key], rep.Cleared)
	}
}
