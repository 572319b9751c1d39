package design_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/jsonkeys"
)

// oldSpelling rewrites a canonical design into the JSON the release before
// the snake_case names stored: every field whose yaml tag (the YAML's name,
// which was also the JSON's) differs from its json tag.
func oldSpelling(t *testing.T, body []byte) []byte {
	t.Helper()
	var pairs []string
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(rt reflect.Type) {
		for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice || rt.Kind() == reflect.Map {
			rt = rt.Elem()
		}
		if rt.Kind() != reflect.Struct || seen[rt] {
			return
		}
		seen[rt] = true
		for i := range rt.NumField() {
			f := rt.Field(i)
			j, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if y, ok := f.Tag.Lookup("yaml"); ok && y != j {
				pairs = append(pairs, `"`+j+`":`, `"`+y+`":`)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[design.Design]())
	if len(pairs) < 40 {
		t.Fatalf("only %d renamed design fields found", len(pairs)/2)
	}
	old := []byte(strings.NewReplacer(pairs...).Replace(string(body)))
	if string(old) == string(body) {
		t.Fatal("the design has no renamed field to test with")
	}
	return old
}

// TestPreviousReleaseRevision: a design revision stored with the old
// names decodes to the same design and diffs empty against its new form.
func TestPreviousReleaseRevision(t *testing.T) {
	d := buildClean(t, edited(t))
	body, _, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	old := oldSpelling(t, body)
	var fromNew, fromOld design.Design
	if err := json.Unmarshal(body, &fromNew); err != nil {
		t.Fatal(err)
	}
	if err := jsonkeys.Unmarshal(old, &fromOld); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromNew, fromOld) {
		t.Error("the old revision decodes to another design")
	}
	df, err := design.DiffCanonical(old, body)
	if err != nil || !df.Empty() {
		t.Errorf("old vs new spelling of one design: %v %s", err, df.Summary())
	}
}
