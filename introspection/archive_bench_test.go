package introspection

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkBuildArchive is one node's GET /v1/self/assets archive: three
// actions of four text files each (2 KiB), a unit and a package. Its
// allocations per archive are what the engine's GC pays per node.
func BenchmarkBuildArchive(b *testing.B) {
	var acts []renderedAction
	for a := range 3 {
		ra := renderedAction{Name: fmt.Sprintf("action-%d", a), Signaling: a == 0,
			Units: []string{fmt.Sprintf("act%d.service", a)}, Packages: []string{"chrony"}}
		for f := range 4 {
			ra.Files = append(ra.Files, renderedFile{Path: fmt.Sprintf("/etc/slipway/a%d/f%d.conf", a, f), Mode: 0o644,
				Data: []byte(strings.Repeat(fmt.Sprintf("key%d = value for node r01-cmp01 %d\n", f, a), 64))})
		}
		acts = append(acts, ra)
	}
	at := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	size := 0
	for b.Loop() {
		out, err := buildArchive(acts, "dep-1", at)
		if err != nil {
			b.Fatal(err)
		}
		size = len(out)
	}
	b.ReportMetric(float64(size), "archive-bytes")
}
