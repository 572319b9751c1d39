package yaml

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/hostileyaml"
	"github.com/slipway-dev/slipway/internal/testtool"
)

// TestParseFileHostileShapes: one MiB of each hostile shape costs at most
// 20 times its size, and is refused with a finding at a line of the file
// before a tree is built; but long keys (sparse in values) and dense keys
// (the densest input the budget lets through, two values per six bytes)
// are read, the latter at about 100 bytes allocated per byte. Before the
// value budget, a 1 MiB flow list of zeros was accepted at about 186.
func TestParseFileHostileShapes(t *testing.T) {
	for _, shape := range hostileyaml.Shapes() {
		t.Run(shape, func(t *testing.T) {
			data, err := hostileyaml.Generate(shape, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			var srcs []design.Source
			var fs []design.Finding
			n := testtool.Allocated(func() { srcs, fs = ParseFile("h.yaml", data, 0) })
			want := map[string]float64{"dense-keys": 120}[shape]
			if ratio := float64(n) / float64(len(data)); ratio > max(want, 20) {
				t.Errorf("allocated %d bytes for %d, %.0f times the input (want at most %.0f)", n, len(data), ratio, max(want, 20))
			}
			if shape == "long-keys" || shape == "dense-keys" {
				if len(fs) != 0 || len(srcs) == 0 {
					t.Errorf("%d documents, findings %v; want the documents", len(srcs), fs)
				}
				return
			}
			if len(fs) != 1 || len(srcs) != 0 {
				t.Fatalf("%d documents, findings %v; want one finding and nothing read", len(srcs), fs)
			}
			if f := fs[0]; f.File != "h.yaml" || f.Line < 1 || f.Rule != design.RuleSchema || !strings.Contains(f.Message, "values") {
				t.Errorf("finding %+v: want a schema error at h.yaml:LINE about values", f)
			}
		})
	}
}

// TestParseFileDensity: the finding names the line where the budget ran
// out; a file as dense as a real one is read.
func TestParseFileDensity(t *testing.T) {
	var b strings.Builder
	b.WriteString("a: 1\nb: 2\n")
	for i := 0; b.Len() < 4096; i++ {
		fmt.Fprintf(&b, "c%d: [1,2,3,4,5,6,7,8,9,0,1,2,3,4,5,6,7,8,9,0]\n", i)
	}
	_, fs := ParseFile("d.yaml", []byte(b.String()), 0)
	if len(fs) != 1 || fs[0].Line < 3 || !strings.Contains(fs[0].Message, "one value per 3 bytes") {
		t.Fatalf("findings %v: want one at a line of the lists", fs)
	}
	ex, err := os.ReadFile("../../examples/site-yaml/networks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if srcs, fs := ParseFile("networks.yaml", ex, 0); len(fs) != 0 || len(srcs) == 0 {
		t.Fatalf("the example's networks: %d documents, findings %v", len(srcs), fs)
	}
}

// TestParseFileAliasExpansion: aliases count as the values they expand to
// (the documented 2^17 per document). A billion-laughs document used to
// be accepted because aliases share their anchor's Value; later stages
// walk such a tree once per reference, and a 22 KB host profile of 1,000
// devices x 1,000 partitions made validate take 3 s and 900 MB.
func TestParseFileAliasExpansion(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	srcs, fs := ParseFile("bomb.yaml", []byte(b.String()), 0)
	if len(srcs) != 0 || len(fs) != 1 {
		t.Fatalf("%d documents, findings %v: want the bomb refused", len(srcs), fs)
	}
	// a2 expands to over 1,100 values: past the file's budget of
	// 4 x (570 bytes / 3 + 64) = 1,016 on line 3.
	if f := fs[0]; f.File != "bomb.yaml" || f.Line != 3 || !strings.Contains(f.Message, "aliases expanded") {
		t.Errorf("finding %+v: want bomb.yaml:3 naming the alias expansion", f)
	}
}

// TestParseFileTagsOnCollections: a tag on a mapping or a list is refused
// like a tag on a scalar; it used to be dropped without a word.
func TestParseFileTagsOnCollections(t *testing.T) {
	for _, tc := range []struct {
		name, src, msg string
		line           int
	}{
		{"mapping", "kind: Network\nspec: !net\n  cidr: 10.0.0.0/24\n", "unsupported YAML tag !net on a mapping", 2},
		{"flow mapping", "kind: Network\nspec: !net {cidr: 10.0.0.0/24}\n", "unsupported YAML tag !net on a mapping", 2},
		{"list", "tags: !t [a, b]\n", "unsupported YAML tag !t on a list", 1},
		{"document", "--- !doc\nkind: Network\n", "unsupported YAML tag !doc on a mapping", 1},
		{"other standard tag", "spec: !!set {a: null}\n", "unsupported YAML tag !!set on a mapping", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, fs := ParseFile("t.yaml", []byte(tc.src), 0)
			if len(fs) != 1 || fs[0].Line != tc.line || fs[0].File != "t.yaml" || !strings.Contains(fs[0].Message, tc.msg) {
				t.Fatalf("findings %v: want one at t.yaml:%d containing %q", fs, tc.line, tc.msg)
			}
		})
	}
	srcs, fs := ParseFile("ok.yaml", []byte("a: !!map {b: !!seq [1]}\n"), 0)
	if len(fs) != 0 || len(srcs) != 1 {
		t.Fatalf("!!map and !!seq: findings %v", fs)
	}
}

// TestLoadLimits: a file or a design over its limit is an error naming
// the file, found before reading when the size says so and while reading
// when it does not (a pipe, a growing file).
func TestLoadLimits(t *testing.T) {
	dir := t.TempDir()
	for name, size := range map[string]int{"a.yaml": 600, "b.yaml": 600} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x: "+strings.Repeat("y", size-4)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var le *LimitError
	_, err := LoadLimited(t.Context(), []string{dir}, Limits{FileBytes: 500})
	if !errors.As(err, &le) || le.Design || le.Limit != 500 || filepath.Base(le.File) != "a.yaml" {
		t.Errorf("file limit: %v", err)
	}
	_, err = LoadLimited(t.Context(), []string{dir}, Limits{DesignBytes: 1000})
	if !errors.As(err, &le) || !le.Design || filepath.Base(le.File) != "b.yaml" {
		t.Errorf("design limit: %v", err)
	}
	if _, err := LoadLimited(t.Context(), []string{dir}, Limits{FileBytes: 600, DesignBytes: 1200}); err != nil {
		t.Errorf("at the limits: %v", err)
	}

	pipeDir := t.TempDir()
	fifo := filepath.Join(pipeDir, "p.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("named pipes are needed (CI is set): %v", err)
		}
		t.Skipf("no named pipes here: %v", err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		chunk := []byte(strings.Repeat("# grows\n", 128))
		for i := 0; i < 1<<14; i++ { // 16 MiB unless the reader stops
			if _, err := f.Write(chunk); err != nil {
				return
			}
		}
	}()
	_, err = LoadLimited(t.Context(), []string{pipeDir}, Limits{FileBytes: 4096})
	if !errors.As(err, &le) || le.Design || le.File != fifo {
		t.Errorf("a pipe (size 0) over the file limit: %v", err)
	}
}
