package maas

import (
	"bytes"
	"strings"
)

// A fast reader of lshw's XML. encoding/xml took 270 µs and 1,974
// allocations for a generated machine's 6 KB document, about 7% of the
// engine's CPU while a 10,000-node rollout configures. lshw writes a
// small part of XML: ASCII, no CDATA, no DOCTYPE, no namespaces, no
// entities beyond the five named ones. lshwScan reads documents that
// stay within that part into the tree xml.Unmarshal gives (lshwTops);
// on anything else it gives up, and encoding/xml reads the document and
// decides, errors included. FuzzLSHWScan holds the two to the same tree.

// lshwScanMaxDepth bounds the nesting lshwScan follows (deeper:
// encoding/xml reads it).
const lshwScanMaxDepth = 128

// lshwScanner reads doc from i; its methods answer false where the
// document leaves the part it reads.
type lshwScanner struct {
	doc   []byte
	i     int
	depth int
}

// lshwScan answers the top nodes of doc as lshwTops does, ok false when
// doc is not within the part of XML it reads.
func lshwScan(doc []byte) (tops []*lshwXNode, ok bool) {
	if !plainASCII(doc) {
		return nil, false
	}
	s := lshwScanner{doc: doc}
	if !s.prolog() {
		return nil, false
	}
	name, ok := s.name()
	if !ok {
		return nil, false
	}
	var root lshwXNode
	if _, ok := s.element(name, kindNode, &root); !ok {
		return nil, false
	}
	switch string(name) {
	case "list":
		return root.Nodes, true
	case "node":
		return []*lshwXNode{&root}, true
	}
	return nil, false // encoding/xml words the error
}

// plainASCII: printable ASCII, tabs and line feeds only.
func plainASCII(doc []byte) bool {
	for _, c := range doc {
		if c >= 0x7f || c < ' ' && c != '\t' && c != '\n' {
			return false
		}
	}
	return true
}

// prolog skips blanks, comments and processing instructions up to the
// root's start tag, leaving i after its '<'.
func (s *lshwScanner) prolog() bool {
	for {
		s.space()
		if !s.skipPrefix("<") {
			return false
		}
		switch {
		case s.skipPrefix("!--"):
			if !s.comment() {
				return false
			}
		case s.skipPrefix("?"):
			if !s.procInst() {
				return false
			}
		default:
			return true
		}
	}
}

// comment skips a comment's body and "-->", as encoding/xml ends it.
func (s *lshwScanner) comment() bool {
	k := bytes.Index(s.doc[s.i:], []byte("--"))
	if k < 0 || s.i+k+2 >= len(s.doc) || s.doc[s.i+k+2] != '>' {
		return false
	}
	s.i += k + 3
	return true
}

// procInst skips a processing instruction; lshw's <?xml ...?> only
// when it names no encoding and version 1.0 if any.
func (s *lshwScanner) procInst() bool {
	target, ok := s.name()
	if !ok {
		return false
	}
	k := bytes.Index(s.doc[s.i:], []byte("?>"))
	if k < 0 {
		return false
	}
	body := string(s.doc[s.i : s.i+k])
	s.i += k + 2
	if string(target) != "xml" {
		return true
	}
	if strings.Contains(body, "encoding") {
		return false
	}
	_, v, has := strings.Cut(body, "version=")
	return !has || strings.HasPrefix(v, `"1.0"`) || strings.HasPrefix(v, `'1.0'`)
}

// What an element is read as.
type scanKind uint8

const (
	kindSkip    scanKind = iota // not kept
	kindNode                    // an lshw node: n
	kindText                    // a field of n: its own character data
	kindConfig                  // n's configuration
	kindSetting                 // one setting of n's configuration
)

