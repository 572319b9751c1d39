// Package design is Slipway's canonical model of a site: the typed objects of
// the site schema, inheritance resolution, the validation rules, rendering of
// one resolved node and the diff between two designs.
//
// The package is pure: it reads no files and calls no drivers. A consumer
// such as ingest/yaml turns source files into Sources (trees of Values that
// remember their file and line); Build turns Sources into a resolved Design
// and the complete list of Findings.
package design
