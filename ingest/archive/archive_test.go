package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
)

// entry is one tar entry to write; body is written as is (regular files
// only: other types get size 0).
type entry struct {
	name string
	body string
	typ  byte
}

func tarGz(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		size := int64(len(e.body))
		if typ != tar.TypeReg {
			size = 0
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Size: size, Mode: 0o644, Linkname: "/etc/passwd"}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zeros writes a tar.gz holding one file of n zero bytes without
// keeping them in memory.
func zeros(t testing.TB, name string, n int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: n, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(tw, zeroReader{}, n); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestExtractRoots(t *testing.T) {
	dir := t.TempDir()
	body := tarGz(t, entry{name: "01-site/b.yaml", body: "kind: B\n"}, entry{name: "00-global/a.yml", body: "kind: A\n"},
		entry{name: "00-global/README.md", body: "not design"}, entry{name: "00-global/sub/", typ: tar.TypeDir},
		entry{name: "00-global/link.yaml", typ: tar.TypeSymlink})
	u, err := Extract(bytes.NewReader(body), dir, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "00-global"), filepath.Join(dir, "01-site")}
	if strings.Join(u.Roots, ",") != strings.Join(want, ",") || u.Files != 3 {
		t.Errorf("roots %v, %d files; want %v and 3", u.Roots, u.Files, want)
	}
	for _, p := range []string{"00-global/README.md", "00-global/link.yaml"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !os.IsNotExist(err) {
			t.Errorf("%s was written (%v): only .yaml and .yml regular files are", p, err)
		}
	}
	res, _, err := Load(t.Context(), bytes.NewReader(body), t.TempDir(), Limits{})
	if err != nil || len(res.Sources) != 2 || res.Sources[0].Doc.Text("kind") != "A" {
		t.Fatalf("load: %v %+v", err, res)
	}
}

func TestExtractRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		body []byte
		kind error
		msg  string
	}{
		{"not gzip", []byte("plain text"), ErrMalformed, "not gzip"},
		{"damaged tar", gzipOf(t, []byte(strings.Repeat("x", 1024))), ErrMalformed, "damaged"},
		{"escape", tarGz(t, entry{name: "../x.yaml", body: "a: 1\n"}), ErrMalformed, "leaves the archive"},
		{"absolute", tarGz(t, entry{name: "/etc/x.yaml", body: "a: 1\n"}), ErrMalformed, "leaves the archive"},
		{"no yaml", tarGz(t, entry{name: "a.txt", body: "a"}), ErrMalformed, "no .yaml"},
		{"too many files", tarGz(t, entry{name: "a.yaml", body: "a: 1\n"}, entry{name: "b.yaml", body: "b: 1\n"}, entry{name: "c.yaml", body: "c: 1\n"}), ErrTooManyFiles, "too many files: it holds more than 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Extract(bytes.NewReader(tc.body), t.TempDir(), Limits{Files: 2})
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want %v containing %q", err, tc.kind, tc.msg)
			}
		})
	}
}

func gzipOf(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestExtractBombs: decompression stops one byte past a limit, whatever
// the headers say: 64 MiB of zeros (64 KiB compressed) in one file, in a
// file that is not YAML, or over many files, and a stream of nothing but
// headers.
func TestExtractBombs(t *testing.T) {
	lim := Limits{Limits: yamlingest.Limits{FileBytes: 1 << 20, DesignBytes: 3 << 20}, Files: 100}
	var many []entry
	for i := range 5 {
		many = append(many, entry{name: "r/f" + string(rune('a'+i)) + ".yaml", body: "# " + strings.Repeat("x", 900<<10) + "\n"})
	}
	var headers []entry
	for i := 0; i < 10000; i++ { // 5 MiB of headers
		headers = append(headers, entry{name: "d" + strings.Repeat("x", i%50) + "/", typ: tar.TypeDir})
	}
	for _, tc := range []struct {
		name      string
		body      []byte
		maxRead   int64
		design    bool
		streamCap bool
	}{
		{"one file", zeros(t, "r/a.yaml", 64<<20), lim.FileBytes + 1, false, false},
		{"not yaml", zeros(t, "r/a.iso", 64<<20), lim.FileBytes + 1, false, false},
		{"many files", tarGz(t, many...), lim.DesignBytes + 1, true, false},
		{"headers only", tarGz(t, headers...), 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := Extract(bytes.NewReader(tc.body), t.TempDir(), lim)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			if u.Bytes > tc.maxRead {
				t.Errorf("read %d bytes of content, want at most %d", u.Bytes, tc.maxRead)
			}
			var le *yamlingest.LimitError
			switch {
			case tc.streamCap:
				if !strings.Contains(err.Error(), "tar stream") {
					t.Errorf("err = %v, want the stream's limit", err)
				}
			case !errors.As(err, &le) || le.Design != tc.design:
				t.Errorf("err = %v, want a LimitError (design %v)", err, tc.design)
			}
		})
	}
}
