package introspection

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

var recordSamples = []string{
	`{}`,
	`{"node":"n1","deployment":"1","revision":"abc","issued":"2026-11-23T16:33:00.123456789Z"}`,
	`{"node":"n1","deployment":"1","revision":"abc","issued":"2026-11-23T16:33:00Z","issue":12}`,
	`{"node":"r01-cmp01","deployment":"1","revision":"` + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" + `"}`,
	`{"issue":3,"node":"x"}`,
	`{"node":"a","node":"b"}`,
	`{"Node":"a"}`,
	`{"node":"a\u0041"}`,
	`{"node":"é"}`,
	`{"node": "a"}`,
	`{"node":"a"} `,
	`{"node":"a",}`,
	`{"node":1}`,
	`{"node":null}`,
	`{"issue":-1}`,
	`{"issue":01}`,
	`{"issue":1.5}`,
	`{"issue":1e2}`,
	`{"issue":99999999999999999999}`,
	`{"issued":"yesterday"}`,
	`{"issued":"2026-11-23T16:33:00+01:00"}`,
	`{"other":"x"}`,
	`{"node":"a"`,
	`[]`,
	``,
	`{"node":"a"}x`,
}

func sameDecode(t *testing.T, s string) {
	t.Helper()
	var got, want tokenRecord
	errGot := decodeRecord([]byte(s), &got)
	errWant := json.Unmarshal([]byte(s), &want)
	if (errGot == nil) != (errWant == nil) {
		t.Fatalf("%q: error %v, json.Unmarshal %v", s, errGot, errWant)
	}
	if errGot == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %+v, json.Unmarshal %+v", s, got, want)
	}
}

func TestDecodeRecord(t *testing.T) {
	for _, s := range recordSamples {
		sameDecode(t, s)
	}
	// What json.Marshal writes is read by hand.
	rec := tokenRecord{Node: "n000001", Deployment: "1", Revision: "abc", Issued: time.Now().UTC(), Issue: 2}
	b, _ := json.Marshal(rec)
	var got tokenRecord
	if !decodeRecordFast(b, &got) || !got.Issued.Equal(rec.Issued) || got.Node != rec.Node || got.Issue != 2 {
		t.Errorf("%s: read by hand as %+v", b, got)
	}
	// The record is reset: a fallback decode starts from nothing.
	got = tokenRecord{Node: "stale", Issue: 9}
	if err := decodeRecord([]byte(`{"Deployment":"2"}`), &got); err != nil || got.Node != "" || got.Issue != 0 || got.Deployment != "2" {
		t.Errorf("fallback: %+v %v", got, err)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, s := range recordSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { sameDecode(t, s) })
}
