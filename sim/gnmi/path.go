package gnmi

import (
	"fmt"
	"strings"

	gpb "github.com/openconfig/gnmi/proto/gnmi"
)

// ParsePath reads a path as gnmic writes it: /elem/list[key=value]/leaf
// (a key's value may hold '/'; ']' and '=' in a value are escaped with
// '\'). It is bounded by maxPathLen bytes and maxPathElems elements.
func ParsePath(s string) (*gpb.Path, error) {
	if len(s) > maxPathLen {
		return nil, fmt.Errorf("path longer than %d bytes", maxPathLen)
	}
	s = strings.TrimPrefix(strings.TrimSpace(s), "/")
	p := &gpb.Path{}
	for s != "" {
		if len(p.Elem) == maxPathElems {
			return nil, fmt.Errorf("path of more than %d elements", maxPathElems)
		}
		e, rest, err := parseElem(s)
		if err != nil {
			return nil, err
		}
		p.Elem = append(p.Elem, e)
		s = rest
	}
	return p, nil
}

// parseElem reads one element from s and returns what follows its '/'.
func parseElem(s string) (*gpb.PathElem, string, error) {
	i := strings.IndexAny(s, "/[")
	name := s
	if i >= 0 {
		name = s[:i]
	}
	if name == "" {
		return nil, "", fmt.Errorf("empty path element in %q", s)
	}
	e := &gpb.PathElem{Name: name}
	s = s[len(name):]
	for strings.HasPrefix(s, "[") {
		k, v, rest, err := parseKey(s[1:])
		if err != nil {
			return nil, "", fmt.Errorf("element %s: %w", name, err)
		}
		if e.Key == nil {
			e.Key = map[string]string{}
		}
		if _, dup := e.Key[k]; dup {
			return nil, "", fmt.Errorf("element %s: key %s given twice", name, k)
		}
		e.Key[k] = v
		s = rest
	}
	switch {
	case s == "":
		return e, "", nil
	case s[0] == '/':
		return e, s[1:], nil
	}
	return nil, "", fmt.Errorf("element %s: unexpected %q", name, s)
}

// parseKey reads "key=value]" and returns what follows the ']'.
func parseKey(s string) (key, value, rest string, err error) {
	eq := strings.IndexByte(s, '=')
	if eq <= 0 {
		return "", "", "", fmt.Errorf("key without a name or '=' in %q", s)
	}
	key = s[:eq]
	if strings.ContainsAny(key, "[]/") {
		return "", "", "", fmt.Errorf("bad key name %q", key)
	}
	var b strings.Builder
	for i := eq + 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case c == ']':
			return key, b.String(), s[i+1:], nil
		default:
			b.WriteByte(c)
		}
	}
	return "", "", "", fmt.Errorf("key %s: no closing ']'", key)
}
