package storedrec_test

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"time"
)

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	timeType          = reflect.TypeFor[time.Time]()
)

// fill sets every field a record's JSON holds to a value of its own,
// deterministically: a fixture built from it names every stored field,
// so a renamed one shows. Types that encode themselves stay zero, but for
// time.Time.
func fill(v reflect.Value, seed *int, depth int) {
	*seed++
	n := *seed
	t := v.Type()
	if t == timeType {
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, n%60, 0, time.UTC)))
		return
	}
	if depth > 6 || t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) ||
		t.Implements(textMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
				fill(v.Field(i), seed, depth+1)
			}
		}
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		fill(p.Elem(), seed, depth+1)
		v.Set(p)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte{byte(n), byte(n + 1)})
			return
		}
		s := reflect.MakeSlice(t, 1, 1)
		fill(s.Index(0), seed, depth+1)
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), seed, depth+1)
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return
		}
		m := reflect.MakeMap(t)
		k := reflect.New(t.Key()).Elem()
		k.SetString(fmt.Sprintf("Key%d", n)) // map keys are data: capitals stay
		e := reflect.New(t.Elem()).Elem()
		fill(e, seed, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(n) + 0.5)
	}
}

// filled is a T with every field set.
func filled[T any]() T {
	var v T
	seed := 0
	fill(reflect.ValueOf(&v).Elem(), &seed, 0)
	return v
}
