package storedrec_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	// The packages that register the kinds of stored records.
	_ "github.com/slipway-dev/slipway/api"
	_ "github.com/slipway-dev/slipway/auth"
	_ "github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/storedrec"
	_ "github.com/slipway-dev/slipway/orchestrator"
)

func fixture(t *testing.T, dir, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", dir, file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func kind(t *testing.T, name string) *storedrec.Kind {
	t.Helper()
	k := storedrec.Lookup(name)
	if k == nil {
		t.Fatalf("no kind of stored record is called %q (registered: %v)", name, storedrec.Kinds())
	}
	return k
}

// TestReadsCurrentReleaseRecords: each kind of record as the release
// before schema versions wrote it (testdata/current, no "v") reads back
// field for field, and this release's encoding of it is those bytes with
// the version in front.
func TestReadsCurrentReleaseRecords(t *testing.T) {
	for _, fk := range fixtureKinds {
		t.Run(fk.file, func(t *testing.T) {
			k, stored := kind(t, fk.kind), fixture(t, "current", fk.file)
			got := reflect.New(fk.typ)
			if err := k.Decode("k1", stored, got.Interface()); err != nil {
				t.Fatal(err)
			}
			again, _ := json.Marshal(got.Interface())
			if string(again) != compact(t, stored) {
				t.Errorf("read back as\n %s\nwant\n %s", again, compact(t, stored))
			}
			enc, err := k.Encode(got.Interface())
			want := `{"v":2,` + compact(t, stored)[1:]
			if err != nil || string(enc) != want {
				t.Errorf("encoded as %s (%v)\nwant %s", enc, err, want)
			}
		})
	}
}

// TestStoredFormUnchanged pins each kind's stored JSON: it fails when a
// field of a stored type, or of a driver SDK, design or API type a
// stored one holds (drivers.Inventory, design.NodeFilter, the audit
// record), is renamed, which would change what is on disk. Such a change
// needs a new schema version and a Step, then -update.
func TestStoredFormUnchanged(t *testing.T) {
	for _, fk := range fixtureKinds {
		raw, err := json.Marshal(fk.value())
		if err != nil {
			t.Fatal(err)
		}
		if want := compact(t, fixture(t, "current", fk.file)); string(raw) != want {
			t.Errorf("%s: the stored form of %s changed:\n got %s\nwant %s", fk.file, fk.typ, raw, want)
		}
	}
}

// TestReadsVersion1Records: each kind of record in the camelCase names
// of the releases before snake_case (testdata/v1) reads as its current
// form does.
func TestReadsVersion1Records(t *testing.T) {
	for _, fk := range fixtureKinds {
		t.Run(fk.file, func(t *testing.T) {
			k, old := kind(t, fk.kind), fixture(t, "v1", fk.file)
			if bytes.Equal(old, fixture(t, "current", fk.file)) && fk.file != "reconciliation.json" && fk.file != "task_node.json" {
				t.Fatal("the v1 fixture spells no field the old way")
			}
			fromOld, fromCur := reflect.New(fk.typ), reflect.New(fk.typ)
			if err := k.Decode("k1", old, fromOld.Interface()); err != nil {
				t.Fatal(err)
			}
			if err := k.Decode("k1", fixture(t, "current", fk.file), fromCur.Interface()); err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(fromOld.Interface())
			b, _ := json.Marshal(fromCur.Interface())
			if string(a) != string(b) {
				t.Errorf("version 1 record reads as\n %s\nwant\n %s", a, b)
			}
		})
	}
}

// TestRefusesNewerVersion: a record of a version newer than the kind's
// is refused, naming the kind, the key and the version.
func TestRefusesNewerVersion(t *testing.T) {
	k := kind(t, "node record")
	var v struct{ Name string }
	err := k.Decode("r01-cmp01", []byte(`{"v":3,"name":"r01-cmp01"}`), &v)
	if !errors.Is(err, storedrec.ErrNewerVersion) || v.Name != "" {
		t.Fatalf("version 3: %v (decoded %+v)", err, v)
	}
	for _, s := range []string{"node record", `"r01-cmp01"`, "version 3", "up to version 2"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %s", err, s)
		}
	}
}