// element reads the attributes and content of an element whose name was
// just read, through its end tag, as kind says; text is a kindText
// element's own character data (its children's is not).
func (s *lshwScanner) element(name []byte, kind scanKind, n *lshwXNode) (text string, ok bool) {
	var set lshwSet
	var own []byte // a kindText element's character data so far
	closed, ok := s.attrs(kind, n, &set)
	if kind == kindSetting {
		n.Settings = append(n.Settings, set)
	}
	if !ok || closed {
		return "", ok
	}
	if s.depth++; s.depth > lshwScanMaxDepth {
		return "", false
	}
	defer func() { s.depth-- }()
	for {
		t, ok := s.text()
		if !ok {
			return "", false
		}
		if kind == kindText && len(t) > 0 {
			own = appendUnescaped(own, t)
		}
		s.i++ // '<'
		switch {
		case s.skipPrefix("/"):
			return string(own), s.endTag(name)
		case s.skipPrefix("!--"):
			ok = s.comment()
		case s.skipPrefix("?"):
			ok = s.procInst()
		default:
			ok = s.child(kind, n)
		}
		if !ok {
			return "", false
		}
	}
}

// child reads a child element of an element of kind (of node n).
func (s *lshwScanner) child(kind scanKind, n *lshwXNode) bool {
	name, ok := s.name()
	if !ok {
		return false
	}
	switch {
	case kind == kindNode && string(name) == "node":
		c := &lshwXNode{}
		n.Nodes = append(n.Nodes, c)
		_, ok = s.element(name, kindNode, c)
	case kind == kindNode && string(name) == "configuration":
		_, ok = s.element(name, kindConfig, n)
	case kind == kindNode && n.field(name) != nil:
		var t string
		if t, ok = s.element(name, kindText, nil); ok {
			*n.field(name) = t
		}
	case kind == kindNode && string(name) == "logicalname":
		var t string
		t, ok = s.element(name, kindText, nil)
		n.LogicalNames = append(n.LogicalNames, t)
	case kind == kindConfig && string(name) == "setting":
		_, ok = s.element(name, kindSetting, n)
	default:
		_, ok = s.element(name, kindSkip, nil)
	}
	return ok
}

// attr sets the node's attribute a to raw, its references replaced
// (only those lshwXNode keeps: the others are not copied).
func (n *lshwXNode) attr(a, raw []byte) {
	switch string(a) {
	case "id":
		n.ID = unescaped(raw)
	case "class":
		n.Class = unescaped(raw)
	case "handle":
		n.Handle = unescaped(raw)
	}
}

// field is the node's string field of child element name, nil for one
// it does not keep as a string.
func (n *lshwXNode) field(name []byte) *string {
	switch string(name) {
	case "description":
		return &n.Description
	case "product":
		return &n.Product
	case "vendor":
		return &n.Vendor
	case "version":
		return &n.Version
	case "serial":
		return &n.Serial
	case "businfo":
		return &n.BusInfo
	case "date":
		return &n.Date
	}
	return nil
}

func (st *lshwSet) attr(a, raw []byte) {
	switch string(a) {
	case "id":
		st.ID = unescaped(raw)
	case "value":
		st.Value = unescaped(raw)
	}
}

// attrs reads a start tag's attributes through its '>' or "/>"
// (closed): a node's into n, a setting's into set.
func (s *lshwScanner) attrs(kind scanKind, n *lshwXNode, set *lshwSet) (closed, ok bool) {
	for {
		blank := s.space()
		switch {
		case s.skipPrefix("/>"):
			return true, true
		case s.skipPrefix(">"):
			return false, true
		case !blank:
			return false, false
		}
		a, ok := s.name()
		if !ok {
			return false, false
		}
		s.space()
		if !s.skipPrefix("=") {
			return false, false
		}
		s.space()
		v, ok := s.quoted()
		if !ok {
			return false, false
		}
		switch kind {
		case kindNode:
			n.attr(a, v)
		case kindSetting:
			set.attr(a, v)
		}
	}
}

