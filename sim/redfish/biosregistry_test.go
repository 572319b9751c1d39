package redfish

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stmcginnis/gofish"
)

// getDoc reads a resource as JSON.
func getDoc(t *testing.T, c *gofish.APIClient, p string) map[string]any {
	t.Helper()
	resp, err := c.Get(p)
	if err != nil {
		t.Fatalf("GET %s: %v", p, err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("GET %s: %v", p, err)
	}
	return doc
}

// TestBIOSRegistry: the Bios names its attribute registry, the service
// serves it (each lab attribute with its type, and the values an
// enumeration allows), and a PATCH of a value outside the list, of a
// number out of bounds or of an attribute the registry holds read-only is
// refused with 400 naming it, nothing staged: "Enabeld" is not applied.
func TestBIOSRegistry(t *testing.T) {
	s, _, ca := start(t, Options{})
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	s.RefuseBIOS("AdminPhone")
	name, _ := getDoc(t, c, biosPath)["AttributeRegistry"].(string)
	file := getDoc(t, c, registriesPath+"/"+name)
	locs, _ := file["Location"].([]any)
	if len(locs) == 0 {
		t.Fatalf("registry file %s has no Location: %v", name, file)
	}
	uri, _ := locs[0].(map[string]any)["Uri"].(string)
	reg := getDoc(t, c, uri)
	entries, _ := reg["RegistryEntries"].(map[string]any)
	attrs, _ := entries["Attributes"].([]any)
	byName := map[string]map[string]any{}
	for _, a := range attrs {
		m := a.(map[string]any)
		byName[m["AttributeName"].(string)] = m
	}
	for k := range mockAttributes() {
		if byName[k] == nil {
			t.Errorf("the registry lacks %s", k)
		}
	}
	turbo := byName["ProcTurboMode"]
	var values []string
	for _, v := range turbo["Value"].([]any) {
		values = append(values, v.(map[string]any)["ValueName"].(string))
	}
	if turbo["Type"] != "Enumeration" || !slices.Contains(values, "Disabled") || slices.Contains(values, "Enabeld") {
		t.Errorf("ProcTurboMode in the registry: %v", turbo)
	}
	if byName["AdminPhone"]["ReadOnly"] != true {
		t.Errorf("AdminPhone refused yet not read-only in the registry: %v", byName["AdminPhone"])
	}
	for _, tc := range []struct {
		attrs map[string]any
		want  string
	}{
		{map[string]any{"ProcTurboMode": "Enabeld"}, "PropertyValueNotInList"},
		{map[string]any{"ProcCoreDisable": 4096}, "PropertyValueOutOfRange"},
		{map[string]any{"AdminPhone": "1"}, "PropertyNotWritable"},
		{map[string]any{"ProcTurboMode": "Disabled", "UsbControl": "Off"}, "PropertyValueNotInList"},
	} {
		resp, err := c.Patch(settingsPath, map[string]any{"Attributes": tc.attrs})
		if err == nil {
			resp.Body.Close()
			t.Errorf("%v staged", tc.attrs)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "400") {
			t.Errorf("%v: %v, want 400 %s", tc.attrs, err, tc.want)
		}
	}
	if _, pending := s.BIOS(); len(pending) != 0 {
		t.Fatalf("staged %v", pending)
	}
	resp, err := c.Patch(settingsPath, map[string]any{"Attributes": map[string]any{"ProcTurboMode": "Disabled", "ProcCoreDisable": 2}})
	if err != nil {
		t.Fatalf("a valid change: %v", err)
	}
	resp.Body.Close()
	if _, pending := s.BIOS(); len(pending) != 2 {
		t.Fatalf("staged %v, want both", pending)
	}
}