func TestVersion(t *testing.T) {
	for in, want := range map[string]int{`{"v":2,"a":1}`: 2, ` { "v" : 7 }`: 7, `{"a":1,"v":3}`: 1, `{}`: 1, `"2026-01-02T03:04:05Z"`: 1, ``: 1, `{"vv":4}`: 1} {
		if got, err := storedrec.Version([]byte(in)); err != nil || got != want {
			t.Errorf("Version(%s) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{`{"v":"2"}`, `{"v":-1}`, `{"v":0}`, `{"v" 2}`, `{"v":12345678901}`} {
		if got, err := storedrec.Version([]byte(in)); err == nil {
			t.Errorf("Version(%s) = %d, want an error", in, got)
		}
	}
}

var stepRuns int

// TestSteps: a kind with a later version converts an old record through
// every step, and writes its own version.
func TestSteps(t *testing.T) {
	type rec struct {
		MachineID string `json:"machine_id"`
		Rack      string `json:"rack"`
	}
	stepRuns++ // a name per run: -count=N registers it N times
	k := storedrec.NewKind(fmt.Sprint("test record with steps ", stepRuns), reflect.TypeFor[rec]()).
		Step(2, func(b []byte) ([]byte, error) { return bytes.Replace(b, []byte(`"row"`), []byte(`"rack"`), 1), nil })
	if k.Version() != 3 {
		t.Fatalf("version %d, want 3", k.Version())
	}
	for in, want := range map[string]rec{
		`{"machineId":"m","row":"r1"}`:         {"m", "r1"}, // version 1: both steps
		`{"v":2,"machine_id":"m","row":"r2"}`:  {"m", "r2"},
		`{"v":3,"machine_id":"m","rack":"r3"}`: {"m", "r3"},
	} {
		var got rec
		if err := k.Decode("x", []byte(in), &got); err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", in, got, err, want)
		}
	}
	if enc, _ := k.Encode(rec{"m", "r"}); string(enc) != `{"v":3,"machine_id":"m","rack":"r"}` {
		t.Errorf("encoded %s", enc)
	}
	if enc, _ := k.Encode(struct{}{}); string(enc) != `{"v":3}` {
		t.Errorf("empty object encoded %s", enc)
	}
	if enc, _ := k.Encode("plain"); string(enc) != `"plain"` {
		t.Errorf("a string encoded %s", enc)
	}
}

func TestNewKindRefuses(t *testing.T) {
	type withV struct {
		V int `json:"v"`
	}
	for name, f := range map[string]func(){
		"a field named v":   func() { storedrec.NewKind("test record with v", reflect.TypeFor[withV]()) },
		"a name used twice": func() { storedrec.NewKind("node record", reflect.TypeFor[struct{ A int }]()) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewKind with %s did not panic", name)
				}
			}()
			f()
		}()
	}
}

// TestPreviousReleaseReadsVersion2: the release before versions read
// every record with the type-led rename and encoding/json (as Upgrade
// and json.Unmarshal here), so it reads what this release writes (it
// ignores "v"): stepping back one release keeps the state readable.
func TestPreviousReleaseReadsVersion2(t *testing.T) {
	for _, fk := range fixtureKinds {
		enc, err := kind(t, fk.kind).Encode(fk.value())
		if err != nil {
			t.Fatal(err)
		}
		up, err := storedrec.Upgrade(enc, fk.typ)
		got := reflect.New(fk.typ)
		if err == nil {
			err = json.Unmarshal(up, got.Interface())
		}
		again, _ := json.Marshal(got.Interface())
		if want := compact(t, fixture(t, "current", fk.file)); err != nil || string(again) != want {
			t.Errorf("%s: the previous release reads %s (%v)\nwant %s", fk.file, again, err, want)
		}
	}
}