// quoted reads a quoted attribute value, as written.
func (s *lshwScanner) quoted() ([]byte, bool) {
	if s.i >= len(s.doc) || s.doc[s.i] != '"' && s.doc[s.i] != '\'' {
		return nil, false
	}
	q := s.doc[s.i]
	k := bytes.IndexByte(s.doc[s.i+1:], q)
	if k < 0 {
		return nil, false
	}
	raw := s.doc[s.i+1 : s.i+1+k]
	s.i += k + 2
	return raw, bytes.IndexByte(raw, '<') < 0 && namedOnly(raw)
}

// text reads character data up to the next '<' (left at i), as
// written.
func (s *lshwScanner) text() ([]byte, bool) {
	k := bytes.IndexByte(s.doc[s.i:], '<')
	if k < 0 {
		return nil, false
	}
	raw := s.doc[s.i : s.i+k]
	s.i += k
	return raw, !bytes.Contains(raw, []byte("]]>")) && namedOnly(raw)
}

// endTag reads the rest of an end tag, which must close name.
func (s *lshwScanner) endTag(name []byte) bool {
	n, ok := s.name()
	if !ok || !bytes.Equal(n, name) {
		return false
	}
	s.space()
	return s.skipPrefix(">")
}

// name reads an XML name of letters, digits, '_', '.' and '-' (a ':'
// after it, a namespace prefix, is not read).
func (s *lshwScanner) name() ([]byte, bool) {
	j := s.i
	for j < len(s.doc) && isScanNameByte(s.doc[j]) {
		j++
	}
	if j == s.i || j < len(s.doc) && s.doc[j] == ':' {
		return nil, false
	}
	if c := s.doc[s.i]; c >= '0' && c <= '9' || c == '.' || c == '-' {
		return nil, false
	}
	n := s.doc[s.i:j]
	s.i = j
	return n, true
}

func isScanNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// space skips blanks; true when there were some.
func (s *lshwScanner) space() bool {
	j := s.i
	for s.i < len(s.doc) && (s.doc[s.i] == ' ' || s.doc[s.i] == '\t' || s.doc[s.i] == '\n') {
		s.i++
	}
	return s.i > j
}

func (s *lshwScanner) skipPrefix(p string) bool {
	if !bytes.HasPrefix(s.doc[s.i:], []byte(p)) {
		return false
	}
	s.i += len(p)
	return true
}

// namedOnly: every reference in raw is one of XML's five named
// entities (encoding/xml decides the others).
func namedOnly(raw []byte) bool {
	for {
		k := bytes.IndexByte(raw, '&')
		if k < 0 {
			return true
		}
		_, n := namedEntity(raw[k:])
		if n == 0 {
			return false
		}
		raw = raw[k+n:]
	}
}

// unescaped is raw (namedOnly) with its references replaced.
func unescaped(raw []byte) string { return string(appendUnescaped(nil, raw)) }

// appendUnescaped appends raw (namedOnly) to b, its references replaced.
// To nil it may answer raw itself, its capacity cut so that a later
// append copies it.
func appendUnescaped(b, raw []byte) []byte {
	if bytes.IndexByte(raw, '&') < 0 {
		if b == nil {
			return raw[:len(raw):len(raw)]
		}
		return append(b, raw...)
	}
	for len(raw) > 0 {
		k := bytes.IndexByte(raw, '&')
		if k < 0 {
			b = append(b, raw...)
			break
		}
		b = append(b, raw[:k]...)
		c, n := namedEntity(raw[k:])
		if n == 0 { // not namedOnly: kept as it is
			return append(b, raw[k:]...)
		}
		b = append(b, c)
		raw = raw[k+n:]
	}
	return b
}

// namedEntities are XML's named entities and their characters.
var namedEntities = [...]struct {
	ref string
	c   byte
}{{"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&apos;", '\''}, {"&quot;", '"'}}

// namedEntity is the character and length of the named entity b starts
// with, length 0 when it starts with none.
func namedEntity(b []byte) (byte, int) {
	for _, e := range namedEntities {
		if bytes.HasPrefix(b, []byte(e.ref)) {
			return e.c, len(e.ref)
		}
	}
	return 0, 0
}
