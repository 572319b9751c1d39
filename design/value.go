package design

import (
	"fmt"
	"strings"
)

// Pos is a position in a source file. Line is 1-based; 0 means unknown.
type Pos struct {
	File string
	Line int
	// Invalid marks the position of a value that failed to decode (already
	// reported as a schema error); rules skip such fields.
	Invalid bool
}

func (p Pos) String() string {
	switch {
	case p.File == "":
		return "-"
	case p.Line == 0:
		return p.File
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// ValueKind tells what a Value holds.
type ValueKind uint8

// The kinds of Value.
const (
	NullValue ValueKind = iota
	ScalarValue
	MapValue
	ListValue
)

func (k ValueKind) String() string {
	switch k {
	case NullValue:
		return "null"
	case ScalarValue:
		return "scalar"
	case MapValue:
		return "mapping"
	case ListValue:
		return "list"
	}
	return "unknown"
}

// Scalar tags as the YAML core schema resolves them.
const (
	TagStr   = "!!str"
	TagInt   = "!!int"
	TagFloat = "!!float"
	TagBool  = "!!bool"
	TagNull  = "!!null"
)

// Value is one node of a source tree: a scalar, a mapping, a list or null.
// Values are immutable once built; merges share unchanged subtrees.
type Value struct {
	Kind    ValueKind
	Tag     string  // scalars: TagStr, TagInt, TagFloat or TagBool
	Str     string  // scalars: the text as written
	Entries []Entry // mappings, in source order; keys are unique
	Items   []*Value
	Pos     Pos
	// directives is true when the subtree holds a null or a "!x" list item
	// that a merge must act on; clean subtrees are shared as they are.
	directives bool
}

// Entry is one key of a mapping.
type Entry struct {
	Key    string
	KeyPos Pos
	Value  *Value
}

// NewScalar returns a scalar Value.
func NewScalar(tag, s string, pos Pos) *Value {
	return &Value{Kind: ScalarValue, Tag: tag, Str: s, Pos: pos}
}

// NewNull returns a null Value.
func NewNull(pos Pos) *Value { return &Value{Kind: NullValue, Pos: pos} }

// NewMap returns a mapping Value. Keys must be unique.
func NewMap(pos Pos, entries []Entry) *Value {
	v := &Value{Kind: MapValue, Entries: entries, Pos: pos}
	for _, e := range entries {
		if e.Value.Kind == NullValue || e.Value.directives {
			v.directives = true
			break
		}
	}
	return v
}

// NewList returns a list Value.
func NewList(pos Pos, items []*Value) *Value {
	v := &Value{Kind: ListValue, Items: items, Pos: pos}
	for _, it := range items {
		if it.directives || isRemoval(it) {
			v.directives = true
			break
		}
	}
	return v
}

// Get returns the value of key in a mapping, or nil.
func (v *Value) Get(key string) *Value {
	if v == nil || v.Kind != MapValue {
		return nil
	}
	for i := range v.Entries {
		if v.Entries[i].Key == key {
			return v.Entries[i].Value
		}
	}
	return nil
}

// entry returns the entry of key in a mapping, or nil.
func (v *Value) entry(key string) *Entry {
	if v == nil || v.Kind != MapValue {
		return nil
	}
	for i := range v.Entries {
		if v.Entries[i].Key == key {
			return &v.Entries[i]
		}
	}
	return nil
}

// Text returns the scalar text of key in a mapping, or "".
func (v *Value) Text(key string) string {
	if s := v.Get(key); s != nil && s.Kind == ScalarValue {
		return s.Str
	}
	return ""
}

// without returns a copy of a mapping without the given key.
func (v *Value) without(key string) *Value {
	if v.entry(key) == nil {
		return v
	}
	out := make([]Entry, 0, len(v.Entries)-1)
	for _, e := range v.Entries {
		if e.Key != key {
			out = append(out, e)
		}
	}
	return NewMap(v.Pos, out)
}

// isRemoval reports whether a list item is a removal directive ("!x" or "!*").
func isRemoval(v *Value) bool {
	return v.Kind == ScalarValue && v.Tag == TagStr && strings.HasPrefix(v.Str, "!") && len(v.Str) > 1
}

// isScalarList reports whether every item of a list is a scalar.
func isScalarList(v *Value) bool {
	for _, it := range v.Items {
		if it.Kind != ScalarValue {
			return false
		}
	}
	return true
}

// IsSet reports whether the position is known (the field was written).
func (p Pos) IsSet() bool { return p.File != "" || p.Line != 0 }

// Usable reports whether the field was written and decoded.
func (p Pos) Usable() bool { return p.IsSet() && !p.Invalid }
