package lab

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/sim/maas"
)

const floorScale = 0.001

// TestFloorIsAFloor deploys a machine the way the engine does with a
// bootMac (created through the API, never PXE-enlisted) and one that
// PXE-enlists itself, and checks that each machine's floor (the phases it
// waited) is at most the time from its first phase's start to its node
// agent's last report. The old ideal (enlist+commission+deploy, whatever
// the machine waited) is above that for the bootMac machine.
func TestFloorIsAFloor(t *testing.T) {
	for _, pxe := range []bool{false, true} {
		name := map[bool]string{false: "bootMac", true: "PXE-enlisted"}[pxe]
		t.Run(name, func(t *testing.T) {
			api := newIntrospection(t)
			l, m := floorLab(t)
			id := bringToReady(t, l, m, pxe)
			ud := base64.StdEncoding.EncodeToString(userData(api.url+"/", testToken, false))
			if code, body := post(t, l.Info(), "/machines/"+id+"/", "deploy", url.Values{"user_data": {ud}, "distro_series": {"jammy"}}); code != 200 {
				t.Fatalf("deploy: %d %s", code, body)
			}
			waitFor(t, "the node agent", func() bool { return m.Bootstrap().State == BootstrapDone })
			rec := m.Bootstrap()
			tl := m.Timeline().Until(rec.Finished)
			want := []string{maas.PhaseCommission, maas.PhaseDeploy, PhaseBoot}
			if pxe {
				want = append([]string{PhaseEnlist}, want...)
			}
			var got []string
			for _, p := range tl.Phases {
				got = append(got, p.Name)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("phases (-want +got):\n%s", d)
			}
			measured := rec.Finished.Sub(tl.Start())
			if floor := tl.Floor(); floor > measured {
				t.Errorf("floor %v > measured %v (first phase start to the agent's report)", floor, measured)
			}
			if tl.SystemID != id {
				t.Errorf("timeline system ID %q, want %q", tl.SystemID, id)
			}
		})
	}
}

// floorLab is a lab of one generic machine at floorScale with a boot
// delay of 30 s (scaled).
func floorLab(t *testing.T) (*Lab, *Machine) {
	t.Helper()
	l, err := Start(t.Context(), Config{Machines: 1, TimeScale: floorScale, BootDelay: DefaultBootDelay})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l, l.Machines()[0]
}

// bringToReady commissions the machine: created through the API with its
// MAC and BMC (bootMac), or PXE-booted to enlist itself first.
func bringToReady(t *testing.T, l *Lab, m *Machine, pxe bool) string {
	t.Helper()
	info := l.Info()
	var id string
	if pxe {
		m.SetBootDevice("pxe", false, true)
		m.PowerOn()
		waitFor(t, "enlistment", func() bool { id = systemID(l, m); return id != "" })
		if code, body := post(t, info, "/machines/"+id+"/", "commission", nil); code != 200 {
			t.Fatalf("commission: %d %s", code, body)
		}
	} else {
		form := url.Values{"mac_addresses": {m.Hardware.NICs[0].MAC}, "power_type": {"ipmi"}, "commission": {"true"}}
		for k, v := range l.powerParams(m) {
			form.Set("power_parameters_"+k, v)
		}
		code, body := post(t, info, "/machines/", "", form)
		var created struct {
			SystemID string `json:"system_id"`
		}
		if err := json.Unmarshal([]byte(body), &created); code != 200 || err != nil {
			t.Fatalf("create: %d %s", code, body)
		}
		id = created.SystemID
	}
	waitFor(t, "Ready", func() bool { return status(l, id) == "Ready" })
	return id
}

func systemID(l *Lab, m *Machine) string {
	for _, ms := range l.MAAS.Machines() {
		for _, mac := range ms.MACs {
			if mac == m.Hardware.NICs[0].MAC {
				return ms.SystemID
			}
		}
	}
	return ""
}

func status(l *Lab, id string) string {
	for _, ms := range l.MAAS.Machines() {
		if ms.SystemID == id {
			return ms.Status
		}
	}
	return ""
}

func TestTimelineFloor(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tl := Timeline{Phases: []maas.Phase{
		{Name: PhaseBoot, Start: t0.Add(5 * time.Second), End: t0.Add(7 * time.Second), Nominal: time.Second},
		{Name: maas.PhaseDeploy, Start: t0, End: t0.Add(4 * time.Second), Nominal: 3 * time.Second},
	}}
	if tl.Floor() != 4*time.Second || !tl.Start().Equal(t0) {
		t.Errorf("floor %v, start %v", tl.Floor(), tl.Start())
	}
	if u := tl.Until(t0.Add(6 * time.Second)); len(u.Phases) != 1 || u.Floor() != 3*time.Second {
		t.Errorf("until: %+v", u)
	}
}
