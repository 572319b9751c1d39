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

// maxValues bounds the values one document may expand to through aliases.
const maxValues = 1 << 20

var lineRE = regexp.MustCompile(`line (\d+)`)

// ParseFile parses the YAML documents in data. name is the file name used
// in positions; root is the index of the design root the file belongs to.
// Malformed YAML becomes a finding, never a panic or an error.
func ParseFile(name string, data []byte, root int) ([]design.Source, []design.Finding) {
	var out []design.Source
	var findings []design.Finding
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
		c := &converter{file: name, anchors: map[*yamlv3.Node]*design.Value{}}
		if len(doc.Content) == 0 {
			continue
		}
		body := doc.Content[0]
		if body.Kind == yamlv3.ScalarNode && body.Tag == "!!null" {
			continue // an empty document, e.g. after a trailing ---
		}
		v := c.convert(body, 0)
		if c.err != "" {
			findings = append(findings, design.Finding{Rule: design.RuleSchema, Severity: design.SeverityError,
				File: name, Line: c.errLine, Message: c.err})
			continue
		}
		out = append(out, design.Source{Root: root, Doc: v, Pos: design.Pos{File: name, Line: body.Line}})
	}
	return out, findings
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

// converter turns yaml.v3 nodes into design Values.
type converter struct {
	file    string
	anchors map[*yamlv3.Node]*design.Value // aliases share their anchor's Value
	busy    map[*yamlv3.Node]bool
	count   int
	err     string
	errLine int
}

func (c *converter) fail(n *yamlv3.Node, format string, args ...any) *design.Value {
	if c.err == "" {
		c.err, c.errLine = fmt.Sprintf(format, args...), n.Line
	}
	return design.NewNull(c.pos(n))
}

func (c *converter) pos(n *yamlv3.Node) design.Pos { return design.Pos{File: c.file, Line: n.Line} }

func (c *converter) convert(n *yamlv3.Node, depth int) *design.Value {
	c.count++
	if c.count > maxValues || depth > 200 {
		return c.fail(n, "document too large or too deeply nested")
	}
	switch n.Kind {
	case yamlv3.AliasNode:
		if v, ok := c.anchors[n.Alias]; ok {
			return v
		}
		if c.busy[n.Alias] {
			return c.fail(n, "alias *%s refers to itself", n.Value)
		}
		if c.busy == nil {
			c.busy = map[*yamlv3.Node]bool{}
		}
		c.busy[n.Alias] = true
		v := c.convert(n.Alias, depth+1)
		delete(c.busy, n.Alias)
		return v
	case yamlv3.ScalarNode:
		return c.remember(n, c.scalar(n))
	case yamlv3.SequenceNode:
		items := make([]*design.Value, 0, len(n.Content))
		for _, it := range n.Content {
			items = append(items, c.convert(it, depth+1))
		}
		return c.remember(n, design.NewList(c.pos(n), items))
	case yamlv3.MappingNode:
		return c.remember(n, c.mapping(n, depth))
	}
	return c.fail(n, "unsupported YAML node")
}

func (c *converter) remember(n *yamlv3.Node, v *design.Value) *design.Value {
	if n.Anchor != "" {
		c.anchors[n] = v
	}
	return v
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
