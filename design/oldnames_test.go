package design_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
)

// TestPreviousReleaseRevision: a design revision stored with the old
// names decodes to the same design and diffs empty against its new form.
func TestPreviousReleaseRevision(t *testing.T) {
	d := buildClean(t, edited(t))
	body, _, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	old := designtest.OldSpelling(t, body)
	var fromNew, fromOld design.Design
	if err := json.Unmarshal(body, &fromNew); err != nil {
		t.Fatal(err)
	}
	if err := design.RevisionRecord.Decode("", old, &fromOld); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromNew, fromOld) {
		t.Error("the old revision decodes to another design")
	}
	decoded, err := design.DecodeRevision(old)
	want, _ := design.DecodeRevision(body)
	if err != nil || !reflect.DeepEqual(*want, *decoded) {
		t.Errorf("DecodeRevision of the old revision: %v, same design %v", err, err == nil && reflect.DeepEqual(*want, *decoded))
	}
	df, err := design.DiffCanonical(old, body)
	if err != nil || !df.Empty() {
		t.Errorf("old vs new spelling of one design: %v %s", err, df.Summary())
	}
}
