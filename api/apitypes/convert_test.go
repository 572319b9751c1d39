package apitypes_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/onboarding"
	"github.com/slipway-dev/slipway/siteregistry"
)

// fill sets every exported field of v (a pointer) at every depth: a
// distinct string or number, true, one item in each list and map, a
// value behind each pointer. A field the wire type lacks then shows.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("v%d", *n))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), n)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, n)
		fill(e, n)
		v.SetMapIndex(k, e)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 0, 0, *n, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	}
}

func filled[T any]() T {
	var v T
	n := 0
	fill(reflect.ValueOf(&v).Elem(), &n)
	return v
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSDKAndRegistryWireJSON: the driver SDK's, the site registry's and
// the onboardings' types, every field filled, read the same on the wire as they marshal
// themselves (the API's JSON did not change), and those the API reads
// convert back whole.
func TestSDKAndRegistryWireJSON(t *testing.T) {
	same := func(name string, sdk, wire any) {
		if a, b := marshal(t, sdk), marshal(t, wire); a != b {
			t.Errorf("%s on the wire differs from its own JSON:\n%s\n%s", name, a, b)
		}
	}
	inv := filled[drivers.Inventory]()
	same("Inventory", inv, apitypes.FromInventory(inv))
	if d := cmp.Diff(inv, apitypes.FromInventory(inv).ToDriver()); d != "" {
		t.Errorf("Inventory round trip (-sdk +back):\n%s", d)
	}
	si := filled[drivers.SiteInfo]()
	same("SiteInfo", si, apitypes.FromSiteInfo(si))
	rec := filled[siteregistry.Record]()
	same("Record", rec, apitypes.FromRecord(rec))
	prof := filled[siteregistry.Profile]()
	same("Profile", prof, apitypes.FromProfile(prof))
	if d := cmp.Diff(prof.ProfileSpec, apitypes.FromProfileSpec(prof.ProfileSpec).ToRegistry()); d != "" {
		t.Errorf("ProfileSpec round trip (-registry +back):\n%s", d)
	}
	pol := filled[siteregistry.Policy]()
	if d := cmp.Diff(pol, apitypes.FromPolicy(pol).ToRegistry()); d != "" {
		t.Errorf("Policy round trip (-registry +back):\n%s", d)
	}
	as := filled[siteregistry.RoCEAssignment]()
	same("RoCEAssignment", as, apitypes.FromRoCEAssignment(as))
	if d := cmp.Diff(as.RoCEItem, apitypes.FromRoCEItem(as.RoCEItem).ToRegistry()); d != "" {
		t.Errorf("RoCEItem round trip (-registry +back):\n%s", d)
	}
	rf := filled[siteregistry.RoCEFinding]()
	same("RoCEFinding", rf, apitypes.FromRoCEFinding(rf))
	ob := filled[onboarding.Record]()
	same("OnboardingRecord", ob, apitypes.FromOnboardingRecord(ob))
	if d := cmp.Diff(ob.Request, apitypes.FromOnboardingBatch(ob.Request).ToOnboarding()); d != "" {
		t.Errorf("onboarding Request round trip (-record +back):\n%s", d)
	}
	if got := apitypes.FromOnboardingRecord(ob).Nodes(); !cmp.Equal(got, ob.Nodes()) {
		t.Errorf("OnboardingRecord.Nodes = %q, want %q", got, ob.Nodes())
	}
}

// schemaNames maps each JSON name of t's struct fields, at every depth,
// to the design schema's name (its yaml tag, else the JSON name).
func schemaNames(t reflect.Type, out map[string]string, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		j, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		y, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if j != "" && j != "-" {
			if y == "" {
				y = j
			}
			out[j] = y
		}
		schemaNames(f.Type, out, seen)
	}
}

// renamed is v (decoded JSON) with its field names renamed by names; a
// map of data (labels, kernel parameters) has no key names holds.
func renamed(v any, names map[string]string) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if n, ok := names[k]; ok {
				k = n
			}
			out[k] = renamed(x, names)
		}
		return out
	case []any:
		for i := range v {
			v[i] = renamed(v[i], names)
		}
	}
	return v
}

// TestDesignWireNames: a resolved node, every field filled, reads on the
// wire as the design marshals it with each name the schema's (the yaml
// tags): no field is lost, none keeps its stored snake_case name.
func TestDesignWireNames(t *testing.T) {
	rn := filled[design.RenderedNode]()
	names := map[string]string{}
	schemaNames(reflect.TypeFor[design.RenderedNode](), names, map[reflect.Type]bool{})
	var stored, wire any
	if err := json.Unmarshal([]byte(marshal(t, rn)), &stored); err != nil {
		t.Fatal(err)
	}
	w := marshal(t, apitypes.FromRenderedNode(rn))
	if err := json.Unmarshal([]byte(w), &wire); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(renamed(stored, names), wire); d != "" {
		t.Errorf("the wire's resolved node is not the design's in the schema's names (-want +wire):\n%s", d)
	}
	for _, name := range []string{`"hostProfile"`, `"kernelParams"`, `"ownerData"`, `"apiVersion"`} {
		if !strings.Contains(w, name) {
			t.Errorf("the wire's resolved node lacks %s", name)
		}
	}
	fs := filled[design.Findings]()
	if d := cmp.Diff(fs, apitypes.ToDesignFindings(apitypes.FromFindings(fs))); d != "" || marshal(t, fs) != marshal(t, apitypes.FromFindings(fs)) {
		t.Errorf("findings differ on the wire or back (-design +back):\n%s", d)
	}
	df := filled[design.Diff]()
	if d := cmp.Diff(df, apitypes.FromDiff(df).ToDesign()); d != "" || marshal(t, df) != marshal(t, apitypes.FromDiff(df)) {
		t.Errorf("a diff differs on the wire or back (-design +back):\n%s", d)
	}
}

// TestDiffPathsInSchemaNames: a diff's paths name the changed fields of a
// design object as the design schema does (bootMac, kernelParams), as the
// object itself is printed; a map's keys (a kernel parameter) are data
// and keep their spelling.
func TestDiffPathsInSchemaNames(t *testing.T) {
	d := designtest.Example(t)
	before, _, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	n := d.Nodes["r02-gpu02"]
	if n == nil || n.Spec.Platform.KernelParams["intel_iommu"] == "" {
		t.Fatal("the example's r02-gpu02 has no intel_iommu kernel parameter to change")
	}
	n.Spec.BootMAC = "52:54:00:ff:ff:01"
	n.Spec.Platform.KernelParams = maps.Clone(n.Spec.Platform.KernelParams) // shared with the profile's other nodes
	n.Spec.Platform.KernelParams["intel_iommu"] = "off"
	after, _, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	df, err := design.DiffCanonical(before, after)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range apitypes.FromDiff(df).Kinds {
		for _, c := range k.Changed {
			got = append(got, c.Paths...)
		}
	}
	want := []string{"spec.bootMac", "spec.platform.kernelParams.intel_iommu"}
	if !cmp.Equal(got, want) {
		t.Errorf("the diff's paths: %q, want %q", got, want)
	}
}
