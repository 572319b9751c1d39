// Package yaml reads site designs written in YAML: files and directories of
// multi-document YAML become design Sources whose every value remembers its
// file and line. It is the only place in Slipway that parses site YAML.
package yaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/slipway-dev/slipway/design"
	yamlv3 "gopkg.in/yaml.v3"
)

// maxValues bounds the values one document may hold, aliases expanded.
// The largest document of a generated 10,000-node site holds about 900.
const maxValues = 1 << 17

// docEstimate bounds a document's estimated values before it is parsed:
// twice maxValues, as the estimate counts the words of comments and block
// text too.
const docEstimate = 2 * maxValues

var lineRE = regexp.MustCompile(`line (\d+)`)

// ParseFile parses the YAML documents in data. name is the file name used
// in positions; root is the index of the design root the file belongs to.
// Malformed YAML becomes a finding, never a panic or an error, and so does
// a file denser in values than its size allows (see budget.go), before
// anything is built from it.
func ParseFile(name string, data []byte, root int) ([]design.Source, []design.Finding) {
	budget := valueBudget(len(data))
	if line, perDoc := overBudget(data, budget, docEstimate); line > 0 {
		return nil, []design.Finding{densityFinding(name, line, len(data), budget, perDoc)}
	}
	var out []design.Source
	var findings []design.Finding
	left := budget * expansionFactor // values the file may still expand to
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	for {
		var doc yamlv3.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			findings = append(findings, syntaxFinding(name, err))
			break // the parser cannot resynchronise after a syntax error
		}
		if len(doc.Content) == 0 {
			continue
		}
		body := doc.Content[0]
		if body.Kind == yamlv3.ScalarNode && body.Tag == "!!null" {
			continue // an empty document, e.g. after a trailing ---
		}
		c := newConverter(name, min(maxValues, left))
		v := c.convert(body, 0)
		left -= c.count
		if c.err != "" {
			findings = append(findings, design.Finding{Rule: design.RuleSchema, Severity: design.SeverityError,
				File: name, Line: c.errLine, Message: c.err})
			if left <= 0 {
				break // the file's budget is spent: the rest of it is not read
			}
			continue
		}
		out = append(out, design.Source{Root: root, Doc: v, Pos: design.Pos{File: name, Line: body.Line}})
	}
	return out, findings
}

func densityFinding(name string, line, size, budget int, perDoc bool) design.Finding {
	msg := fmt.Sprintf("too many YAML values for the file's size: a file may hold one value per %d bytes (%d for these %d bytes) "+
		"and this one passes that here; nothing in it was read. Designs hold one value per 5 to 25 bytes: check what wrote this file",
		bytesPerValue, budget, size)
	if perDoc {
		msg = fmt.Sprintf("the document holds more than %d YAML values by here (estimated: words in comments and block text count too); "+
			"nothing in the file was read. Split it into several documents (a Slipway object is a few hundred values)", docEstimate)
	}
	return design.Finding{Rule: design.RuleSchema, Severity: design.SeverityError, File: name, Line: line, Message: msg}
}

// parserProblems are the yaml.v3 parser's (not scanner's) messages: for
// those yaml.v3 prints a 0-based line number (and none for the first line),
// so one is added.
var parserProblems = []string{
	"did not find expected <", "did not find expected node content", "did not find expected key",
	"did not find expected '-' indicator", "did not find expected ',' or", "found undefined tag handle",
	"found incompatible YAML document", "found duplicate %", "did not find expected <document start>",
}

func syntaxFinding(name string, err error) design.Finding {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := lineRE.FindStringSubmatch(msg); m != nil && strings.HasPrefix(msg, m[0]) {
		line, _ = strconv.Atoi(m[1])
		msg = strings.TrimSpace(strings.Replace(msg, m[0]+":", "", 1))
	}
	for _, p := range parserProblems {
		if strings.HasPrefix(msg, p) {
			line++
			break
		}
	}
	return design.Finding{Rule: design.RuleSchema, Severity: design.SeverityError, File: name, Line: line,
		Message: "malformed YAML: " + msg}
}

// converter turns yaml.v3 nodes into design Values. An alias shares its
// anchor's Value but counts as many values as the anchor expands to, so
// that count bounds what later stages walk.
type converter struct {
	file    string
	anchors map[*yamlv3.Node]anchored
	busy    map[*yamlv3.Node]bool
	count   int // values so far, aliases expanded
	limit   int
	err     string
	errLine int
}

// anchored is an anchor's Value and the number of values it expands to.
type anchored struct {
	v    *design.Value
	size int
}

func newConverter(file string, limit int) *converter {
	return &converter{file: file, anchors: map[*yamlv3.Node]anchored{}, limit: limit}
}

// failed stands for every value converted after a failure: the document
// is dropped, so nothing more is allocated for it.
var failed = design.NewNull(design.Pos{})

func (c *converter) fail(n *yamlv3.Node, format string, args ...any) *design.Value {
	if c.err == "" {
		c.err, c.errLine = fmt.Sprintf(format, args...), n.Line
	}
	return failed
}

