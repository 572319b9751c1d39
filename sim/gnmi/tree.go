package gnmi

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	gpb "github.com/openconfig/gnmi/proto/gnmi"
)

// A switch's state is one JSON tree in the shape of the OpenConfig
// models, its member names without module prefixes: objects are
// map[string]any, lists []any of objects, leaves JSON scalars (numbers
// float64). Get renders a subtree; Set edits a copy and the copy is
// checked (validate.go) before it replaces the state.

// numericKeys are list keys whose leaf is a number.
var numericKeys = map[string]bool{"vlan-id": true}

// stripPrefix drops a YANG module prefix ("openconfig-vlan:switched-vlan").
func stripPrefix(s string) string {
	if i := strings.IndexByte(s, ':'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// stripTree returns v with every member name's module prefix dropped
// (a JSON_IETF value as a client sends it). depth bounds the recursion.
func stripTree(v any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("value nested deeper than %d levels", maxDepth)
	}
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			s, err := stripTree(c, depth+1)
			if err != nil {
				return nil, err
			}
			out[stripPrefix(k)] = s
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			s, err := stripTree(c, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	return v, nil
}

// clone deep-copies a tree.
func clone(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			out[k] = clone(c)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			out[i] = clone(c)
		}
		return out
	}
	return v
}

// keyValue is a list key's leaf as the tree holds it.
func keyValue(name, v string) any {
	if numericKeys[name] {
		if n, err := strconv.ParseUint(v, 10, 32); err == nil {
			return float64(n)
		}
	}
	return v
}

// leafString is a leaf as a path key compares it.
func leafString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// findEntry returns the index of the list entry whose key leaves are
// keys (-1: none).
func findEntry(list []any, keys map[string]string) int {
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		match := true
		for k, v := range keys {
			if leafString(m[stripPrefix(k)]) != v {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}

// lookup returns the node at elems under root.
func lookup(root any, elems []*gpb.PathElem) (any, bool) {
	node := root
	for _, e := range elems {
		m, ok := node.(map[string]any)
		if !ok {
			return nil, false
		}
		child, ok := m[stripPrefix(e.GetName())]
		if !ok {
			return nil, false
		}
		if len(e.GetKey()) == 0 {
			node = child
			continue
		}
		list, ok := child.([]any)
		if !ok {
			return nil, false
		}
		i := findEntry(list, e.GetKey())
		if i < 0 {
			return nil, false
		}
		node = list[i]
	}
	return node, true
}

// container returns the object at elems under root, creating the
// containers and list entries on the way (their key leaves set).
func container(root map[string]any, elems []*gpb.PathElem) (map[string]any, error) {
	node := root
	for _, e := range elems {
		name := stripPrefix(e.GetName())
		if len(e.GetKey()) == 0 {
			child, ok := node[name]
			if !ok {
				child = map[string]any{}
				node[name] = child
			}
			m, ok := child.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s is a leaf, not a container", name)
			}
			node = m
			continue
		}
		list, _ := node[name].([]any)
		if _, ok := node[name]; ok && list == nil {
			return nil, fmt.Errorf("%s is not a list", name)
		}
		i := findEntry(list, e.GetKey())
		if i < 0 {
			entry := map[string]any{}
			for k, v := range e.GetKey() {
				entry[stripPrefix(k)] = keyValue(stripPrefix(k), v)
			}
			list = append(list, entry)
			node[name] = list
			i = len(list) - 1
		}
		m, ok := list[i].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s entry is not an object", name)
		}
		node = m
	}
	return node, nil
}

// setAt writes v at elems under root: replace puts v in place of what
// was there, update merges objects into what was there.
func setAt(root map[string]any, elems []*gpb.PathElem, v any, replace bool) error {
	if len(elems) == 0 {
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("the root takes an object")
		}
		if replace {
			clear(root)
		}
		merge(root, obj)
		return nil
	}
	last := elems[len(elems)-1]
	if len(last.GetKey()) > 0 {
		entry, err := container(root, elems)
		if err != nil {
			return err
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("a list entry (%s) takes an object", last.GetName())
		}
		keys := map[string]any{}
		for k := range last.GetKey() {
			keys[stripPrefix(k)] = entry[stripPrefix(k)]
		}
		if replace {
			clear(entry)
		}
		merge(entry, obj)
		for k, kv := range keys {
			if got, ok := entry[k]; ok && leafString(got) != leafString(kv) {
				return fmt.Errorf("%s %v does not match the path's key %v", k, got, kv)
			}
			entry[k] = kv
		}
		return nil
	}
	parent, err := container(root, elems[:len(elems)-1])
	if err != nil {
		return err
	}
	name := stripPrefix(last.GetName())
	old, isObj := parent[name].(map[string]any)
	obj, vObj := v.(map[string]any)
	if !replace && isObj && vObj {
		merge(old, obj)
		return nil
	}
	parent[name] = v
	return nil
}

