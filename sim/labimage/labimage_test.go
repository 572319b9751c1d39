package labimage

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// The content does not depend on how it is read: one byte at a time and
// in big reads give the same bytes (the example design pins the SHA-256).
func TestContentIndependentOfReadSizes(t *testing.T) {
	const size = 100_003
	big, err := io.ReadAll(Reader("gpu-golden", "amd64/generic", size))
	if err != nil {
		t.Fatal(err)
	}
	small, err := io.ReadAll(iotest.OneByteReader(Reader("gpu-golden", "amd64/generic", size)))
	if err != nil {
		t.Fatal(err)
	}
	if len(big) != size || !bytes.Equal(big, small) {
		t.Fatalf("reads differ: %d and %d bytes, equal %v", len(big), len(small), bytes.Equal(big, small))
	}
	if !strings.HasPrefix(string(big), "SLIPWAY-LAB-IMAGE name=gpu-golden arch=amd64/generic size=100003\n") {
		t.Fatalf("header: %q", big[:64])
	}
	other, _ := io.ReadAll(Reader("gpu-other", "amd64/generic", size))
	if bytes.Equal(big[100:], other[100:]) {
		t.Fatal("two images' padding is the same")
	}
}

// The example design's gpu-golden image has the SHA-256 its Image pins
// (examples/site-yaml/images.yaml), and reads of sizes that cut the
// generator's words and its stack buffer anywhere give the same bytes.
func TestExampleImagePinned(t *testing.T) {
	const size = 12582912
	if got := SHA256("gpu-golden", "amd64/generic", size); got != "daf26e2ff9e81e4fd39ff7668a0cfadd7339c5ab4c345019bce81580af67d155" {
		t.Fatalf("gpu-golden's SHA-256 is %s, not the example's", got)
	}
	want, err := io.ReadAll(io.LimitReader(Reader("gpu-golden", "amd64/generic", size), 64<<10))
	if err != nil {
		t.Fatal(err)
	}
	r := Reader("gpu-golden", "amd64/generic", size)
	var got []byte
	for i := 0; len(got) < len(want); i++ {
		b := make([]byte, min([]int{1, 3, 4096, 7, 8, 4099, 9000, 16}[i%8], len(want)-len(got)))
		if _, err := io.ReadFull(r, b); err != nil {
			t.Fatal(err)
		}
		got = append(got, b...)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("reads of mixed sizes differ from one big read")
	}
}

func TestWriteMatchesSHA256(t *testing.T) {
	const size = 3<<20 + 5
	want := SHA256("x", "arm64/generic", size)
	// Made and kept, written again from what was kept, and streamed (an
	// image larger than maxKeptSize).
	for i, write := range []func(string, string, string, int64) (string, error){Write, Write, writeStream} {
		path := filepath.Join(t.TempDir(), "img")
		sum, err := write(path, "x", "arm64/generic", size)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got := sha256.Sum256(b)
		if hex.EncodeToString(got[:]) != sum || sum != want || len(b) != size {
			t.Fatalf("write %d: its sum %s, the file's %x, SHA256 %s, %d bytes", i, sum, got, want, len(b))
		}
	}
	if _, err := Write(filepath.Join(t.TempDir(), "img"), "x", "amd64", 0); err == nil {
		t.Fatal("a zero size was accepted")
	}
}

// BenchmarkWrite writes the example design's 12 MiB image (every lab
// start of the example site writes it).
func BenchmarkWrite(b *testing.B) {
	path := filepath.Join(b.TempDir(), "img")
	b.SetBytes(12 << 20)
	for b.Loop() {
		if _, err := Write(path, "gpu-golden", "amd64/generic", 12<<20); err != nil {
			b.Fatal(err)
		}
	}
}
