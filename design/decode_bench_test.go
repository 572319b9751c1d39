package design_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/slipway-dev/slipway/design"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/internal/gensite"
)

// benchRevisionNodes is the size of the generated design the decode
// benchmark reads (as bench-scale's 2,000-node runs).
const benchRevisionNodes = 2000

var (
	benchRevisionOnce sync.Once
	benchRevision     []byte
	benchRevisionErr  error
)

// generatedRevision is the canonical JSON of a generated design of
// benchRevisionNodes nodes (internal/gensite), as serve stores it.
func generatedRevision(b *testing.B) []byte {
	b.Helper()
	benchRevisionOnce.Do(func() {
		dir := b.TempDir()
		if _, err := gensite.Write(dir, gensite.Options{Nodes: benchRevisionNodes}); err != nil {
			benchRevisionErr = err
			return
		}
		res, err := yamlingest.Load(context.Background(), []string{dir})
		if err != nil {
			benchRevisionErr = err
			return
		}
		d, fs := design.Build(res.Sources)
		if fs.HasErrors() {
			benchRevisionErr = fmt.Errorf("generated site is invalid: %v", fs)
			return
		}
		benchRevision, _, benchRevisionErr = d.Canonical()
	})
	if benchRevisionErr != nil {
		b.Fatal(benchRevisionErr)
	}
	return benchRevision
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkDecodeRevision decodes a generated 2,000-node revision as
// serve does at start (DecodeShared; own: DecodeRevision) and reports, per node, the bytes
// allocated, the allocations and the bytes the decoded design keeps
// (held/node: what a running engine holds for the whole run).
func BenchmarkDecodeRevision(b *testing.B) {
	for _, c := range []struct {
		name   string
		decode func([]byte) (*design.Design, error)
	}{{"own", design.DecodeRevision}, {"shared", design.DecodeShared}} {
		b.Run(c.name, func(b *testing.B) { benchDecode(b, c.decode) })
	}
}

func benchDecode(b *testing.B, decode func([]byte) (*design.Design, error)) {
	body := generatedRevision(b)
	b.ReportAllocs()
	var held uint64
	for b.Loop() {
		before := heapInUse()
		d, err := decode(body)
		if err != nil {
			b.Fatal(err)
		}
		if after := heapInUse(); after > before {
			held = max(held, after-before)
		}
		runtime.KeepAlive(d)
	}
	b.ReportMetric(float64(held)/benchRevisionNodes, "held-B/node")
	b.ReportMetric(float64(len(body))/benchRevisionNodes, "json-B/node")
}
