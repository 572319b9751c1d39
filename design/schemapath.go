package design

import (
	"reflect"
	"strings"
)

// kindTypes are the Go types of the design's objects, by kind.
var kindTypes = map[string]reflect.Type{
	KindSite: reflect.TypeFor[Site](), KindNetwork: reflect.TypeFor[Network](),
	KindNetworkLink: reflect.TypeFor[NetworkLink](), KindHardwareProfile: reflect.TypeFor[HardwareProfile](),
	KindHostProfile: reflect.TypeFor[HostProfile](), KindNode: reflect.TypeFor[Node](),
	KindBootAction: reflect.TypeFor[BootAction](), KindImage: reflect.TypeFor[Image](),
}

// SchemaPath is path, a dotted path through an object of kind in its
// stored JSON names (a Diff's), in the design schema's names, the site
// files' (spec.platform.kernel_params.x: spec.platform.kernelParams.x).
// A map's keys are data and keep their spelling; past a value that is
// not a struct or a map, the rest is data too. An unknown kind or name
// leaves the rest as it is.
func SchemaPath(kind, path string) string {
	t, ok := kindTypes[kind]
	if !ok || path == "" {
		return path
	}
	segs := strings.Split(path, ".")
	for i := 0; i < len(segs); i++ {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := fieldByJSONName(t, segs[i])
			if !ok {
				return strings.Join(segs, ".")
			}
			if y, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); y != "" && y != "-" {
				segs[i] = y
			}
			t = f.Type
		case reflect.Map:
			t = t.Elem() // segs[i] is a key: data
		default:
			return strings.Join(segs, ".")
		}
	}
	return strings.Join(segs, ".")
}

// fieldByJSONName is t's field of JSON name name, an inlined embedded
// struct's included.
func fieldByJSONName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		j, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case j == name && f.IsExported():
			return f, true
		case f.Anonymous && j == "" && f.Type.Kind() == reflect.Struct:
			if ef, ok := fieldByJSONName(f.Type, name); ok {
				return ef, true
			}
		}
	}
	return reflect.StructField{}, false
}