func (c *converter) pos(n *yamlv3.Node) design.Pos { return design.Pos{File: c.file, Line: n.Line} }

func (c *converter) convert(n *yamlv3.Node, depth int) *design.Value {
	if c.err != "" {
		return failed
	}
	c.count++
	if depth > 200 {
		return c.fail(n, "the document nests deeper than 200 levels: flatten it")
	}
	if c.count > c.limit {
		return c.tooMany(n)
	}
	switch n.Kind {
	case yamlv3.AliasNode:
		return c.alias(n, depth)
	case yamlv3.ScalarNode:
		return c.anchor(n, func() *design.Value { return c.scalar(n) })
	case yamlv3.SequenceNode:
		if t := n.ShortTag(); t != "!!seq" {
			return c.fail(n, "unsupported YAML tag %s on a list: remove it", n.Tag)
		}
		return c.anchor(n, func() *design.Value { return c.list(n, depth) })
	case yamlv3.MappingNode:
		if t := n.ShortTag(); t != "!!map" {
			return c.fail(n, "unsupported YAML tag %s on a mapping: remove it", n.Tag)
		}
		return c.anchor(n, func() *design.Value { return c.mapping(n, depth) })
	}
	return c.fail(n, "unsupported YAML node")
}

func (c *converter) tooMany(n *yamlv3.Node) *design.Value {
	return c.fail(n, "the document holds more than %d values here, aliases expanded (a document may hold %d, "+
		"and a file %d times one value per %d bytes of it): split it or use fewer aliases", c.limit, maxValues, expansionFactor, bytesPerValue)
}

// alias returns the anchor's Value, counting its expansion again.
func (c *converter) alias(n *yamlv3.Node, depth int) *design.Value {
	if a, ok := c.anchors[n.Alias]; ok {
		if c.count += a.size - 1; c.count > c.limit {
			return c.tooMany(n)
		}
		return a.v
	}
	if c.busy[n.Alias] {
		return c.fail(n, "alias *%s refers to itself", n.Value)
	}
	if c.busy == nil {
		c.busy = map[*yamlv3.Node]bool{}
	}
	c.busy[n.Alias] = true
	c.count-- // the anchor counts itself
	v := c.convert(n.Alias, depth+1)
	delete(c.busy, n.Alias)
	return v
}

// anchor converts n and, when it carries an anchor, remembers its Value
// and size for the aliases that refer to it.
func (c *converter) anchor(n *yamlv3.Node, conv func() *design.Value) *design.Value {
	before := c.count
	v := conv()
	if n.Anchor != "" && c.err == "" {
		c.anchors[n] = anchored{v: v, size: c.count - before + 1}
	}
	return v
}

func (c *converter) list(n *yamlv3.Node, depth int) *design.Value {
	items := make([]*design.Value, 0, len(n.Content))
	for _, it := range n.Content {
		items = append(items, c.convert(it, depth+1))
	}
	return design.NewList(c.pos(n), items)
}

func (c *converter) scalar(n *yamlv3.Node) *design.Value {
	tag := n.ShortTag()
	switch tag {
	case design.TagNull:
		return design.NewNull(c.pos(n))
	case design.TagStr, design.TagInt, design.TagFloat, design.TagBool:
		return design.NewScalar(tag, n.Value, c.pos(n))
	case "!!timestamp", "!!binary":
		return design.NewScalar(design.TagStr, n.Value, c.pos(n))
	}
	// A local tag on an empty scalar is a list removal written without
	// quotes: `- !gpu` means "!gpu" (and `- !*` means "!*").
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") && n.Value == "" {
		return design.NewScalar(design.TagStr, n.Tag, c.pos(n))
	}
	return c.fail(n, "unsupported YAML tag %s", n.Tag)
}

func (c *converter) mapping(n *yamlv3.Node, depth int) *design.Value {
	entries := make([]design.Entry, 0, len(n.Content)/2)
	index := make(map[string]int, len(n.Content)/2)
	put := func(e design.Entry, explicit bool) {
		if i, dup := index[e.Key]; dup {
			if explicit {
				entries[i] = e
			}
			return
		}
		index[e.Key] = len(entries)
		entries = append(entries, e)
	}
	var merges []*design.Value
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yamlv3.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, c.convert(val, depth+1))
			continue
		}
		if k.Kind != yamlv3.ScalarNode {
			return c.fail(k, "mapping keys must be plain strings")
		}
		if _, dup := index[k.Value]; dup {
			return c.fail(k, "key %q appears twice in this mapping", k.Value)
		}
		put(design.Entry{Key: k.Value, KeyPos: c.pos(k), Value: c.convert(val, depth+1)}, true)
	}
	// YAML merge keys (<<: *anchor) fill in keys the mapping does not set.
	for _, m := range merges {
		srcs := []*design.Value{m}
		if m.Kind == design.ListValue {
			srcs = m.Items
		}
		for _, s := range srcs {
			if s.Kind != design.MapValue {
				return c.fail(n, "a merge key (<<) needs a mapping or a list of mappings")
			}
			for _, e := range s.Entries {
				put(e, false)
			}
		}
	}
	return design.NewMap(c.pos(n), entries)
}
