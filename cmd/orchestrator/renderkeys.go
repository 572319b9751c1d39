package main

import (
	"reflect"
	"strings"

	yamlv3 "gopkg.in/yaml.v3"
)

// The design's JSON names are the API's (snake_case); its YAML names are
// the site files' (camelCase: the yaml tags). render -o yaml prints a node
// as the site files spell it: walking the document along its Go type,
// each struct field's JSON name becomes its YAML name. A map's keys
// (interface names, labels...) are data and stay as they are.

// yamlField is a struct field as the JSON document names it.
type yamlField struct {
	name string // its YAML name ("" : the JSON one)
	typ  reflect.Type
}

// jsonFields are t's fields by JSON name, embedded structs' included (JSON
// inlines them).
func jsonFields(t reflect.Type, out map[string]yamlField) {
	for i := range t.NumField() {
		f := t.Field(i)
		j, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		y, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case j == "-" || !f.IsExported() && !f.Anonymous:
		case f.Anonymous && j == "" && ft.Kind() == reflect.Struct:
			jsonFields(ft, out)
		case j == "":
			out[f.Name] = yamlField{name: y, typ: f.Type}
		default:
			if y == "-" {
				y = ""
			}
			out[j] = yamlField{name: y, typ: f.Type}
		}
	}
}

// yamlKeys renames n's struct field names (n is t's JSON document as a
// YAML tree) to their YAML names.
func yamlKeys(n *yamlv3.Node, t reflect.Type) {
	if n.Kind == yamlv3.DocumentNode {
		for _, c := range n.Content {
			yamlKeys(c, t)
		}
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yamlv3.MappingNode:
		fields := map[string]yamlField{}
		jsonFields(t, fields)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if f, ok := fields[n.Content[i].Value]; ok {
				if f.name != "" {
					n.Content[i].Value = f.name
				}
				yamlKeys(n.Content[i+1], f.typ)
			}
		}
	case t.Kind() == reflect.Map && n.Kind == yamlv3.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			yamlKeys(n.Content[i], t.Elem())
		}
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == yamlv3.SequenceNode:
		for _, c := range n.Content {
			yamlKeys(c, t.Elem())
		}
	}
}
