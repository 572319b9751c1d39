package storedrec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

type inner struct {
	VolumeGroup string `json:"volume_group,omitempty"`
	MemoryMiB   int    `json:"memory_mib"`
}

type Base struct {
	MachineID string `json:"machine_id"`
}

type outer struct {
	Base
	ID        string              // untagged: the Go name
	LastSeen  time.Time           `json:"last_seen"`
	Inner     *inner              `json:"inner_thing"`
	List      []inner             `json:"list"`
	ByName    map[string]inner    `json:"by_name"`
	Labels    map[string]string   `json:"labels"`
	Nested    map[string][]*inner `json:"nested"`
	Anything  any                 `json:"anything"`
	Skipped   string              `json:"-"`
	BigNumber int64               `json:"big_number"`
}

// old is what the previous release wrote for outer: camelCase names,
// map keys (which are data) with capitals of their own.
const old = `{"machineId":"m-1","ID":"id-1","lastSeen":"2026-01-02T03:04:05Z",
 "innerThing":{"volumeGroup":"vg0","memoryMiB":512},
 "list":[{"volumeGroup":"a"},{"memoryMiB":1}],
 "byName":{"NodeA":{"volumeGroup":"b"}},
 "labels":{"zoneName":"Z1"},
 "nested":{"K":[{"memoryMiB":7},null]},
 "anything":{"keepMe":1},
 "bigNumber":9007199254740993}`

func want() outer {
	return outer{Base: Base{MachineID: "m-1"}, ID: "id-1", LastSeen: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Inner:     &inner{VolumeGroup: "vg0", MemoryMiB: 512},
		List:      []inner{{VolumeGroup: "a"}, {MemoryMiB: 1}},
		ByName:    map[string]inner{"NodeA": {VolumeGroup: "b"}},
		Labels:    map[string]string{"zoneName": "Z1"},
		Nested:    map[string][]*inner{"K": {{MemoryMiB: 7}, nil}},
		Anything:  map[string]any{"keepMe": float64(1)},
		BigNumber: 9007199254740993}
}

func TestUnmarshalOldNames(t *testing.T) {
	var got outer
	if err := legacyUnmarshal([]byte(old), &got); err != nil {
		t.Fatal(err)
	}
	if w := want(); !reflect.DeepEqual(got, w) {
		t.Fatalf("decoded\n %+v\nwant\n %+v", got, w)
	}
}

func TestUpgradeIdempotent(t *testing.T) {
	typ := reflect.TypeFor[outer]()
	once, err := Upgrade([]byte(old), typ)
	if err != nil {
		t.Fatal(err)
	}
	twice, err := Upgrade(once, typ)
	if err != nil {
		t.Fatal(err)
	}
	if string(once) != string(twice) {
		t.Fatalf("a second upgrade changed the data:\n%s\n%s", once, twice)
	}
	// Map keys stay as they were; the interface's keys too.
	for _, k := range []string{`"NodeA"`, `"zoneName"`, `"keepMe"`, `"machine_id"`, `"memory_mib"`, `"inner_thing"`} {
		if !strings.Contains(string(once), k) {
			t.Errorf("upgraded data lacks %s: %s", k, once)
		}
	}
	for _, k := range []string{`"machineId"`, `"memoryMiB"`, `"volumeGroup"`, `"innerThing"`} {
		if strings.Contains(string(once), k) {
			t.Errorf("upgraded data still has %s: %s", k, once)
		}
	}
}

func TestUpgradeLeavesNewDataAlone(t *testing.T) {
	cur := []byte(`{"machine_id":"m","list":[{"volume_group":"a"}],"labels":{"x":"y"}}`)
	got, err := Upgrade(cur, reflect.TypeFor[outer]())
	if err != nil {
		t.Fatal(err)
	}
	if &got[0] != &cur[0] {
		t.Errorf("data without upper-case keys was copied: %s", got)
	}
	// Upper case only in values and strings holding quotes: no key to rename.
	vals := []byte(`{"machine_id":"ABC \"Q\": x","labels":{"k":"V"}}`)
	if hasUpperKey(vals) {
		t.Errorf("hasUpperKey(%s) = true, want false", vals)
	}
	if !hasUpperKey([]byte(`{"a":{"B" : 1}}`)) {
		t.Error("hasUpperKey missed a key")
	}
}

func TestNewNameWins(t *testing.T) {
	// A record holding both spellings keeps the current one.
	var got outer
	if err := legacyUnmarshal([]byte(`{"machineId":"old","machine_id":"new"}`), &got); err != nil {
		t.Fatal(err)
	}
	if got.MachineID != "new" {
		t.Errorf("machine ID %q, want new", got.MachineID)
	}
	if err := legacyUnmarshal([]byte(`{"machineId":`), &got); err == nil {
		t.Error("truncated JSON decoded without error")
	}
}

// legacyUnmarshal decodes data into v after the legacy step.
func legacyUnmarshal(data []byte, v any) error {
	up, err := Upgrade(data, reflect.TypeOf(v).Elem())
	if err != nil {
		return err
	}
	return json.Unmarshal(up, v)
}
