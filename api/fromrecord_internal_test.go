package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// fill sets every field of v (a pointer) to a non-zero value, at any
// depth: two elements in each slice and map, every pointer allocated. n
// numbers the values so that no two fields hold the same one.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, *n, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(v.Index(0), n)
		fill(v.Index(1), n)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, n)
			fill(e, n)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("v%d", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint64, reflect.Uint32:
		v.SetUint(uint64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	default:
		panic(fmt.Sprintf("fill: no value for %s", v.Type()))
	}
}

// sameJSON checks that conv(in) encodes as in does, for in filled at
// every depth and for in's zero value.
func sameJSON[R, W any](t *testing.T, conv func(R) W) {
	t.Helper()
	var full R
	n := 0
	fill(reflect.ValueOf(&full), &n)
	var zero R
	for _, in := range []R{full, zero} {
		want, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(conv(in))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%T -> %T changes the JSON:\n got %s\nwant %s", in, conv(in), got, want)
		}
	}
}

// TestWireRecordsSameJSON: each engine record the API answers, converted
// to its wire type, encodes to the same bytes as the record did (every
// field set at every depth, and none), so a field added to a record and
// not to its wire type fails here; the request types convert back the
// same way.
func TestWireRecordsSameJSON(t *testing.T) {
	sameJSON(t, wireTask)
	sameJSON(t, wireResult)
	sameJSON(t, wireFilter)
	sameJSON(t, wireNodeRecord)
	sameJSON(t, wireRebootstrapped)
	sameJSON(t, wireAsBuilt)
	sameJSON(t, wireEvent)
	sameJSON(t, wireDrift)
	sameJSON(t, wireReconcileStatus)
	sameJSON(t, wireDriftResolved)
	sameJSON(t, wireSweep)
	// A plan's wire form adds changed, nodes_omitted and approve (all
	// omitted when false, 0 and "").
	sameJSON(t, func(p record.Plan) apitypes.Plan { w := wirePlan(p, 0); w.Changed, w.Approve = false, ""; return w })
	sameJSON(t, func(ts []record.Task) []apitypes.Task { return wireTasks(ts) })
	sameJSON(t, func(es []record.Event) []apitypes.Event { return wireEvents(es) })
	// Requests: the wire form the caller sent, as the engine takes it.
	sameJSON(t, recordFilter)
	sameJSON(t, recordOptions)
}

// TestWireRecordsEmptyLists: an empty list stays an empty list ([]) and a
// nil one null, as the record wrote them.
func TestWireRecordsEmptyLists(t *testing.T) {
	for _, evs := range [][]record.Event{nil, {}} {
		want, _ := json.Marshal(evs)
		got, _ := json.Marshal(wireEvents(evs))
		if !bytes.Equal(got, want) {
			t.Errorf("events %#v: got %s, want %s", evs, got, want)
		}
	}
	rec := record.NodeRecord{History: []record.Transition{}}
	want, _ := json.Marshal(rec)
	got, _ := json.Marshal(wireNodeRecord(rec))
	if !bytes.Equal(got, want) {
		t.Errorf("node record: got %s, want %s", got, want)
	}
}
