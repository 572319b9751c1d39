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
// Field names come from the yaml tags, or the json tags where a field has
// none (the YAML keeps camelCase where the API's JSON is snake_case), an
// `enum:"a|b"` tag restricts a string, a Pos field without tag receives the
// position of its mapping and one with `pos:"key"` the position of that key's
// value. Fields tagged `design:"computed"` are not read from sources.

var (
	posType    = reflect.TypeOf(Pos{})
	posMapType = reflect.TypeOf(map[string]Pos(nil))
)

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
	// keysPos: fields of type map[string]Pos tagged `pos:"key.*"` receive
	// the position of every entry of the mapping under key.
	keysPos map[string][]int
}

var structCache sync.Map // reflect.Type -> *structInfo

func infoFor(t reflect.Type) *structInfo {
	if si, ok := structCache.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{fields: map[string]*fieldInfo{}, keyPos: map[string][]int{}, keysPos: map[string][]int{}}
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
		if k, ok := f.Tag.Lookup("pos"); ok && f.Type == posMapType {
			si.keysPos[strings.TrimSuffix(k, ".*")] = idx
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
		name := yamlName(f)
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
	// memo, when set, shares the decoded form of the top-level fields of
	// a spec between the nodes that inherit the same subtree from a host
	// profile. The design is immutable after Build, so sharing is safe.
	memo map[memoKey]reflect.Value
}

type memoKey struct {
	v *Value
	t reflect.Type
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

// decode fills rv from v and reports whether v had the right shape.
func (d *decoder) decode(v *Value, rv reflect.Value, path *pathT, fi *fieldInfo) bool {
	if v == nil || v.Kind == NullValue {
		return true // absent, or a removal that resolution acts on
	}
	switch rv.Kind() {
	case reflect.String:
		return d.decodeString(v, rv, path, fi)
	case reflect.Int, reflect.Int64:
		return d.decodeInt(v, rv, path)
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.ToLower(v.Str))
		if v.Kind != ScalarValue || v.Tag != TagBool || err != nil {
			d.errorf(v.Pos, "%s must be true or false, not %s", path, describe(v))
			return false
		}
		rv.SetBool(b)
		return true
	case reflect.Slice:
		return d.decodeSlice(v, rv, path)
	case reflect.Map:
		return d.decodeMap(v, rv, path)
	case reflect.Pointer:
		p := reflect.New(rv.Type().Elem())
		ok := d.decode(v, p.Elem(), path, fi)
		rv.Set(p)
		return ok
	case reflect.Struct:
		return d.decodeStruct(v, rv, path)
	default:
		panic("design: decoder cannot fill " + rv.Type().String())
	}
}

// decodeString fills a string, one of the field's enum when it has one.
func (d *decoder) decodeString(v *Value, rv reflect.Value, path *pathT, fi *fieldInfo) bool {
	if v.Kind != ScalarValue {
		d.errorf(v.Pos, "%s must be a string, not a %s", path, v.Kind)
		return false
	}
	rv.SetString(v.Str)
	if fi != nil && fi.enum != nil && !contains(fi.enum, v.Str) {
		d.errorf(v.Pos, "%s: %q is not one of %s", path, v.Str, strings.Join(fi.enum, ", "))
		return false
	}
	return true
}

// decodeInt fills an int or int64 from an integer scalar (with _ separators, in
// any base Go's literals have).
func (d *decoder) decodeInt(v *Value, rv reflect.Value, path *pathT) bool {
	if v.Kind != ScalarValue || v.Tag != TagInt {
		d.errorf(v.Pos, "%s must be an integer, not %s", path, describe(v))
		return false
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(v.Str, "_", ""), 0, 64)
	if err != nil {
		d.errorf(v.Pos, "%s: %q is not a valid integer", path, v.Str)
		return false
	}
	rv.SetInt(n)
	return true
}

func (d *decoder) decodeSlice(v *Value, rv reflect.Value, path *pathT) bool {
	if v.Kind != ListValue {
		d.errorf(v.Pos, "%s must be a list, not %s", path, describe(v))
		return false
	}
	s := reflect.MakeSlice(rv.Type(), len(v.Items), len(v.Items))
	ok := true
	for i, it := range v.Items {
		ok = d.decode(it, s.Index(i), &pathT{parent: path, index: i}, nil) && ok
	}
	rv.Set(s)
	return ok
}

// decodeMap fills a map; null entries are left out.
func (d *decoder) decodeMap(v *Value, rv reflect.Value, path *pathT) bool {
	if v.Kind != MapValue {
		d.errorf(v.Pos, "%s must be a mapping, not %s", path, describe(v))
		return false
	}
	m := reflect.MakeMapWithSize(rv.Type(), len(v.Entries))
	et := rv.Type().Elem()
	ok := true
	for _, e := range v.Entries {
		if e.Value.Kind == NullValue {
			continue
		}
		ev := reflect.New(et).Elem()
		ok = d.decode(e.Value, ev, &pathT{parent: path, key: e.Key}, nil) && ok
		m.SetMapIndex(reflect.ValueOf(e.Key), ev)
	}
	rv.Set(m)
	return ok
}

func (d *decoder) decodeStruct(v *Value, rv reflect.Value, path *pathT) bool {
	if v.Kind != MapValue {
		d.errorf(v.Pos, "%s must be a mapping, not %s", path, describe(v))
		return false
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
	ok := true
	for _, e := range v.Entries {
		fi := si.fields[e.Key]
		if fi == nil {
			d.errorf(e.KeyPos, "unknown field %q in %s (known fields: %s)", e.Key, path, strings.Join(si.names, ", "))
			ok = false
			continue
		}
		fieldOK := d.decodeField(e.Value, rv.FieldByIndex(fi.index), &pathT{parent: path, key: e.Key}, fi)
		ok = ok && fieldOK
		if pi, has := si.keyPos[e.Key]; has {
			p := e.Value.Pos
			p.Invalid = !fieldOK
			rv.FieldByIndex(pi).Set(reflect.ValueOf(p))
		}
		if pi, has := si.keysPos[e.Key]; has && e.Value.Kind == MapValue {
			rv.FieldByIndex(pi).Set(d.keyPositions(e.Value))
		}
	}
	return ok
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

// decodeField decodes one field of a struct, through the memo for the
// top-level fields of a spec.
func (d *decoder) decodeField(v *Value, rv reflect.Value, path *pathT, fi *fieldInfo) bool {
	top := path.parent != nil && path.parent.parent == nil
	if d.memo == nil || !top || (v.Kind != MapValue && v.Kind != ListValue) {
		return d.decode(v, rv, path, fi)
	}
	k := memoKey{v, rv.Type()}
	if c, ok := d.memo[k]; ok {
		rv.Set(c)
		return true
	}
	before := 0
	if d.sink != nil {
		before = len(*d.sink)
	}
	ok := d.decode(v, rv, path, fi)
	if ok && (d.sink == nil || len(*d.sink) == before) {
		c := reflect.New(rv.Type()).Elem()
		c.Set(rv)
		d.memo[k] = c
	}
	return ok
}

// keyPositions maps each key of a mapping to its position.
func (d *decoder) keyPositions(v *Value) reflect.Value {
	k := memoKey{v, posMapType}
	if c, ok := d.memo[k]; ok {
		return c
	}
	m := make(map[string]Pos, len(v.Entries))
	for _, e := range v.Entries {
		m[e.Key] = e.KeyPos
	}
	c := reflect.ValueOf(m)
	if d.memo != nil {
		d.memo[k] = c
	}
	return c
}

// yamlName is a field's name in the site YAML: its yaml tag's, else its
// json tag's ("" or "-" when the field is not read).
func yamlName(f reflect.StructField) string {
	if y, ok := f.Tag.Lookup("yaml"); ok {
		name, _, _ := strings.Cut(y, ",")
		return name
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}
