package statestore_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

type siteRec struct {
	ID        string `json:"id"`
	MachineID string `json:"machine_id"`
}

var siteRecKind = storedrec.NewKind("test site", reflect.TypeFor[siteRec]())

// TestListJSONVersions: ListJSON reads records of every version it knows
// (none: either spelling; 2) and refuses, naming the record, one a newer
// release wrote; a record that does not decode is named as damaged.
func TestListJSONVersions(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	if _, err := s.Write(ctx, statestore.Put("sites", "a", []byte(`{"id":"a","machineId":"m1"}`)),
		statestore.Put("sites", "b", []byte(`{"id":"b","machine_id":"m2"}`)),
		statestore.Put("sites", "c", []byte(`{"v":2,"id":"c","machine_id":"m3"}`))); err != nil {
		t.Fatal(err)
	}
	got, err := statestore.ListJSON[siteRec](ctx, s, siteRecKind, "sites", "")
	want := []siteRec{{"a", "m1"}, {"b", "m2"}, {"c", "m3"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ListJSON: %+v %v, want %+v", got, err, want)
	}
	if _, err := s.Write(ctx, statestore.Put("sites", "d", []byte(`{"v":3,"id":"d"}`))); err != nil {
		t.Fatal(err)
	}
	_, err = statestore.ListJSON[siteRec](ctx, s, siteRecKind, "sites", "")
	if !errors.Is(err, storedrec.ErrNewerVersion) || !strings.Contains(err.Error(), `test site "d"`) || !strings.Contains(err.Error(), "version 3") {
		t.Errorf("a version 3 record: %v", err)
	}
	if _, err := s.Write(ctx, statestore.Put("sites", "d", []byte(`{"v":2,"id":7}`))); err != nil {
		t.Fatal(err)
	}
	_, err = statestore.ListJSON[siteRec](ctx, s, siteRecKind, "sites", "")
	if err == nil || !strings.Contains(err.Error(), `damaged record: test site "d"`) {
		t.Errorf("a damaged record: %v", err)
	}
}
