package main

import (
	"context"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/internal/gensite"
	yamlv3 "gopkg.in/yaml.v3"
)

var (
	siteOnce sync.Once
	siteDir  string
	siteErr  error
)

// site10k writes the 10,000-node synthetic site once per test binary.
func site10k(b *testing.B) string {
	siteOnce.Do(func() {
		siteDir, siteErr = os.MkdirTemp("", "slipway-bench-")
		if siteErr == nil {
			_, siteErr = gensite.Write(siteDir, gensite.Options{Nodes: 10000})
		}
	})
	if siteErr != nil {
		b.Fatal(siteErr)
	}
	return siteDir
}

// bareDecode decodes every document of every file into yaml.v3 nodes, one
// file after the other: the floor any YAML-based validation stands on.
func bareDecode(b *testing.B, files []string) {
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			b.Fatal(err)
		}
		dec := yamlv3.NewDecoder(fh)
		for {
			var n yamlv3.Node
			if err := dec.Decode(&n); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
		fh.Close()
	}
}

// BenchmarkValidate10k runs 'orchestrator validate' in-process on a
// 10,000-node site and reports, beside ns/op, the time of a bare sequential
// yaml.v3 decode of the same files and the ratio of the two. The target is
// a ratio of at most 3 (and, for the whole process, 2 s and 512 MiB: see
// 'make bench', which measures the binary with /usr/bin/time).
func BenchmarkValidate10k(b *testing.B) {
	dir := site10k(b)
	files, err := yamlingest.Files(dir)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	bareDecode(b, files)
	decode := time.Since(start)
	b.ResetTimer()
	for b.Loop() {
		if code := run(context.Background(), []string{"validate", dir}, io.Discard, io.Discard); code != 0 {
			b.Fatalf("validate exit %d", code)
		}
	}
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(decode.Milliseconds()), "decode-ms")
	b.ReportMetric(float64(per.Milliseconds()), "validate-ms")
	b.ReportMetric(float64(per)/float64(decode), "x-decode")
}

// BenchmarkBareDecode10k is the floor on its own.
func BenchmarkBareDecode10k(b *testing.B) {
	files, err := yamlingest.Files(site10k(b))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		bareDecode(b, files)
	}
}
