package main

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"
)

// TestHeapPeakProfile: serve --heap-profile leaves an in-use heap profile
// that parses, the memory classes at its moment and the goroutines then,
// and the resident set in parts: the state database's map and the
// binary's pages apart.
func TestHeapPeakProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.pprof")
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, nil) // mapped; its meta pages read
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stop, err := startHeapPeakProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	stop() // the last sample: the first is always a new high
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f) // a pprof profile: gzipped protobuf
	if err != nil {
		t.Fatalf("heap profile: %v", err)
	}
	pb, err := io.ReadAll(zr)
	if err != nil || !strings.Contains(string(pb), "inuse_space") {
		t.Fatalf("not an in-use heap profile (%v)", err)
	}
	b, err := os.ReadFile(path + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]uint64
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["/sched/goroutines:goroutines"] == 0 || m["/memory/classes/heap/stacks:bytes"] == 0 || m["/gc/heap/live:bytes"]+m["/memory/classes/heap/objects:bytes"] == 0 {
		t.Fatalf("memory classes: %v", m)
	}
	b, err = os.ReadFile(path + ".rss.json")
	if err != nil {
		t.Fatal(err)
	}
	var rss map[string]uint64
	if err := json.Unmarshal(b, &rss); err != nil || rss["VmRSS_kib"] == 0 || rss["RssAnon_kib"] == 0 {
		t.Fatalf("resident set: %v %s", err, b)
	}
	series, err := os.ReadFile(path + ".series")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(series)), "\n")
	var first map[string]uint64
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || len(lines) != 1 || first["RssFile_kib"] == 0 || first["RssStateDB_kib"] == 0 || first["RssBinary_kib"] == 0 || first["/gc/heap/goal:bytes"] == 0 || first["unix_ms"] == 0 {
		t.Fatalf("series (%d lines): %v %s", len(lines), err, series)
	}
	g, err := os.ReadFile(path + ".goroutines")
	if err != nil || !strings.HasPrefix(string(g), "goroutine profile: total ") {
		t.Fatalf("goroutines: %v %.80q", err, g)
	}
}
