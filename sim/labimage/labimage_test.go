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

func TestWriteMatchesSHA256(t *testing.T) {
	path := filepath.Join(t.TempDir(), "img")
	sum, err := Write(path, "x", "arm64/generic", 3<<20+5)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.Sum256(b)
	if hex.EncodeToString(got[:]) != sum || sum != SHA256("x", "arm64/generic", 3<<20+5) || len(b) != 3<<20+5 {
		t.Fatalf("Write's sum %s, file's %x, SHA256 %s, %d bytes", sum, got, SHA256("x", "arm64/generic", 3<<20+5), len(b))
	}
	if _, err := Write(path, "x", "amd64", 0); err == nil {
		t.Fatal("a zero size was accepted")
	}
}
