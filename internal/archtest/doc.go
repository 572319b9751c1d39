// Package archtest holds the layering check of the module: its tests list
// the packages and their imports with `go list` and hold them against the
// package map of docs/architecture.md (the table of packages and their
// layers, and the order of the layers). It has no code of its own and
// imports nothing of Slipway.
package archtest
