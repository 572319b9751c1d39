package lab

import (
	"testing"
)

// TestPowerCycleAppliesPending: BIOS settings and firmware staged on a
// machine's Redfish BMC take effect at the machine's next boot whatever
// started it (here its IPMI side's power cycle), as on a real server;
// they took effect only at a Redfish reset.
func TestPowerCycleAppliesPending(t *testing.T) {
	l, err := Start(t.Context(), Config{Design: exampleDesign(t), TimeScale: 0.0005, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := redfishMachines(t, l)[0]
	m.mu.Lock()
	rf := m.rf
	m.mu.Unlock()
	d, b := redfishDriver(t, l, m)
	if r, err := d.ApplyBIOS(t.Context(), b, map[string]string{"ProcHyperthreading": "Disabled"}); err != nil || r.Status == "failed" {
		t.Fatalf("ApplyBIOS: %+v %v", r, err)
	}
	if _, pending := rf.BIOS(); pending["ProcHyperthreading"] != "Disabled" {
		t.Fatalf("not staged: %v", pending)
	}
	m.PowerCycle() // what the machine's IPMI BMC does for chassis power cycle
	cur, pending := rf.BIOS()
	if len(pending) != 0 || cur["ProcHyperthreading"] != "Disabled" {
		t.Fatalf("after a power cycle: in effect %v, pending %v", cur["ProcHyperthreading"], pending)
	}
}
