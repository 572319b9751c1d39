package design

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The typed decoder: Value trees into the structs of model.go, strictly.
// Field names come from the json tags (the same names the YAML uses), an
// `enum:"a|b"` tag restricts a string, a Pos field without tag receives the
// position of its mapping and one with `pos:"key"` the position of that key's
// value. Fields tagged `design:"computed"` are not read from sources.

var posType = reflect.TypeOf(Pos{})

type fieldInfo struct {
	name     string
	index    []int
	enum     []string
	required bool
}

type structInfo struct {
	fields  map[string]*fieldInfo
	names   []string // sorted, for messages
	selfPos []int    // index of the untagged Pos field, or nil
	keyPos  map[string][]int
}

var structCache sync.Map // reflect.Type -> *structInfo

func infoFor(t reflect.Type) *structInfo {
	if si, ok := structCache.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{fields: map[string]*fieldInfo{}, keyPos: map[string][]int{}}
	collectFields(t, nil, si)
	for n := range si.fields {
		si.names = append(si.names, n)
	}
	sort.Strings(si.names)
	structCache.Store(t, si)
	return si
}

func collectFields(t reflect.Type, prefix []int, si *structInfo) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		idx := append(append([]int(nil), prefix...), i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			collectFields(f.Type, idx, si)
			continue
		}
		if f.Type == posType {
			if k, ok := f.Tag.Lookup("pos"); ok {
				si.keyPos[k] = idx
			} else if len(prefix) == 0 || si.selfPos == nil {
				si.selfPos = idx
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || f.Tag.Get("design") == "computed" {
			continue
		}
		fi := &fieldInfo{name: name, index: idx}
		if e := f.Tag.Get("enum"); e != "" {
			fi.enum = strings.Split(e, "|")
		}
		fi.required = f.Tag.Get("required") == "true"
		si.fields[name] = fi
	}
}

// decoder carries the context of findings. In schema mode it reports type
// errors, unknown fields and bad enum values; in required mode (for resolved
// trees) only missing required fields. A nil sink decodes silently.
type decoder struct {
	kind, name string
	sink       *[]Finding
	required   bool
}

func (d *decoder) errorf(pos Pos, format string, args ...any) {
	if d.sink == nil || d.required {
		return
	}
	d.report(pos, format, args...)
}

func (d *decoder) report(pos Pos, format string, args ...any) {
	*d.sink = append(*d.sink, Finding{
		Rule: RuleSchema, Severity: SeverityError, Kind: d.kind, Name: d.name,
		File: pos.File, Line: pos.Line, Message: fmt.Sprintf(format, args...),
	})
}

// path is where the decoder is, built as a chain and spelled out only when
// a finding needs it.
type pathT struct {
	parent *pathT
	key    string
	index  int // for list items, with key ""
}

func (p *pathT) String() string {
	if p == nil {
		return ""
	}
	if p.key == "" {
		return fmt.Sprintf("%s[%d]", p.parent, p.index)
	}
	if p.parent == nil {
		return p.key
	}
	return p.parent.String() + "." + p.key
}

// decodeInto decodes v into the value pointed to by out.
func (d *decoder) decodeInto(v *Value, out any, root string) {
	d.decode(v, reflect.ValueOf(out).Elem(), &pathT{key: root}, nil)
}

func (d *decoder) decode(v *Value, rv reflect.Value, path *pathT, fi *fieldInfo) {
	if v == nil || v.Kind == NullValue {
		return // absent, or a removal that resolution acts on
	}
	switch rv.Kind() {
	case reflect.String:
		if v.Kind != ScalarValue {
			d.errorf(v.Pos, "%s must be a string, not a %s", path, v.Kind)
			return
		}
		if fi != nil && fi.enum != nil && !contains(fi.enum, v.Str) {
			d.errorf(v.Pos, "%s: %q is not one of %s", path, v.Str, strings.Join(fi.enum, ", "))
		}
		rv.SetString(v.Str)
	case reflect.Int:
		if v.Kind != ScalarValue || v.Tag != TagInt {
			d.errorf(v.Pos, "%s must be an integer, not %s", path, describe(v))
			return
		}
		n, err := strconv.ParseInt(strings.ReplaceAll(v.Str, "_", ""), 0, 64)
		if err != nil {
			d.errorf(v.Pos, "%s: %q is not a valid integer", path, v.Str)
			return
		}
		rv.SetInt(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.ToLower(v.Str))
		if v.Kind != ScalarValue || v.Tag != TagBool || err != nil {
			d.errorf(v.Pos, "%s must be true or false, not %s", path, describe(v))
			return
		}
		rv.SetBool(b)
	case reflect.Slice:
		if v.Kind != ListValue {
			d.errorf(v.Pos, "%s must be a list, not %s", path, describe(v))
			return
		}
		s := reflect.MakeSlice(rv.Type(), len(v.Items), len(v.Items))
		for i, it := range v.Items {
			d.decode(it, s.Index(i), &pathT{parent: path, index: i}, nil)
		}
		rv.Set(s)
	case reflect.Map:
		if v.Kind != MapValue {
			d.errorf(v.Pos, "%s must be a mapping, not %s", path, describe(v))
			return
		}
		m := reflect.MakeMapWithSize(rv.Type(), len(v.Entries))
		et := rv.Type().Elem()
		for _, e := range v.Entries {
			if e.Value.Kind == NullValue {
				continue
			}
			ev := reflect.New(et).Elem()
			d.decode(e.Value, ev, &pathT{parent: path, key: e.Key}, nil)
			m.SetMapIndex(reflect.ValueOf(e.Key), ev)
		}
		rv.Set(m)
	case reflect.Pointer:
		p := reflect.New(rv.Type().Elem())
		d.decode(v, p.Elem(), path, fi)
		rv.Set(p)
	case reflect.Struct:
		d.decodeStruct(v, rv, path)
	default:
		panic("design: decoder cannot fill " + rv.Type().String())
	}
}

func (d *decoder) decodeStruct(v *Value, rv reflect.Value, path *pathT) {
	if v.Kind != MapValue {
		d.errorf(v.Pos, "%s must be a mapping, not %s", path, describe(v))
		return
	}
	si := infoFor(rv.Type())
	if si.selfPos != nil {
		rv.FieldByIndex(si.selfPos).Set(reflect.ValueOf(v.Pos))
	}
	if d.required && d.sink != nil {
		for _, n := range si.names {
			if si.fields[n].required && v.Get(n) == nil {
				d.report(v.Pos, "%s.%s is required", path, n)
			}
		}
	}
	for _, e := range v.Entries {
		fi := si.fields[e.Key]
		if fi == nil {
			d.errorf(e.KeyPos, "unknown field %q in %s (known fields: %s)", e.Key, path, strings.Join(si.names, ", "))
			continue
		}
		d.decode(e.Value, rv.FieldByIndex(fi.index), &pathT{parent: path, key: e.Key}, fi)
		if pi, ok := si.keyPos[e.Key]; ok {
			rv.FieldByIndex(pi).Set(reflect.ValueOf(e.Value.Pos))
		}
	}
}

func describe(v *Value) string {
	if v.Kind == ScalarValue {
		return strconv.Quote(v.Str)
	}
	return "a " + v.Kind.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
