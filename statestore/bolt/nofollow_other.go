//go:build !unix

package bolt

// noFollow: no such flag here (no Unix owners either: see localtrust).
const noFollow = 0
