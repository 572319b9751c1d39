package redfish

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequests sends arbitrary bodies to every writable resource: the
// service answers each with a status, never a panic, and nothing it
// stages breaks a later read.
func FuzzRequests(f *testing.F) {
	f.Add("PATCH", systemPath, `{"Boot":{"BootSourceOverrideTarget":"Pxe","BootSourceOverrideEnabled":"Once"}}`)
	f.Add("POST", systemPath+"/Actions/ComputerSystem.Reset", `{"ResetType":"ForceRestart"}`)
	f.Add("PATCH", settingsPath, `{"Attributes":{"ProcCoreDisable":3}}`)
	f.Add("POST", mediaPath+"/Actions/VirtualMedia.InsertMedia", `{"Image":"http://h/x.iso"}`)
	f.Add("POST", sessionsPath, `{"UserName":"admin","Password":"x"}`)
	f.Add("POST", simpleUpdatePath, `{"ImageURI":"http://127.0.0.1:1/bios.bin","Targets":["/redfish/v1/UpdateService/FirmwareInventory/BIOS"]}`)
	f.Add("POST", volumesPath, `{"RAIDType":"RAID1","Links":{"Drives":[{"@odata.id":"`+controllerPath+`/Drives/Disk.Bay.0"}]}}`)
	f.Fuzz(func(t *testing.T, method, path, body string) {
		s := &Service{o: Options{Username: user, Password: pass, SessionTimeout: 60e9, MaxSessions: 2},
			m: &BareMachine{}, sessions: map[string]*session{}}
		s.stats.Resets = map[string]uint64{}
		s.state.bios, s.state.pending = mockAttributes(), map[string]any{}
		s.lab = newLab(s.o)
		s.lab.client = &http.Client{Transport: noNetwork{}} // an ImageURI the fuzzer wrote is never fetched
		defer s.lab.stop()
		h := s.handler()
		for _, m := range []string{method, "GET"} {
			req, err := http.NewRequest(m, "https://127.0.0.1"+path, strings.NewReader(body))
			if err != nil {
				return
			}
			req.SetBasicAuth(user, pass)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code < 200 || rec.Code > 599 {
				t.Fatalf("%s %s: status %d", m, path, rec.Code)
			}
		}
		for _, p := range []string{systemPath, biosPath, settingsPath, mediaPath, updateServicePath, inventoryPath, volumesPath, tasksPath} {
			req, _ := http.NewRequest("GET", "https://127.0.0.1"+p, nil)
			req.SetBasicAuth(user, pass)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("GET %s after %s %s: %d", p, method, path, rec.Code)
			}
		}
	})
}

// noNetwork refuses every request (the fuzzed service's image downloads).
type noNetwork struct{}

func (noNetwork) RoundTrip(*http.Request) (*http.Response, error) { return nil, http.ErrNotSupported }
