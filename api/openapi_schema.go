package api

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"
)

// customizer completes the generator's schema of each Go type: the
// enums the engine lists, the schemas of types with their own encoding,
// and for structs additionalProperties false (a field the document does
// not name fails validation) and the required fields (those without
// omitempty or omitzero). In answers (out), a slice, map or pointer
// field without omitempty may be null, as encoding/json writes a nil one.
func customizer(out bool) openapi3gen.SchemaCustomizerFn {
	return func(_ string, t reflect.Type, tag reflect.StructTag, sc *openapi3.Schema) error {
		if marshals(t) {
			own, ok := ownEncodings[t]
			if !ok {
				return fmt.Errorf("%s has its own JSON encoding: give its schema in ownEncodings (api/openapi.go)", t)
			}
			*sc = *own()
			return nil
		}
		if e, ok := typeEnums[t]; ok {
			sc.Enum = nil
			for _, v := range e {
				sc.Enum = append(sc.Enum, v)
			}
		}
		name, omit := jsonField(tag)
		if out && name != "" && !omit && (t.Kind() == reflect.Map || t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8) {
			sc.Nullable = true
		}
		if t.Kind() == reflect.Struct && t.PkgPath() != "time" {
			sc.Type = &openapi3.Types{openapi3.TypeObject}
			sc.AdditionalProperties = openapi3.AdditionalProperties{Has: new(false)}
			sc.Required = required(t, sc.Properties)
		}
		return nil
	}
}

// jsonField is a struct tag's JSON name ("" when it has none) and
// whether the field is left out when empty or zero.
func jsonField(tag reflect.StructTag) (name string, omit bool) {
	v, ok := tag.Lookup("json")
	if !ok {
		return "", false
	}
	name, opts, _ := strings.Cut(v, ",")
	for o := range strings.SplitSeq(opts, ",") {
		omit = omit || o == "omitempty" || o == "omitzero"
	}
	return name, omit
}

// required lists the properties of struct t that encoding/json always
// writes, embedded structs' included, in field order.
func required(t reflect.Type, props openapi3.Schemas) []string {
	var out []string
	for f := range t.Fields() {
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		name, omit := jsonField(f.Tag)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			out = append(out, required(ft, props)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, ok := props[name]; ok && name != "-" && !omit && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}
