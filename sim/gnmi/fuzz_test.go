package gnmi

import (
	"reflect"
	"testing"
)

// FuzzParsePath: any text either reads as a path that renders back to
// one reading the same, or is refused; never a panic.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/interfaces/interface[name=Ethernet1/1]/config/mtu", "/a[k=v\\]]/b", "/", "a[x=1][y=2]", "/a[k=]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			return
		}
		if len(p.GetElem()) > maxPathElems {
			t.Fatalf("%q: %d elements", s, len(p.GetElem()))
		}
		for _, e := range p.GetElem() {
			if e.GetName() == "" {
				t.Fatalf("%q: an empty element", s)
			}
		}
	})
}

// FuzzTamper: any path and JSON value either change a switch within
// its rules, or are refused and change nothing; never a panic.
func FuzzTamper(f *testing.F) {
	f.Add("/interfaces/interface[name=p1]/ethernet/switched-vlan/config", `{"access-vlan": 42}`)
	f.Add("/interfaces/interface[name=p1]/config", `{"openconfig-interfaces:mtu": 9000}`)
	f.Add("/network-instances/network-instance[name=default]/vlans/vlan[vlan-id=7]", `{"config":{"vlan-id":7}}`)
	f.Add("/interfaces", `{"interface":[{"name":"po1","aggregation":{"config":{"lag-type":"LACP"}}}]}`)
	f.Add("/", `{"lacp":{"interfaces":{"interface":[{"name":"p1"}]}}}`)
	f.Add("/interfaces/interface[name=p1]/ethernet/switched-vlan/config/trunk-vlans", `[1, "2", 3.5]`)
	f.Fuzz(func(t *testing.T, path, value string) {
		tg := &Target{cfg: Config{MaxVLAN: 100, Strict: true}, switches: map[string]*switchState{}}
		if err := tg.AddSwitch("sw", "p1", "p2"); err != nil {
			t.Fatal(err)
		}
		before := clone(tg.switches["sw"].tree)
		if err := tg.Tamper("sw", path, value); err != nil {
			if !reflect.DeepEqual(before, tg.switches["sw"].tree) {
				t.Fatalf("a refused change (%v) changed the switch", err)
			}
			return
		}
		m, err := parseModel(tg.switches["sw"].tree)
		if err != nil {
			t.Fatalf("kept a tree that does not read: %v", err)
		}
		if err := m.check("sw", tg.switches["sw"].ports, 100, true); err != nil {
			t.Fatalf("kept a tree the rules refuse: %v", err)
		}
		for _, p := range []string{"p1", "p2"} {
			if _, err := tg.Port("sw", p); err != nil {
				t.Fatalf("port %s gone: %v", p, err)
			}
		}
	})
}
