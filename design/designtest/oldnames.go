package designtest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
)

// OldSpelling rewrites a design's canonical JSON into what the releases
// before the API's snake_case names stored: each field under its yaml
// tag (the YAML's camelCase name, which was the JSON's name too) where
// that differs from its json tag. It fails the test when the design has
// no such field to rewrite.
func OldSpelling(tb testing.TB, body []byte) []byte {
	tb.Helper()
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
		tb.Fatalf("only %d renamed design fields found", len(pairs)/2)
	}
	old := []byte(strings.NewReplacer(pairs...).Replace(string(body)))
	if string(old) == string(body) {
		tb.Fatal("the design has no renamed field to test with")
	}
	return old
}
