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
	if got := biosAtTheBMC(t, env, node)[attr]; got != val {
		t.Fatalf("the BMC of %s reports %s=%v after the reset, want %s", node, attr, got, val)
	}
}

// biosAtTheBMC reads the BIOS settings in effect from the lab's BMC.
func biosAtTheBMC(t *testing.T, env *labrun.Env, node string) map[string]any {
	t.Helper()
	var bios struct{ Attributes map[string]any }
	bmcCall(t, env, node, "GET", labSystem+"/Bios", nil, &bios)
	return bios.Attributes
}

// applyTaskOf is the ID of the node's last apply_baseline task.
func applyTaskOf(t *testing.T, e *orchestrator.Engine, node string) string {
	t.Helper()
	ts, err := e.Tasks(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	id := ""
	for _, task := range ts {
		if task.Action == record.ActionApplyBaseline && slices.Contains(task.Nodes, node) {
			id = task.ID
		}
	}
	if id == "" {
		t.Fatalf("no apply_baseline task of %s among %d tasks", node, len(ts))
	}
	return id
}

// TestBIOSDriftFromTheBMC: a deployed node whose BIOS setting is changed
// at its BMC (staged and reset behind Slipway's back) is reported as
// bios drift naming the attribute, what the BMC has and what the profile
// wants; its repair, an apply_baseline task, stops under the Site's
// reboots deny without touching the BMC, and a second repair is refused
// while that failure stands; set back at the BMC, the drift is gone.
func TestBIOSDriftFromTheBMC(t *testing.T) {
	t.Parallel()
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
	// Repair: an apply_baseline task, which under the Site's default
	// (reboots deny) stops before it changes anything; a second repair
	// is refused while that failure stands.
	res, err := e.ResolveDrift(t.Context(), node, record.DriftBIOS, record.ResolveRepair, "test", "")
	if err != nil || !strings.Contains(res.Message, "apply_baseline task") {
		t.Fatalf("repair of bios drift: %+v %v", res, err)
	}
	taskID := applyTaskOf(t, e, node)
	if _, err := e.Wait(t.Context(), taskID); err != nil {
		t.Fatal(err)
	}
	if got, nres, _ := e.Task(t.Context(), taskID); got.Status != record.TaskFailed || len(nres) != 1 || !strings.Contains(nres[0].Reason, "reboots is deny") {
		t.Fatalf("apply_baseline under reboots deny: %s %+v", got.Status, nres)
	}
	if v := biosAtTheBMC(t, env, node)["ProcTurboMode"]; v != "Disabled" {
		t.Fatalf("the BMC has ProcTurboMode %v after a refused apply_baseline", v)
	}
	if _, open = reconcile(t, e); open[key].Kind != record.DriftBIOS {
		t.Fatalf("the drift after the refused repair: %+v", open[key])
	}
	if _, err := e.ResolveDrift(t.Context(), node, record.DriftBIOS, record.ResolveRepair, "test", ""); !errors.Is(err, orchestrator.ErrConflict) || !strings.Contains(err.Error(), "last apply_baseline") {
		t.Errorf("a second repair after a failed apply_baseline: %v, want a conflict naming it", err)
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
	t.Parallel()
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

// TestBIOSDriftRepairedByTask: under policy bios: repair and reboots
// allow, reconciliation repairs a BIOS setting changed at the BMC with
// an apply_baseline task, which stages it and resets the machine: the
// lab's BMC reads the profile's value again, and the next run finds no
// drift.
func TestBIOSDriftRepairedByTask(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	node := redfishNode(t, d)
	withProfile(d, node, func(hw *design.HardwareProfileSpec) {
		hw.BIOS = &design.BIOSSettings{Attributes: map[string]string{"ProcTurboMode": "Enabled"}}
	})
	d.SiteOf(d.Nodes[node]).Spec.Lifecycle.Baseline.Reboots = "allow"
	d.Site.Spec.Reconciliation.Policy = map[string]string{"bios": "repair"}
	env := startEnv(t, d, nil, nil, nil)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Filter: onlyNodes(node)}, record.TaskSucceeded)
	setBIOSAtTheBMC(t, env, node, "ProcTurboMode", "Disabled")
	key := node + "/bios"
	if rep, _ := reconcile(t, e); !slices.Contains(rep.Repaired, key) {
		t.Fatalf("repaired %v, detected %v; want %s repaired", rep.Repaired, rep.Detected, key)
	}
	taskID := applyTaskOf(t, e, node)
	if _, err := e.Wait(t.Context(), taskID); err != nil {
		t.Fatal(err)
	}
	if got, nres, _ := e.Task(t.Context(), taskID); got.Status != record.TaskSucceeded {
		t.Fatalf("apply_baseline: %s %+v", got.Status, nres)
	}
	if v := biosAtTheBMC(t, env, node)["ProcTurboMode"]; v != "Enabled" {
		t.Fatalf("the BMC has ProcTurboMode %v after the repair", v)
	}
	if _, open := reconcile(t, e); open[key].Kind != "" {
		t.Fatalf("drift after the repair: %+v", open[key])
	}
}
