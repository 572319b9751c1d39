package maas

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/canonical/gomaasclient/entity"
)

// TestScriptsThroughGomaasclient: the lab's scripts/ as the Terraform
// provider's client reads them (MAAS's NodeScriptsHandler: type,
// hardware_type and filters narrow the list; a script by name; 404 for
// none), and a commission's script choice checked as MAAS's
// CommissionForm checks it.
func TestScriptsThroughGomaasclient(t *testing.T) {
	l := newSimLab(t, nil)
	gc := l.gomaasclient()
	all, err := gc.NodeScripts.Get(&entity.NodeScriptReadParams{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]entity.NodeScript{}
	for _, s := range all {
		byName[s.Name] = s
	}
	if s := byName["50-maas-01-commissioning"]; s.Type != entity.ScriptTypeCommissioning || len(s.History) != 1 || s.History[0].Created == "" || !s.Default {
		t.Errorf("50-maas-01-commissioning: %+v", s)
	}
	tests, err := gc.NodeScripts.Get(&entity.NodeScriptReadParams{Type: "testing", Filters: "storage"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range tests {
		if s.Type != entity.ScriptTypeTesting || !slices.Contains(s.Tags, "storage") {
			t.Errorf("type=testing&filters=storage gave %s (%d, %v)", s.Name, s.Type, s.Tags)
		}
		names = append(names, s.Name)
	}
	if !slices.Contains(names, "smartctl-validate") || !slices.Contains(names, "fio") || slices.Contains(names, "memtester") {
		t.Errorf("storage tests: %v", names)
	}
	one, err := gc.NodeScript.Get("memtester", false)
	if err != nil || one.Name != "memtester" || one.HardwareType != entity.ScriptHardwareTypeMemory || one.TypeName != "Testing script" {
		t.Errorf("memtester: %+v %v", one, err)
	}
	if _, err := gc.NodeScript.Get("no-such-script", false); err == nil {
		t.Error("a script that does not exist was read")
	}
	if r := l.do("GET", "/scripts/?type=bogus", nil); r.code != http.StatusBadRequest {
		t.Errorf("an unknown type: %s", r)
	}

	id := l.enlist(1, "scripted")
	r := l.do("POST", "/machines/"+id+"/?op=commission", url.Values{"commissioning_scripts": {"no-such"}, "testing_scripts": {"none"}})
	if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "Select a valid choice. no-such is not one of the available choices.") {
		t.Errorf("an unknown commissioning script: %s", r)
	}
	if r := l.do("POST", "/machines/"+id+"/?op=commission", url.Values{"testing_scripts": {"50-maas-01-commissioning"}}); r.code != http.StatusBadRequest {
		t.Errorf("a commissioning script as a test: %s", r)
	}
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=commission", url.Values{"commissioning_scripts": {"maas-lshw,node"}, "testing_scripts": {"smartctl-validate,memory"}}, nil)
	c := l.s.LastCommission(id)
	if !slices.Equal(c.Commissioning, []string{"maas-lshw", "node"}) || !slices.Equal(c.Testing, []string{"smartctl-validate", "memory"}) || c.SkipBMCConfig {
		t.Errorf("the commission: %+v", c)
	}
}
