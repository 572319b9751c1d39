package archive

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/slipway-dev/slipway/design"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/internal/hostileyaml"
)

// Fuzz memory bound: an upload may allocate at most allocPerByte times
// what it holds (its YAML once decompressed, or its body when larger)
// plus allocFixed. The example site allocates about 35 bytes per byte
// (load and build) and a generated 10,000-node site about 90.
const (
	allocPerByte = 400
	allocFixed   = 4 << 20
)

// FuzzLoad: the upload path of the control API (archive.Load, then
// design.Build) on any body neither panics nor allocates past the bound.
// mode 0: data is a tar stream, gzipped here; 1: data is one YAML file,
// put in a tar.gz here; 2: data is the body.
func FuzzLoad(f *testing.F) {
	for _, p := range exampleFiles() {
		b, _ := os.ReadFile(p)
		f.Add(uint8(1), b)
	}
	for _, shape := range hostileyaml.Shapes() {
		b, _ := hostileyaml.Generate(shape, 4096)
		f.Add(uint8(1), b)
	}
	f.Add(uint8(0), ungz(f, tarGz(f, entry{name: "a/x.yaml", body: "kind: Network\n"}, entry{name: "../b.yaml", body: "x"})))
	f.Add(uint8(2), tarGz(f, entry{name: "x.yaml", body: "a: [1, 2]\n"}))
	lim := Limits{Limits: yamlingest.Limits{FileBytes: 1 << 20, DesignBytes: 2 << 20}, Files: 64}
	f.Fuzz(func(t *testing.T, mode uint8, data []byte) {
		body := data
		switch mode % 3 {
		case 0:
			body = gzipOf(t, data)
		case 1:
			body = tarGz(t, entry{name: "00-site/f.yaml", body: string(data)})
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var u *Unpacked
		dir := t.TempDir()
		res, u, err := Load(t.Context(), bytes.NewReader(body), dir, lim)
		if err == nil {
			design.Build(res.Sources)
		}
		runtime.ReadMemStats(&after)
		size := int64(len(body))
		if u != nil {
			size = max(size, u.Bytes)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > uint64(allocPerByte*size+allocFixed) {
			t.Fatalf("allocated %d bytes for an upload of %d (%d decompressed): over %d per byte plus %d", n, len(body), size, allocPerByte, allocFixed)
		}
	})
}

func exampleFiles() []string {
	files, _ := filepath.Glob("../../examples/site-yaml/*.yaml")
	return files
}

func ungz(t testing.TB, b []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := out.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
