package design

// Inheritance rules of the site schema, applied to Value trees:
//  1. an absent key inherits the parent's value unchanged;
//  2. a scalar replaces the parent's (explicit false, 0 and "" win);
//  3. null removes the inherited key;
//  4. mappings merge key by key, at every depth;
//  5. lists of scalars union (parent's items, then the child's new ones);
//     "!x" removes x from the inherited items and "!*" drops them all;
//  6. lists of objects are replaced whole.
//
// Resolve applies a child over its parent and leaves no directive behind.
// Overlay composes two layers of the same document (global, then site) and
// keeps the later layer's directives (a null, every "!x" and "!*") in the
// result, so that they also act on the document's parents during chain
// resolution: a site layer that removes an item removes it whether the
// global layer or a parent profile supplied it.

// Resolve returns child applied over parent. Either may be nil (absent).
func Resolve(parent, child *Value) *Value { return merge(parent, child, false) }

// Overlay returns the later layer child composed over the earlier layer parent.
func Overlay(parent, child *Value) *Value { return merge(parent, child, true) }

func merge(parent, child *Value, keep bool) *Value {
	switch {
	case child == nil:
		if parent == nil || keep {
			return parent
		}
		return strip(parent)
	case child.Kind == NullValue:
		if keep {
			return child
		}
		return nil
	case parent == nil || parent.Kind == NullValue:
		if keep {
			return child
		}
		return strip(child)
	case child.Kind == MapValue && parent.Kind == MapValue:
		return mergeMaps(parent, child, keep)
	case child.Kind == ListValue && parent.Kind == ListValue &&
		isScalarList(child) && isScalarList(parent):
		return unionLists(parent, child, keep)
	}
	if keep {
		return child
	}
	return strip(child)
}

func mergeMaps(parent, child *Value, keep bool) *Value {
	if len(child.Entries) == 0 {
		if keep {
			return parent
		}
		return strip(parent)
	}
	out := make([]Entry, 0, len(parent.Entries)+len(child.Entries))
	for _, pe := range parent.Entries {
		ce := child.entry(pe.Key)
		if ce == nil {
			if !keep {
				pe.Value = strip(pe.Value)
				if pe.Value == nil {
					continue
				}
			}
			out = append(out, pe)
			continue
		}
		m := merge(pe.Value, ce.Value, keep)
		if m == nil {
			continue
		}
		out = append(out, Entry{Key: pe.Key, KeyPos: ce.KeyPos, Value: m})
	}
	for _, ce := range child.Entries {
		if parent.entry(ce.Key) != nil {
			continue
		}
		v := ce.Value
		if !keep {
			if v = strip(v); v == nil {
				continue
			}
		}
		out = append(out, Entry{Key: ce.Key, KeyPos: ce.KeyPos, Value: v})
	}
	return NewMap(child.Pos, out)
}

func unionLists(parent, child *Value, keep bool) *Value {
	removed := map[string]bool{}
	all := false
	for _, it := range child.Items {
		if isRemoval(it) {
			if it.Str == "!*" {
				all = true
			} else {
				removed[it.Str[1:]] = true
			}
		}
	}
	out := make([]*Value, 0, len(parent.Items)+len(child.Items))
	seen := make(map[string]bool, len(parent.Items)+len(child.Items))
	if all && keep {
		out = append(out, NewScalar(TagStr, "!*", child.Pos))
	}
	if !all {
		for _, it := range parent.Items {
			if isRemoval(it) {
				if keep && !removed[it.Str[1:]] {
					out = append(out, it)
				}
				continue
			}
			if removed[it.Str] || seen[it.Str] {
				continue
			}
			seen[it.Str] = true
			out = append(out, it)
		}
	}
	for _, it := range child.Items {
		if isRemoval(it) {
			if keep && it.Str != "!*" {
				out = append(out, it)
			}
			continue
		}
		if seen[it.Str] {
			continue
		}
		seen[it.Str] = true
		out = append(out, it)
	}
	return NewList(child.Pos, out)
}

// strip removes the directives (nulls, "!x" items) from a tree that has no
// parent to act on.
func strip(v *Value) *Value {
	if v == nil || v.Kind == NullValue {
		return nil
	}
	if !v.directives {
		return v
	}
	switch v.Kind {
	case MapValue:
		out := make([]Entry, 0, len(v.Entries))
		for _, e := range v.Entries {
			if s := strip(e.Value); s != nil {
				e.Value = s
				out = append(out, e)
			}
		}
		return NewMap(v.Pos, out)
	case ListValue:
		out := make([]*Value, 0, len(v.Items))
		for _, it := range v.Items {
			if isRemoval(it) {
				continue
			}
			if s := strip(it); s != nil {
				out = append(out, s)
			}
		}
		return NewList(v.Pos, out)
	}
	return v
}