// merge copies src into dst: objects merged member by member, lists
// merged entry by entry when their entries carry the same key leaves
// (name, vlan-id, id), anything else replaced.
func merge(dst, src map[string]any) {
	for k, v := range src {
		switch t := v.(type) {
		case map[string]any:
			if d, ok := dst[k].(map[string]any); ok {
				merge(d, t)
				continue
			}
		case []any:
			if d, ok := dst[k].([]any); ok {
				dst[k] = mergeList(d, t)
				continue
			}
		}
		dst[k] = v
	}
}

// listKeys are the key leaves of the models' lists.
var listKeys = []string{"name", "vlan-id", "id"}

func mergeList(dst, src []any) []any {
	for _, e := range src {
		m, ok := e.(map[string]any)
		key, kv := "", ""
		for _, k := range listKeys {
			if v, has := m[k]; ok && has {
				key, kv = k, leafString(v)
				break
			}
		}
		if key == "" {
			return src // no keys: a leaf-list, replaced whole
		}
		if i := findEntry(dst, map[string]string{key: kv}); i >= 0 {
			if d, ok := dst[i].(map[string]any); ok {
				merge(d, m)
				continue
			}
		}
		dst = append(dst, m)
	}
	return dst
}

// deleteAt removes the node at elems; a node that is not there is no
// error (gNMI: deleting what does not exist succeeds).
func deleteAt(root map[string]any, elems []*gpb.PathElem) error {
	if len(elems) == 0 {
		clear(root)
		return nil
	}
	parentNode, ok := lookup(root, elems[:len(elems)-1])
	if !ok {
		return nil
	}
	parent, ok := parentNode.(map[string]any)
	if !ok {
		return nil
	}
	last := elems[len(elems)-1]
	name := stripPrefix(last.GetName())
	if len(last.GetKey()) == 0 {
		delete(parent, name)
		return nil
	}
	list, ok := parent[name].([]any)
	if !ok {
		return nil
	}
	if i := findEntry(list, last.GetKey()); i >= 0 {
		parent[name] = append(list[:i:i], list[i+1:]...)
	}
	return nil
}

// Modules of the tree's nodes for JSON_IETF: the top-level containers,
// and the nodes other modules augment into them.
var (
	topModules = map[string]string{
		"interfaces":        "openconfig-interfaces",
		"network-instances": "openconfig-network-instance",
		"lacp":              "openconfig-lacp",
		"lldp":              "openconfig-lldp",
	}
	augmentModules = map[string]string{
		"ethernet":      "openconfig-if-ethernet",
		"aggregation":   "openconfig-if-aggregate",
		"aggregate-id":  "openconfig-if-aggregate",
		"switched-vlan": "openconfig-vlan",
	}
)

// moduleOf is the module of the node at elems ("" for the root).
func moduleOf(elems []*gpb.PathElem) string {
	mod := ""
	for i, e := range elems {
		name := stripPrefix(e.GetName())
		if i == 0 {
			mod = topModules[name]
		} else if m, ok := augmentModules[name]; ok {
			mod = m
		}
	}
	return mod
}

// qualify renders v for JSON_IETF (RFC 7951): a member name carries its
// module's prefix where its module differs from its parent's.
func qualify(v any, parent string, top bool) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			mod := parent
			if top {
				mod = topModules[k]
			} else if m, ok := augmentModules[k]; ok {
				mod = m
			}
			name := k
			if mod != parent && mod != "" {
				name = mod + ":" + k
			}
			out[name] = qualify(c, mod, false)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			out[i] = qualify(c, parent, false)
		}
		return out
	}
	return v
}

// PathString renders p as gnmic writes paths: /a/b[k=v]/c.
func PathString(p *gpb.Path) string {
	var b strings.Builder
	for _, e := range p.GetElem() {
		b.WriteByte('/')
		b.WriteString(e.GetName())
		keys := make([]string, 0, len(e.GetKey()))
		for k := range e.GetKey() {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "[%s=%s]", k, e.GetKey()[k])
		}
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}
