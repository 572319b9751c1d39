// The legacy step: reading JSON written before the control API moved its
// names from camelCase to snake_case.
//
// The engine, the token store and the secret store kept their records as
// the JSON of the same Go types the API serves, so a state database
// written by those releases spells fields "machineId" where the types now
// say "machine_id". Upgrade renames such keys, led by the Go type: an
// object key is renamed only where the type at that point is a struct
// and the key names one of its fields in the old spelling (the same
// letters, case and underscores aside). Map keys (node names, labels) are
// data and never renamed; interface-typed values are left as they are.
// Reading costs one scan for keys with an upper-case letter, which the
// current names never have; only records that hold one take the slow
// path.

package storedrec

import (
	"bytes"
	"cmp"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// Upgrade returns data with the old-style keys of t's structs renamed;
// data itself when it has no key with an upper-case letter. It is
// idempotent: upgraded data comes back unchanged.
func Upgrade(data []byte, t reflect.Type) ([]byte, error) {
	if !hasUpperKey(data) {
		return data, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers come back exactly as written
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	if !rename(tree, t) {
		return data, nil
	}
	return json.Marshal(tree)
}

// hasUpperKey reports whether an object key in data holds an ASCII
// upper-case letter. It follows strings (and their escapes) without
// decoding them.
func hasUpperKey(data []byte) bool {
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			continue
		}
		upper := false
		j := i + 1
		for ; j < len(data) && data[j] != '"'; j++ {
			switch c := data[j]; {
			case c == '\\':
				j++
			case 'A' <= c && c <= 'Z':
				upper = true
			}
		}
		i = j
		if upper && nextIsColon(data[min(j+1, len(data)):]) {
			return true
		}
	}
	return false
}

func nextIsColon(rest []byte) bool {
	rest = bytes.TrimLeft(rest, " \t\r\n")
	return len(rest) > 0 && rest[0] == ':'
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// rename walks a decoded tree along t, renaming keys in place; it reports
// whether it renamed any.
func rename(v any, t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return false // decodes itself: its keys are its own business
	}
	changed := false
	switch t.Kind() {
	case reflect.Struct:
		if obj, ok := v.(map[string]any); ok {
			changed = renameObject(obj, fieldsOf(t))
		}
	case reflect.Map:
		if obj, ok := v.(map[string]any); ok {
			for _, e := range obj {
				changed = rename(e, t.Elem()) || changed
			}
		}
	case reflect.Slice, reflect.Array:
		if list, ok := v.([]any); ok {
			for _, e := range list {
				changed = rename(e, t.Elem()) || changed
			}
		}
	}
	return changed
}

func renameObject(obj map[string]any, fs *fields) bool {
	changed := false
	for k, e := range obj {
		f := fs.byName[k]
		if f == nil {
			f = fs.byFold[fold(k)]
			if f == nil {
				continue
			}
			if _, taken := obj[f.name]; !taken {
				delete(obj, k)
				obj[f.name] = e
				changed = true
			}
		}
		changed = rename(e, f.typ) || changed
	}
	return changed
}

type field struct {
	name string
	typ  reflect.Type
}

// fields are a struct type's JSON fields, by name and by folded name.
type fields struct {
	byName map[string]*field
	byFold map[string]*field
}

var cache sync.Map // reflect.Type -> *fields

func fieldsOf(t reflect.Type) *fields {
	if fs, ok := cache.Load(t); ok {
		return fs.(*fields)
	}
	fs := &fields{byName: map[string]*field{}, byFold: map[string]*field{}}
	collect(t, fs)
	cache.Store(t, fs)
	return fs
}

// collect gathers t's JSON fields, with those of untagged embedded
// structs as encoding/json promotes them: a field of t itself wins over
// an embedded one of the same name.
func collect(t reflect.Type, fs *fields) {
	var embedded []reflect.Type
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if et := sf.Type; sf.Anonymous && tag == "" {
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				embedded = append(embedded, et)
				continue
			}
		}
		if sf.IsExported() {
			fs.add(cmp.Or(tag, sf.Name), sf.Type, true)
		}
	}
	for _, et := range embedded {
		inner := fieldsOf(et)
		for name, f := range inner.byName {
			fs.add(name, f.typ, false)
		}
	}
}

// add records a field; an existing one of the same name stays unless
// replace.
func (fs *fields) add(name string, typ reflect.Type, replace bool) {
	if _, ok := fs.byName[name]; ok && !replace {
		return
	}
	f := &field{name: name, typ: typ}
	fs.byName[name] = f
	fs.byFold[fold(name)] = f
}

// fold is a name without case or underscores: machineId, machine_id and
// MachineID fold alike.
func fold(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, "_", ""))
}
